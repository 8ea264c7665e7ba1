"""Catalog credentials from Kubernetes Secrets (in the catalog's namespace).

Each Secret is read once and then kept current by a watch on that one Secret (a
``metadata.name`` field selector), so reconciles do not call the API and a rotated password
is picked up within seconds: the catalogs that use the Secret are told (``on_change``), and
their next connection uses the new value. Values are returned to the caller only: never
logged, never put in status or events; ``scrub`` removes any value handed out from a text.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..catalog.scrub import scrub
from ..errors import CredentialsInvalid

log = logging.getLogger(__name__)
SecretKey = tuple[str, str]  # (namespace, name)


@dataclass
class _Entry:
    data: dict[str, str] | None  # None: the Secret does not exist
    resource_version: str | None
    watcher: threading.Thread | None = None


class SecretStore:
    def __init__(self, core_api: Callable[[], Any], on_change: Callable[[SecretKey], None] | None = None) -> None:
        self._core_api = core_api
        self._on_change = on_change
        self._entries: dict[SecretKey, _Entry] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._handed_out: set[str] = set()

    # ------------------------------------------------------------------ reading

    def read(self, name: str, user_key: str, password_key: str, namespace: str | None) -> tuple[str | None, str | None]:
        """(user, password) from the Secret; a missing Secret or key is ``CredentialsInvalid``
        naming it. The same signature as the CLI's environment credentials."""
        key = (namespace or "default", name)
        data = self._data(key)
        where = f"Secret {key[0]}/{key[1]}"
        if data is None:
            raise CredentialsInvalid(f"{where} does not exist (it holds the catalog's credentials)", secret=key)
        missing = [k for k in (user_key, password_key) if k not in data]
        if missing:
            has = ", ".join(sorted(data)) or "no keys"
            raise CredentialsInvalid(
                f"{where} has no key {' or '.join(repr(k) for k in missing)} (it has: {has}); add it, or name the "
                "right key in credentialsSecretRef.usernameKey/passwordKey",
                secret=key,
            )
        user, password = data[user_key], data[password_key]
        if len(password) >= 4:  # user names are not secret (and "postgres" is in every URL)
            with self._lock:
                self._handed_out.add(password)
        return user, password

    def value(self, namespace: str, name: str, key: str) -> str:
        """One value of a Secret (for a run started as a child process); handed out, so scrubbed."""
        key_ = (namespace or "default", name)
        data = self._data(key_)
        if data is None or key not in data:
            raise CredentialsInvalid(f"Secret {key_[0]}/{name} has no key {key!r}", secret=key_)
        if len(data[key]) >= 4:
            with self._lock:
                self._handed_out.add(data[key])
        return data[key]

    def scrub(self, text: str) -> str:
        """``text`` without credentials: every password this store handed out, and what
        ``catalog.scrub`` finds (libpq ``password=``, URL passwords)."""
        with self._lock:
            values = list(self._handed_out)
        return scrub(text, values)

    def _data(self, key: SecretKey) -> dict[str, str] | None:
        with self._lock:
            entry = self._entries.get(key)
        if entry is None:
            entry = self._fetch(key)
            with self._lock:
                entry = self._entries.setdefault(key, entry)
                if entry.watcher is None and not self._stopped.is_set():
                    entry.watcher = threading.Thread(target=self._watch, args=(key,), daemon=True, name=f"secret-{key}")
                    entry.watcher.start()
        return entry.data

    def _fetch(self, key: SecretKey) -> _Entry:
        from kubernetes.client.exceptions import ApiException

        try:
            secret = self._core_api().read_namespaced_secret(key[1], key[0])
        except ApiException as exc:
            if exc.status == 404:
                return _Entry(None, None)
            raise CredentialsInvalid(f"cannot read Secret {key[0]}/{key[1]}: {exc.reason}", secret=key) from None
        return _Entry(_decode(secret.data), secret.metadata.resource_version)

    # ------------------------------------------------------------------ watching

    def _watch(self, key: SecretKey) -> None:
        """Follow one Secret until stopped; reconnect with a short pause after errors."""
        from kubernetes import watch

        namespace, name = key
        while not self._stopped.is_set():
            with self._lock:
                version = self._entries[key].resource_version
            try:
                stream = watch.Watch().stream(
                    self._core_api().list_namespaced_secret,
                    namespace,
                    field_selector=f"metadata.name={name}",
                    resource_version=version or "",
                    timeout_seconds=60,
                    allow_watch_bookmarks=True,
                )
                for event in stream:
                    if self._stopped.is_set():
                        return
                    self._apply(key, event["type"], event["raw_object"])
            except Exception as exc:  # noqa: BLE001 - the watch must survive API hiccups
                if self._stopped.is_set():
                    return
                if getattr(exc, "status", None) == 410:  # too old: read afresh, then watch from there
                    self._replace(key, self._fetch(key))
                else:
                    log.warning("watching Secret %s/%s failed (%s); retrying", namespace, name, type(exc).__name__)
                    time.sleep(1)

    def _apply(self, key: SecretKey, kind: str, obj: dict[str, Any]) -> None:
        """One watch event, as the API server sent it (a bookmark carries only a version)."""
        version = obj.get("metadata", {}).get("resourceVersion")
        if kind == "BOOKMARK":
            with self._lock:
                self._entries[key].resource_version = version
            return
        self._replace(key, _Entry(None if kind == "DELETED" else _decode(obj.get("data")), version))

    def _replace(self, key: SecretKey, fresh: _Entry) -> None:
        with self._lock:
            entry = self._entries[key]
            changed = entry.data != fresh.data
            entry.data, entry.resource_version = fresh.data, fresh.resource_version
        if changed and self._on_change is not None:
            log.info("Secret %s/%s changed; catalogs using it reconnect", *key)
            self._on_change(key)

    def stop(self) -> None:
        self._stopped.set()


def _decode(data: dict[str, str] | None) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in (data or {}).items()}


def kubernetes_core_api() -> Any:
    """The CoreV1 API client: in-cluster config in a pod, else the kubeconfig."""
    from kubernetes import client, config

    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config()
    return client.CoreV1Api()
