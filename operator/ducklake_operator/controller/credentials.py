"""Catalog credentials from Kubernetes Secrets (in the catalog's namespace).

Each Secret is read once and then kept current by a watch on that one Secret (a
``metadata.name`` field selector), so reconciles do not call the API and a rotated password
is picked up within seconds: the catalogs that use the Secret are told (``on_change``), and
their next connection uses the new value. Values are returned to the caller only: never
logged, never put in status or events; ``scrub`` removes any value handed out from a text.

The operator may be allowed to read only some Secrets (the chart's ``rbac.catalogSecrets``: get
and watch by name, no list). A Secret it may not read is said so to the catalog, naming what
grants it, and is read again every ``FORBIDDEN_RETRY`` seconds: once it is granted, the
catalogs using it are told, as for a change.
"""

from __future__ import annotations

import base64
import json
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
FORBIDDEN_RETRY = 5.0  # seconds between reads of a Secret the operator may not read (or watch)


@dataclass
class _Entry:
    data: dict[str, str] | None  # None: the Secret does not exist (or may not be read)
    resource_version: str | None
    watcher: threading.Thread | None = None
    forbidden: str | None = None  # why the operator may not read it: the API server's refusal


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
        if entry.forbidden is not None:
            raise CredentialsInvalid(entry.forbidden, secret=key)
        return entry.data

    def _fetch(self, key: SecretKey) -> _Entry:
        """The Secret as it is now, by ``get`` (what the chart grants: no list); a refusal
        (403) is an entry saying so, any other failure ``CredentialsInvalid``."""
        from kubernetes.client.exceptions import ApiException

        try:
            secret = self._core_api().read_namespaced_secret(key[1], key[0])
        except ApiException as exc:
            if exc.status == 404:
                return _Entry(None, None)
            if exc.status == 403:
                return _Entry(None, None, forbidden=not_granted(key, refusal(exc)))
            raise CredentialsInvalid(f"cannot read Secret {key[0]}/{key[1]}: {exc.reason}", secret=key) from None
        return _Entry(_decode(secret.data), secret.metadata.resource_version)

    # ------------------------------------------------------------------ watching

    def _watch(self, key: SecretKey) -> None:
        """Follow one Secret until stopped; reconnect with a short pause after errors. One the
        operator may not read is read again every ``FORBIDDEN_RETRY`` seconds instead; one it
        may read but not watch (a Role of the user's granting only get), too."""
        from kubernetes import watch

        namespace, name = key
        said = False  # that it may not be watched: once, not every few seconds
        while not self._stopped.is_set():
            with self._lock:
                version, forbidden = self._entries[key].resource_version, self._entries[key].forbidden
            if forbidden is not None:
                if not self._stopped.wait(FORBIDDEN_RETRY):
                    self._refresh(key)
                continue
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
                status = getattr(exc, "status", None)
                if status == 410:  # too old: read afresh, then watch from there
                    self._refresh(key)
                elif status == 403:  # no (longer a) right to watch it: read it now and then
                    if not said:
                        log.warning(
                            "may not watch Secret %s/%s; reading it every %g s", namespace, name, FORBIDDEN_RETRY
                        )
                        said = True
                    if not self._stopped.wait(FORBIDDEN_RETRY):
                        self._refresh(key)
                else:
                    log.warning("watching Secret %s/%s failed (%s); retrying", namespace, name, type(exc).__name__)
                    time.sleep(1)

    def _refresh(self, key: SecretKey) -> None:
        """Read the Secret afresh (the watcher's way back after a gap); a failure other than a
        refusal leaves what is known and is retried by the watcher's loop."""
        try:
            fresh = self._fetch(key)
        except CredentialsInvalid as exc:
            log.warning("%s; retrying", exc)
            time.sleep(1)
            return
        self._replace(key, fresh)

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
            access_changed = (entry.forbidden is None) != (fresh.forbidden is None)
            changed = entry.data != fresh.data or access_changed
            entry.data, entry.resource_version, entry.forbidden = fresh.data, fresh.resource_version, fresh.forbidden
        if access_changed:
            if fresh.forbidden is None:
                log.info("Secret %s/%s may be read now", *key)
            else:
                log.warning("%s", fresh.forbidden)
        if changed and self._on_change is not None:
            log.info("Secret %s/%s changed; catalogs using it reconnect", *key)
            self._on_change(key)

    def stop(self) -> None:
        self._stopped.set()


def not_granted(key: SecretKey, refusal: str) -> str:
    """What a catalog says of a Secret the operator may not read: the refusal, and what grants it."""
    namespace, name = key
    return (
        f"the operator may not read Secret {namespace}/{name} ({refusal}); grant it with the Helm chart's value "
        f"rbac.catalogSecrets (add {name} to rbac.catalogSecrets.{namespace}), or with a Role allowing get and "
        "watch of it bound to the operator's service account"
    )


def refusal(exc: Any) -> str:
    """The API server's own words for a refused request (its Status message), else the HTTP reason."""
    try:
        message = json.loads(exc.body or "{}").get("message")
    except (ValueError, AttributeError):
        message = None
    return str(message or f"HTTP {exc.status} {exc.reason}")


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
