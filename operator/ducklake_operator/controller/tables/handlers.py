"""kopf handlers of DuckLakeSchemas and DuckLakeTables: reconcile on change (a table's heavy
changes start a DuckLakeJob: ``heavy_runs``), and the finalizer that drops them when their
deletionPolicy says Delete. Their drift is checked by their catalog's timer
(``catalogs.drift_sweep``), which reads the ``table_manifests`` index kept here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import kopf

from ...api.v1alpha1.names import BLOCKED, GROUP, PROGRESSING, READY, SCHEMA_KIND, SCHEMAS, TABLE_KIND, TABLES, VERSION
from ...api.v1alpha1.schema import SchemaSpec
from ...api.v1alpha1.table import TableSpec
from .. import metrics
from ..context import Controller
from ..handling import after_commit, handle, notify_catalog
from ..kube_clients import custom_objects_api
from ..manifests import CatalogKey, HeldManifest, ManifestIndex, catalog_for
from ..outcome import Outcome
from .heavy_runs import with_heavy_runs
from .reconciler import delete_schema, delete_table, reconcile_schema, reconcile_table


def _user(namespace: str | None, name: str, body: kopf.Body) -> dict[CatalogKey, str]:
    return {(namespace, str(body.get("spec", {}).get("catalogRef", {}).get("name"))): f"{body.get('kind')}/{name}"}


# Schemas and tables by the catalog they use: a catalog with deletionPolicy Delete waits for them.
@kopf.index(GROUP, VERSION, SCHEMAS)
async def schema_users(namespace: str | None, name: str, body: kopf.Body, **_: Any) -> dict[CatalogKey, str]:
    return _user(namespace, name, body)


@kopf.index(GROUP, VERSION, TABLES)
async def table_manifests(
    namespace: str | None, name: str, body: kopf.Body, **_: Any
) -> dict[CatalogKey, HeldManifest]:
    """Tables by their catalog, as last seen: the catalog's drift pass and its deletion, the
    policies and the runs use it. Held compactly for as long as the operator runs; kopf's
    own bookkeeping in the status (``status.kopf``) is read by none of them."""
    meta = body.get("metadata", {})
    kept = {k: meta.get(k) for k in ("name", "namespace", "uid", "generation", "resourceVersion", "labels")}
    status = {k: v for k, v in body.get("status", {}).items() if k != "kopf"}
    doc = HeldManifest(body.get("apiVersion"), body.get("kind"), kept, body.get("spec", {}), status)
    return {(namespace, str(body.get("spec", {}).get("catalogRef", {}).get("name"))): doc}


@kopf.on.resume(GROUP, VERSION, SCHEMAS)
@kopf.on.create(GROUP, VERSION, SCHEMAS)
@kopf.on.update(GROUP, VERSION, SCHEMAS, field="spec")
async def schema_reconcile(
    body: kopf.Body, patch: kopf.Patch, status: Any, memo: kopf.Memo, retry: int = 0, **kwargs: Any
) -> None:
    ctl: Controller = memo.controller
    catalog_manifests: ManifestIndex = kwargs["catalog_manifests"]
    await handle(
        SCHEMA_KIND, body, patch, status, memo, retry,
        lambda spec: reconcile_schema(spec, catalog_for(spec, catalog_manifests), ctl.pool),
        catalog=lambda spec: catalog_for(spec, catalog_manifests), after=after_commit(ctl),
    )  # fmt: skip


def _drops(spec: kopf.Spec, **_: Any) -> bool:
    """Only objects whose deletion drops something get a finalizer: with Retain (the
    default) nothing waits on the operator, and a storm of creations costs one write less
    per object."""
    return spec.get("deletionPolicy") == "Delete"


def _retains(spec: kopf.Spec, **_: Any) -> bool:
    return not _drops(spec)


@kopf.on.delete(GROUP, VERSION, SCHEMAS, optional=True, when=_retains)
@kopf.on.delete(GROUP, VERSION, TABLES, optional=True, when=_retains)
def retained(body: kopf.Body, spec: kopf.Spec, **_: Any) -> None:
    """Said when the operator sees the deletion (no finalizer: it does not wait for us)."""
    name = spec.get("name")
    meta = body.get("metadata", {})
    metrics.table_gone(str(meta.get("uid")), meta.get("namespace", ""), meta.get("name", ""))
    schema = f"{spec.get('schema', 'main')}." if body.get("kind") == TABLE_KIND else "schema "
    kopf.event(
        body, type="Normal", reason="Retained", message=f"{schema}{name} stays in the lake (deletionPolicy: Retain)"
    )


@kopf.on.delete(GROUP, VERSION, SCHEMAS, when=_drops)
async def schema_delete(
    body: kopf.Body, patch: kopf.Patch, status: Any, memo: kopf.Memo, retry: int = 0, **kwargs: Any
) -> None:
    ctl: Controller = memo.controller
    catalog_manifests: ManifestIndex = kwargs["catalog_manifests"]

    def delete(spec: SchemaSpec) -> Outcome:
        return delete_schema(spec, catalog_for(spec, catalog_manifests), ctl.pool)

    await handle(
        SCHEMA_KIND, body, patch, status, memo, retry, delete,
        catalog=lambda spec: catalog_for(spec, catalog_manifests), on_invalid="delete",
        after=lambda spec, outcome: notify_catalog(ctl, spec) if outcome.failure is None else None,
    )  # fmt: skip


SETTLED = "settled"  # the result a resumed table with nothing to plan is counted under


def settled(body: Mapping[str, Any]) -> bool:
    """Its generation applied, Ready and nothing under way (no heavy change, no block): what a
    restarted operator's resume would plan is nothing. It is not planned then (a resync of
    every table read the whole catalog first, 10,000 tables' columns, before the first one
    was done): the catalog's drift pass compares it with the catalog, as it does anyway."""
    status, generation = body.get("status") or {}, body.get("metadata", {}).get("generation")
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    ready = conditions.get(READY) or {}
    return (
        generation is not None
        and status.get("observedGeneration") == generation
        and ready.get("status") == "True"
        and ready.get("observedGeneration") == generation
        and all((conditions.get(t) or {}).get("status") != "True" for t in (PROGRESSING, BLOCKED))
    )


@kopf.on.resume(GROUP, VERSION, TABLES)
@kopf.on.create(GROUP, VERSION, TABLES)
@kopf.on.update(GROUP, VERSION, TABLES, field="spec")
async def table_reconcile(
    body: kopf.Body, patch: kopf.Patch, status: Any, memo: kopf.Memo, retry: int = 0, **kwargs: Any
) -> None:
    ctl: Controller = memo.controller
    catalog_manifests: ManifestIndex = kwargs["catalog_manifests"]
    meta = body.get("metadata", {})
    if kwargs.get("reason") == kopf.Reason.RESUME and settled(body):
        metrics.table_seen(str(meta.get("uid")), meta.get("namespace", ""), meta.get("name", ""), dict(status))
        metrics.RECONCILES.labels(kind=TABLE_KIND, result=SETTLED).inc()
        return
    owner = {"apiVersion": body.get("apiVersion"), "kind": body.get("kind"), "name": meta.get("name"),
             "uid": meta.get("uid")}  # fmt: skip

    def reconcile(spec: TableSpec) -> Outcome:
        outcome = reconcile_table(spec, catalog_for(spec, catalog_manifests), ctl.pool)
        return with_heavy_runs(outcome, spec, owner, custom_objects_api, body)  # its heavy changes: a DuckLakeJob

    await handle(
        TABLE_KIND, body, patch, status, memo, retry, reconcile,
        catalog=lambda spec: catalog_for(spec, catalog_manifests), after=after_commit(ctl),
    )  # fmt: skip


@kopf.on.delete(GROUP, VERSION, TABLES, when=_drops)
async def table_delete(
    body: kopf.Body, patch: kopf.Patch, status: Any, memo: kopf.Memo, retry: int = 0, **kwargs: Any
) -> None:
    ctl: Controller = memo.controller
    catalog_manifests: ManifestIndex = kwargs["catalog_manifests"]
    await handle(
        TABLE_KIND, body, patch, status, memo, retry,
        lambda spec: delete_table(spec, catalog_for(spec, catalog_manifests), ctl.pool),
        catalog=lambda spec: catalog_for(spec, catalog_manifests), on_invalid="delete",
        after=lambda spec, outcome: notify_catalog(ctl, spec) if outcome.failure is None else None,
    )  # fmt: skip
