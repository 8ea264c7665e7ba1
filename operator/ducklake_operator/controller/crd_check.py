"""At its start the operator compares the cluster's CustomResourceDefinitions with its own
(``api.crd``'s ``ducklake.dev/schema`` digest). Helm installs a chart's CRDs with its first
install only, so after a ``helm upgrade`` the cluster may serve an older schema, and the API
server silently drops every field that schema does not declare (a status field the
controller writes, a spec field a user sets). A CRD that is not this operator's is logged
with what to do and counted in ``ducklake_crd_current``; the operator runs on, as it can
with what the older schema keeps."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

import kopf

from ..api.crd import SCHEMA_ANNOTATION, crd_name, crd_spec, schema_digest
from ..api.v1alpha1 import KINDS
from .kube_clients import apiextensions_api
from .metrics import CRD_CURRENT

log = logging.getLogger(__name__)

APPLY = "kubectl apply --server-side -f crds/ (helm upgrade leaves a chart's CRDs as they were)"


def crd_mismatch(name: str, served: Mapping[str, Any] | None, expected: str) -> str | None:
    """Why the cluster's CRD ``name`` (its metadata, None when it is not there) is not the
    one with schema digest ``expected``; None when it is."""
    if served is None:
        return f"CustomResourceDefinition {name} is not installed. Install this version's CRDs: {APPLY}"
    found = (served.get("annotations") or {}).get(SCHEMA_ANNOTATION)
    if found == expected:
        return None
    return (
        f"CustomResourceDefinition {name} is not this operator's (its {SCHEMA_ANNOTATION}: {found or 'none'}, "
        f"this operator's: {expected}): the API server drops the fields it does not declare. Apply this "
        f"version's CRDs: {APPLY}"
    )


def check_crds(read: Callable[[str], Mapping[str, Any] | None]) -> list[str]:
    """Compare every kind's CRD, read by name (``read``: its metadata, None when missing);
    the mismatches, each also in the log and ``ducklake_crd_current``."""
    problems = []
    for kind in KINDS.values():
        name = crd_name(kind)
        problem = crd_mismatch(name, read(name), schema_digest(crd_spec(kind)))
        CRD_CURRENT.labels(crd=name).set(0 if problem else 1)
        if problem:
            log.warning("%s", problem)
            problems.append(problem)
    return problems


def _read_crd_metadata(name: str) -> Mapping[str, Any] | None:
    from kubernetes.client.exceptions import ApiException

    try:
        found = apiextensions_api().read_custom_resource_definition(name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return {"annotations": (found.metadata.annotations if found.metadata else None) or {}}


@kopf.on.startup()
async def compare_crds(**_: Any) -> None:
    """Once at the start, in a thread of its own (whichever startup handler runs first). A
    read the API server refuses is logged, never fatal: the check is advice."""
    try:
        await asyncio.to_thread(check_crds, _read_crd_metadata)
    except Exception as exc:  # noqa: BLE001 - RBAC, a server error: the operator runs on
        log.warning("could not compare the cluster's CustomResourceDefinitions with this operator's: %s", exc)
