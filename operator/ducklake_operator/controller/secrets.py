"""Read catalog credentials from a Kubernetes Secret (in the catalog's namespace).

Values are returned to the caller only: never logged, never put in status or events.
"""

from __future__ import annotations

import base64
import os
from functools import lru_cache

from ..errors import CatalogUnavailable


@lru_cache(maxsize=1)
def _core_api():  # type: ignore[no-untyped-def]
    from kubernetes import client, config

    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config()
    return client.CoreV1Api()


def read_secret(
    name: str, user_key: str, password_key: str, namespace: str | None = None
) -> tuple[str | None, str | None]:
    from kubernetes.client.exceptions import ApiException

    namespace = namespace or os.environ.get("DUCKLAKE_SECRET_NAMESPACE", "default")
    try:
        secret = _core_api().read_namespaced_secret(name, namespace)
    except ApiException as exc:
        raise CatalogUnavailable(f"cannot read Secret {namespace}/{name}: {exc.reason}") from None
    data = secret.data or {}

    def value(key: str) -> str | None:
        return base64.b64decode(data[key]).decode() if key in data else None

    return value(user_key), value(password_key)
