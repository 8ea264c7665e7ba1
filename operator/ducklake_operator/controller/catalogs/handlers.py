"""kopf handlers of DuckLakeCatalogs: reconcile on change, a timer that checks the catalog's
health and then the drift of every table it holds (``drift_sweep``), and the finalizer that
retains or deletes the lake. The catalog manifests are held in a kopf index, so the other
kinds find their catalog without an API call.
"""

from __future__ import annotations

import os
import time
from typing import Any, cast

import kopf

from ...api.load import parse_manifest
from ...api.v1alpha1.catalog import CatalogSpec
from ...api.v1alpha1.names import CATALOG_KIND, CATALOGS, GROUP, READY, VERSION
from ...errors import SpecError
from ...use_cases import lake_identity
from .. import metrics
from ..context import Controller
from ..handling import handle, notify_catalog
from ..kube_clients import custom_objects_api
from ..manifests import CatalogKey, ManifestIndex, TableIndex, UserIndex, body_manifest
from ..outcome import Outcome
from .drift_sweep import QuietTables, SpecCache, StatusWriter, sweep
from .reconciler import delete_catalog, reconcile_catalog

DRIFT_INTERVAL = float(os.environ.get("DUCKLAKE_DRIFT_INTERVAL", "60"))


@kopf.on.startup()
def drift_sweep_state(memo: kopf.Memo, **_: Any) -> None:
    """What the drift pass keeps between ticks: parsed table manifests, the tables found
    quiet, and the status writer."""
    if "table_specs" not in memo:
        memo.table_specs = SpecCache()
        memo.quiet_tables = QuietTables()
        memo.status_writer = StatusWriter(custom_objects_api)


# Index handlers (here and in the other kinds' handler modules) are coroutines that only build
# a dict: kopf runs a plain function on its thread pool, a thread hop per event of every object
# (1,000 tables at a restart: ~0.5 s).
@kopf.index(GROUP, VERSION, CATALOGS)
async def catalog_manifests(
    namespace: str | None, name: str, body: kopf.Body, **_: Any
) -> dict[CatalogKey, dict[str, Any]]:
    return {
        (namespace, name): {
            "kind": body.get("kind"),
            "apiVersion": body.get("apiVersion"),
            "metadata": {"name": name, "namespace": namespace},
            "spec": dict(body.get("spec", {})),
            "ready": any(
                c.get("type") == READY and c.get("status") == "True"
                for c in body.get("status", {}).get("conditions") or []
            ),
        }
    }


async def _catalog(body: kopf.Body, patch: kopf.Patch, status: Any, memo: kopf.Memo, retry: int, timer: bool) -> None:
    ctl: Controller = memo.controller
    was_ready = any(c.get("type") == READY and c.get("status") == "True" for c in status.get("conditions") or [])

    def became_ready(spec: CatalogSpec, outcome: Outcome) -> None:
        if outcome.failure is None and not was_ready:
            notify_catalog(ctl, spec)

    await handle(
        CATALOG_KIND, body, patch, status, memo, retry, lambda spec: reconcile_catalog(spec, ctl.pool),
        catalog=lambda spec: spec, after=became_ready, timer=timer, on_invalid="skip" if timer else "report",
    )  # fmt: skip


@kopf.on.resume(GROUP, VERSION, CATALOGS)
@kopf.on.create(GROUP, VERSION, CATALOGS)
@kopf.on.update(GROUP, VERSION, CATALOGS, field="spec")
async def catalog_reconcile(
    body: kopf.Body, patch: kopf.Patch, status: Any, memo: kopf.Memo, retry: int = 0, **_: Any
) -> None:
    await _catalog(body, patch, status, memo, retry, timer=False)


# backoff: a pass that raised (the API server unreachable a moment) is made again at the next
# interval, not after kopf's default 60 s
@kopf.timer(GROUP, VERSION, CATALOGS, interval=DRIFT_INTERVAL, initial_delay=DRIFT_INTERVAL, backoff=DRIFT_INTERVAL)
async def catalog_check(
    body: kopf.Body, patch: kopf.Patch, status: Any, memo: kopf.Memo, namespace: str | None, name: str, **kwargs: Any,
) -> None:  # fmt: skip
    """The catalog's health, then the drift and health of each of its tables (``drift_sweep``):
    its database may change under it at any time."""
    table_manifests: TableIndex = kwargs["table_manifests"]
    started = time.monotonic()
    await _catalog(body, patch, status, memo, 0, timer=True)
    ctl: Controller = memo.controller
    try:
        catalog = parse_manifest(body_manifest(body))
    except SpecError:
        return
    docs = list(table_manifests.get((namespace, name), []))
    if not isinstance(catalog, CatalogSpec) or not docs:
        return
    updates = await ctl.call(
        sweep, catalog, docs, ctl.pool, memo.table_specs, memo.quiet_tables, memo.status_writer, ctl.scrub
    )
    metrics.DRIFT_PASS_SECONDS.observe(time.monotonic() - started)
    metrics.DRIFT_PASS_TABLES.inc(len(docs))
    for update in updates:
        meta = update.body["metadata"]
        metrics.table_seen(
            str(meta.get("uid")), meta["namespace"], meta["name"], {**update.body["status"], **update.status}
        )
        for type_, reason, message in update.events:
            # a plain mapping serves: kopf reads the object reference from it
            kopf.event(cast(kopf.Body, update.body), type=type_, reason=reason, message=message)


@kopf.on.delete(GROUP, VERSION, CATALOGS)
async def catalog_delete(
    body: kopf.Body,
    patch: kopf.Patch,
    status: Any,
    memo: kopf.Memo,
    namespace: str | None,
    name: str,
    retry: int = 0,
    **kwargs: Any,
) -> None:
    ctl: Controller = memo.controller
    schema_users: UserIndex = kwargs["schema_users"]
    table_manifests: TableIndex = kwargs["table_manifests"]
    catalog_manifests: ManifestIndex = kwargs["catalog_manifests"]

    def delete(spec: CatalogSpec) -> Outcome:
        tables = [f"DuckLakeTable/{doc['metadata']['name']}" for doc in table_manifests.get((namespace, name), [])]
        users = [*schema_users.get((namespace, name), []), *tables]
        sharing = [
            f"{ns}/{n}"
            for (ns, n), docs in catalog_manifests.items()
            if (ns, n) != (namespace, name)
            for doc in docs
            if _declares_lake(doc, lake_identity(spec))
        ]
        return delete_catalog(spec, ctl.pool, users, sharing)

    await handle(CATALOG_KIND, body, patch, status, memo, retry, delete, catalog=lambda spec: spec, on_invalid="delete")


def _declares_lake(doc: dict[str, Any], identity: tuple[object, ...]) -> bool:
    try:
        other = parse_manifest(doc)
    except SpecError:
        return False
    return isinstance(other, CatalogSpec) and lake_identity(other) == identity
