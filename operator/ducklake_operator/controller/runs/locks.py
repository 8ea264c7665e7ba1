"""Run locks that survive operator restarts: ``coordination.k8s.io`` Leases.

One Lease per table (at most one run per table, whatever its operation) and, when a catalog
limits its concurrent runs, one Lease per slot of the catalog. A Lease's holder is the
DuckLakeJob's uid; the Lease is in the job's namespace and names the job in its
annotations, so ``kubectl get leases`` shows who holds what. A Lease whose holder no longer
runs (its job ended or is gone) is taken over, so a crash never leaves a table locked.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ...api.v1alpha1.names import JOB_ANNOTATION, LOCK_ANNOTATION


@dataclass(frozen=True)
class Holder:
    uid: str
    name: str  # the DuckLakeJob's name, for messages


def lease_name(kind: str, *parts: str) -> str:
    """A DNS-1123 name per lock, stable for the same thing (hashed: names may be long)."""
    digest = hashlib.sha1("/".join(parts).encode()).hexdigest()[:16]
    return f"ducklake-{kind}-{digest}"


def slot_names(prefix: tuple[str, ...], slots: int) -> list[str]:
    """The Leases of ``slots`` slots named after ``prefix``."""
    return [lease_name("slot", *prefix, str(i)) for i in range(slots)]


class Leases:
    """Acquire and release Leases for runs. ``alive(namespace, job name, uid)`` says whether
    a holder still runs (its DuckLakeJob exists, is that uid, and has not ended)."""

    def __init__(self, coordination_api: Callable[[], Any], alive: Callable[[str, str, str], bool]) -> None:
        self._api = coordination_api
        self._alive = alive

    def acquire(self, namespace: str, name: str, holder: Holder, what: str) -> Holder | None:
        """Take the Lease for ``holder``; returns None when taken, else who holds it."""
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        body = client.V1Lease(
            metadata=client.V1ObjectMeta(
                name=name,
                annotations={JOB_ANNOTATION: holder.name, LOCK_ANNOTATION: what},
                labels={"app.kubernetes.io/managed-by": "ducklake-operator"},
            ),
            spec=client.V1LeaseSpec(holder_identity=holder.uid, acquire_time=_now()),
        )
        try:
            self._api().create_namespaced_lease(namespace, body)
            return None
        except ApiException as exc:
            if exc.status != 409:
                raise
        current = self._api().read_namespaced_lease(name, namespace)
        uid = current.spec.holder_identity or ""
        if uid == holder.uid:
            return None  # ours already (a restart, or a second tick)
        other = (current.metadata.annotations or {}).get(JOB_ANNOTATION, "")
        if uid and self._alive(namespace, other, uid):
            return Holder(uid, other or uid)
        current.spec.holder_identity = holder.uid
        current.spec.acquire_time = _now()
        current.metadata.annotations = {**(current.metadata.annotations or {}), JOB_ANNOTATION: holder.name}
        try:  # the resourceVersion read above guards against two takers
            self._api().replace_namespaced_lease(name, namespace, current)
        except ApiException as exc:
            if exc.status == 409:
                return Holder("", "another run")
            raise
        return None

    def acquire_slot(
        self, namespace: str, names: Sequence[str], holder: Holder, what: str, taken: Collection[str] = ()
    ) -> str | None:
        """One of the slot Leases ``names`` (``slot_names``): the name of the one taken, or None
        when all are held. ``taken``: names believed held, tried last (each try of a held
        one costs requests)."""
        for name in sorted(names, key=lambda n: n in taken):
            if self.acquire(namespace, name, holder, what) is None:
                return name
        return None

    def release(self, namespace: str, name: str, uid: str) -> None:
        from kubernetes.client.exceptions import ApiException

        try:
            current = self._api().read_namespaced_lease(name, namespace)
        except ApiException as exc:
            if exc.status == 404:
                return
            raise
        if current.spec.holder_identity != uid:
            return
        try:
            self._api().delete_namespaced_lease(
                name, namespace, body={"preconditions": {"resourceVersion": current.metadata.resource_version}}
            )
        except ApiException as exc:
            if exc.status not in (404, 409):
                raise


def _now() -> datetime:
    return datetime.now(UTC)
