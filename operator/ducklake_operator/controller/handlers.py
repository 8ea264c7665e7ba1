"""kopf wiring (the only module that imports kopf): parse the body, call a reconciler on a
worker thread, write what changed to status and events, and turn failures into retries.

Progress and the last-handled configuration live in ``ducklake.dev/*`` annotations, so
``status`` is ours. Catalog manifests are held in a kopf index, so a table finds its
catalog without an API call; credentials come from a Secret store that watches each Secret
it read. A handler whose dependency is missing waits for it to change (``context``).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Hashable
from functools import lru_cache
from typing import Any, cast

import kopf

from ..api.load import parse_manifest
from ..errors import SpecError
from ..model.spec import (
    CATALOGS,
    GROUP,
    SCHEMAS,
    TABLES,
    VERSION,
    CatalogSpec,
    JobSpec,
    MaintenancePolicySpec,
    PostgresSpec,
    SchemaSpec,
    TableSpec,
)
from ..reconcile import lake_identity
from . import metrics
from .context import Controller, catalog_channel
from .credentials import SecretStore, kubernetes_core_api
from .heavy_runs import with_heavy_runs
from .reconcilers import (
    CatalogPool,
    Outcome,
    delete_catalog,
    delete_schema,
    delete_table,
    reconcile_catalog,
    reconcile_schema,
    reconcile_table,
)
from .status import condition, publication
from .sweep import SpecCache, StatusWriter, sweep

log = logging.getLogger(__name__)
DRIFT_INTERVAL = float(os.environ.get("DUCKLAKE_DRIFT_INTERVAL", "60"))
# The indexes, by (namespace, catalog name). kopf passes every index to every handler as a
# keyword argument its handler protocols do not name, so handlers read them from **kwargs.
CatalogKey = tuple[str | None, str]
ManifestIndex = kopf.Index[CatalogKey, dict[str, Any]]  # catalog_manifests, table_manifests
UserIndex = kopf.Index[CatalogKey, str]  # schema_users


@lru_cache(maxsize=1)
def _core_api() -> Any:
    return kubernetes_core_api()


@lru_cache(maxsize=1)
def _custom_objects_api() -> Any:
    from kubernetes import client

    _core_api()  # loads the configuration
    return client.CustomObjectsApi()


def secret_channel(namespace: str, name: str) -> Hashable:
    return ("secret", namespace, name)


@kopf.on.startup()
async def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    # kopf's bookkeeping (handler progress, the last handled spec) in status.kopf: written in
    # the same request as our status, where annotations would cost one more per change
    settings.persistence.progress_storage = kopf.StatusProgressStorage(field="status.kopf.progress")
    settings.persistence.diffbase_storage = kopf.StatusDiffBaseStorage(field="status.kopf.lastHandledConfiguration")
    # Our own events only (applied, blocked, drifted, failures): kopf would post one more
    # per handler run ("Handler ... succeeded"), an API write per object per timer tick.
    settings.posting.loggers = False
    if "controller" not in memo:
        controller: Controller

        def secret_changed(key: tuple[str, str]) -> None:
            controller.signals.notify(secret_channel(*key))

        store = SecretStore(_core_api, on_change=secret_changed)
        controller = Controller(
            pool=CatalogPool(credentials=store.read),
            scrub=store.scrub,
            workers=int(os.environ.get("DUCKLAKE_WORKERS", "16")),  # more threads, bigger merged commits
        )
        memo.controller = controller
        memo.secrets = store
        memo.table_specs = SpecCache()
        memo.status_writer = StatusWriter(_custom_objects_api)
    memo.controller.start(asyncio.get_running_loop())
    # the kubernetes client (Secrets, status writes, runs) is loaded now, once: left to the first
    # reconciles of a resync, every worker thread waited on its import lock
    await memo.controller.call(_core_api)


@kopf.on.cleanup()
async def close_catalogs(memo: kopf.Memo, **_: Any) -> None:
    if "controller" in memo:
        memo.secrets.stop()
        await memo.controller.stop()


# Index handlers (here, in job_handlers and policy_handlers) are coroutines that only build a
# dict: kopf runs a plain function on its thread pool, a thread hop per event of every object
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
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in body.get("status", {}).get("conditions") or []
            ),
        }
    }


def _user(namespace: str | None, name: str, body: kopf.Body) -> dict[CatalogKey, str]:
    return {(namespace, str(body.get("spec", {}).get("catalogRef", {}).get("name"))): f"{body.get('kind')}/{name}"}


# Schemas and tables by the catalog they use: a catalog with deletionPolicy Delete waits for them.
@kopf.index(GROUP, VERSION, SCHEMAS)
async def schema_users(namespace: str | None, name: str, body: kopf.Body, **_: Any) -> dict[CatalogKey, str]:
    return _user(namespace, name, body)


@kopf.index(GROUP, VERSION, TABLES)
async def table_manifests(
    namespace: str | None, name: str, body: kopf.Body, **_: Any
) -> dict[CatalogKey, dict[str, Any]]:
    """Tables by their catalog, as last seen: the catalog's drift pass and its deletion use it."""
    meta = body.get("metadata", {})
    kept = {k: meta.get(k) for k in ("name", "namespace", "uid", "generation", "resourceVersion", "labels")}
    doc = {"apiVersion": body.get("apiVersion"), "kind": body.get("kind"), "metadata": kept,
           "spec": dict(body.get("spec", {})), "status": dict(body.get("status", {}))}  # fmt: skip
    return {(namespace, str(body.get("spec", {}).get("catalogRef", {}).get("name"))): doc}


def _parse(body: kopf.Body) -> Any:
    meta = body.get("metadata", {})
    return parse_manifest(_manifest(body), source=f"{meta.get('namespace')}/{meta.get('name')}")


def _manifest(body: kopf.Body) -> dict[str, Any]:
    meta = body.get("metadata", {})
    return {
        "apiVersion": body.get("apiVersion"),
        "kind": body.get("kind"),
        "spec": body.get("spec"),
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "generation": meta.get("generation"),
            "labels": dict(meta.get("labels") or {}),
        },
    }


_parsed_catalogs: dict[tuple[str | None, str], tuple[object, CatalogSpec | None]] = {}


def _catalog_for(
    spec: SchemaSpec | TableSpec | JobSpec | MaintenancePolicySpec, index: ManifestIndex
) -> CatalogSpec | None:
    """The catalog manifest an object names, parsed once per version of it (the index
    holds the same document object until the catalog changes)."""
    key = (spec.ref.namespace, spec.catalog)
    for doc in index.get(key) or []:
        cached = _parsed_catalogs.get(key)
        if cached is not None and cached[0] is doc:
            return cached[1]
        try:
            parsed = parse_manifest(doc, source=f"{spec.ref.namespace}/{spec.catalog}")
        except SpecError:
            parsed = None
        catalog = parsed if isinstance(parsed, CatalogSpec) else None
        _parsed_catalogs[key] = (doc, catalog)
        return catalog
    return None


def _channels(catalog: CatalogSpec | None, namespace: str | None, name: str) -> list[Hashable]:
    """What a handler of an object using catalog ``name`` waits on: the catalog, and the
    Secrets the catalog reads."""
    channels = [catalog_channel(namespace, name)]
    if catalog is not None:
        refs = [catalog.s3.credentials if catalog.s3 else None]
        if isinstance(catalog.backend, PostgresSpec):
            refs.append(catalog.backend.credentials)
        channels += [secret_channel(namespace or "", r.name) for r in refs if r is not None]
    return channels


def _publish(ctl: Controller, outcome: Outcome, body: kopf.Body, patch: kopf.Patch, status: Any, kind: str) -> None:
    """Write what changed to status and post the events (``status.publication``)."""
    fields, events = publication(
        dict(status), outcome.status, outcome.conditions, outcome.events, outcome.failure is not None, ctl.scrub
    )
    for key, value in fields.items():
        patch.status[key] = value
    if kind == "DuckLakeTable":
        meta = body.get("metadata", {})
        metrics.table_seen(str(meta.get("uid")), meta.get("namespace", ""), meta.get("name", ""), {**status, **fields})
    for type_, reason, message in events:
        kopf.event(body, type=type_, reason=reason, message=message)
    metrics.RECONCILES.labels(kind=kind, result=outcome.failure.reason if outcome.failure else "ok").inc()


def _invalid_outcome(exc: SpecError, body: kopf.Body) -> Outcome:
    """An invalid manifest: said in status and an event; not retried until it changes."""
    generation = body.get("metadata", {}).get("generation")
    message = "; ".join(exc.problems)
    return Outcome(
        status={"observedGeneration": generation},
        conditions=[
            condition("Ready", False, "InvalidSpec", message, generation),
            condition("Progressing", False, "InvalidSpec", "", generation),
        ],
        events=[("Warning", "InvalidSpec", message)],
    )


async def _handle(
    kind: str,
    body: kopf.Body,
    patch: kopf.Patch,
    status: Any,
    memo: kopf.Memo,
    retry: int,
    reconcile: Callable[[Any], Outcome],
    *,
    catalog: Callable[[Any], CatalogSpec | None],
    on_invalid: str = "report",
    after: Callable[[Any, Outcome], None] | None = None,
    timer: bool = False,
) -> None:
    """Parse, wait if the last try waits for a dependency, reconcile on a worker thread,
    publish, and turn a failure into a kopf retry. An invalid manifest is reported
    (``on_invalid="report"``), or on deletion said to have been never applied
    (``"delete"``), or left to the change handlers (``"skip"``, timers). A timer neither
    waits nor retries: its next tick is its retry."""
    ctl: Controller = memo.controller
    uid = str(body.get("metadata", {}).get("uid"))
    try:
        spec = _parse(body)
    except SpecError as exc:
        if on_invalid == "report":
            _publish(ctl, _invalid_outcome(exc, body), body, patch, status, kind)
        elif on_invalid == "delete":
            kopf.event(body, type="Warning", reason="InvalidSpec", message="the manifest is invalid, so it was never "
                       "applied; nothing to delete in the lake")  # fmt: skip
        return
    if not timer:
        await ctl.wait_if_blocked(uid, retry)
    catalog_spec = spec if isinstance(spec, CatalogSpec) else catalog(spec)
    catalog_name = spec.ref.name if isinstance(spec, CatalogSpec) else spec.catalog
    seen = ctl.note(_channels(catalog_spec, spec.ref.namespace, catalog_name))
    with metrics.RECONCILE_SECONDS.labels(kind=kind).time():
        outcome = await ctl.call(reconcile, spec)
    _publish(ctl, outcome, body, patch, status, kind)
    if after is not None:
        after(spec, outcome)
    failure = outcome.failure
    if timer:
        return
    if failure is None:
        ctl.forget(uid)
        return
    message = ctl.scrub(failure.message)
    if failure.waits:
        ctl.block(uid, seen)
        if failure.reason == "CatalogUnreachable" and catalog_spec is not None:
            pool, target = ctl.pool, catalog_spec
            ctl.probe(catalog_channel(spec.ref.namespace, catalog_name), lambda: pool.catalog(target)[0].snapshot())
        raise kopf.TemporaryError(message, delay=0)
    raise kopf.TemporaryError(message, delay=failure.delay(retry))


def _notify_catalog(ctl: Controller, spec: Any) -> None:
    name = spec.ref.name if isinstance(spec, CatalogSpec) else spec.catalog
    ctl.signals.notify(catalog_channel(spec.ref.namespace, name))


def _committed(ctl: Controller) -> Callable[[Any, Outcome], None]:
    """After a schema or table reconcile: a commit may be what others wait for (a schema)."""

    def after(spec: Any, outcome: Outcome) -> None:
        if outcome.failure is None and (outcome.status.get("lastPlan") or {}).get("snapshot") is not None:
            _notify_catalog(ctl, spec)

    return after


async def _catalog(body: kopf.Body, patch: kopf.Patch, status: Any, memo: kopf.Memo, retry: int, timer: bool) -> None:
    ctl: Controller = memo.controller
    was_ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])

    def became_ready(spec: CatalogSpec, outcome: Outcome) -> None:
        if outcome.failure is None and not was_ready:
            _notify_catalog(ctl, spec)

    await _handle(
        "DuckLakeCatalog", body, patch, status, memo, retry, lambda spec: reconcile_catalog(spec, ctl.pool),
        catalog=lambda spec: spec, after=became_ready, timer=timer, on_invalid="skip" if timer else "report",
    )  # fmt: skip


@kopf.on.resume(GROUP, VERSION, CATALOGS)
@kopf.on.create(GROUP, VERSION, CATALOGS)
@kopf.on.update(GROUP, VERSION, CATALOGS, field="spec")
async def catalog_reconcile(
    body: kopf.Body, patch: kopf.Patch, status: Any, memo: kopf.Memo, retry: int = 0, **_: Any
) -> None:
    await _catalog(body, patch, status, memo, retry, timer=False)


@kopf.timer(GROUP, VERSION, CATALOGS, interval=DRIFT_INTERVAL, initial_delay=DRIFT_INTERVAL)
async def catalog_check(
    body: kopf.Body, patch: kopf.Patch, status: Any, memo: kopf.Memo, namespace: str | None, name: str, **kwargs: Any,
) -> None:  # fmt: skip
    """The catalog's health, then the drift and health of each of its tables (``sweep``):
    its database may change under it at any time."""
    table_manifests: ManifestIndex = kwargs["table_manifests"]
    await _catalog(body, patch, status, memo, 0, timer=True)
    ctl: Controller = memo.controller
    try:
        catalog = parse_manifest(_manifest(body))
    except SpecError:
        return
    docs = list(table_manifests.get((namespace, name), []))
    if not isinstance(catalog, CatalogSpec) or not docs:
        return
    updates = await ctl.call(sweep, catalog, docs, ctl.pool, memo.table_specs, memo.status_writer, ctl.scrub)
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
    table_manifests: ManifestIndex = kwargs["table_manifests"]
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

    await _handle(
        "DuckLakeCatalog", body, patch, status, memo, retry, delete, catalog=lambda spec: spec, on_invalid="delete"
    )


def _declares_lake(doc: dict[str, Any], identity: tuple[object, ...]) -> bool:
    try:
        other = parse_manifest(doc)
    except SpecError:
        return False
    return isinstance(other, CatalogSpec) and lake_identity(other) == identity


@kopf.on.resume(GROUP, VERSION, SCHEMAS)
@kopf.on.create(GROUP, VERSION, SCHEMAS)
@kopf.on.update(GROUP, VERSION, SCHEMAS, field="spec")
async def schema_reconcile(
    body: kopf.Body, patch: kopf.Patch, status: Any, memo: kopf.Memo, retry: int = 0, **kwargs: Any
) -> None:
    ctl: Controller = memo.controller
    catalog_manifests: ManifestIndex = kwargs["catalog_manifests"]
    await _handle(
        "DuckLakeSchema", body, patch, status, memo, retry,
        lambda spec: reconcile_schema(spec, _catalog_for(spec, catalog_manifests), ctl.pool),
        catalog=lambda spec: _catalog_for(spec, catalog_manifests), after=_committed(ctl),
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
    schema = f"{spec.get('schema', 'main')}." if body.get("kind") == "DuckLakeTable" else "schema "
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
        return delete_schema(spec, _catalog_for(spec, catalog_manifests), ctl.pool)

    await _handle(
        "DuckLakeSchema", body, patch, status, memo, retry, delete,
        catalog=lambda spec: _catalog_for(spec, catalog_manifests), on_invalid="delete",
        after=lambda spec, outcome: _notify_catalog(ctl, spec) if outcome.failure is None else None,
    )  # fmt: skip


@kopf.on.resume(GROUP, VERSION, TABLES)
@kopf.on.create(GROUP, VERSION, TABLES)
@kopf.on.update(GROUP, VERSION, TABLES, field="spec")
async def table_reconcile(
    body: kopf.Body, patch: kopf.Patch, status: Any, memo: kopf.Memo, retry: int = 0, **kwargs: Any
) -> None:
    ctl: Controller = memo.controller
    catalog_manifests: ManifestIndex = kwargs["catalog_manifests"]
    meta = body.get("metadata", {})
    owner = {"apiVersion": body.get("apiVersion"), "kind": body.get("kind"), "name": meta.get("name"),
             "uid": meta.get("uid")}  # fmt: skip

    def reconcile(spec: TableSpec) -> Outcome:
        outcome = reconcile_table(spec, _catalog_for(spec, catalog_manifests), ctl.pool)
        return with_heavy_runs(outcome, spec, owner, _custom_objects_api, body)  # its heavy changes: a DuckLakeJob

    await _handle(
        "DuckLakeTable", body, patch, status, memo, retry, reconcile,
        catalog=lambda spec: _catalog_for(spec, catalog_manifests), after=_committed(ctl),
    )  # fmt: skip


@kopf.on.delete(GROUP, VERSION, TABLES, when=_drops)
async def table_delete(
    body: kopf.Body, patch: kopf.Patch, status: Any, memo: kopf.Memo, retry: int = 0, **kwargs: Any
) -> None:
    ctl: Controller = memo.controller
    catalog_manifests: ManifestIndex = kwargs["catalog_manifests"]
    await _handle(
        "DuckLakeTable", body, patch, status, memo, retry,
        lambda spec: delete_table(spec, _catalog_for(spec, catalog_manifests), ctl.pool),
        catalog=lambda spec: _catalog_for(spec, catalog_manifests), on_invalid="delete",
        after=lambda spec, outcome: _notify_catalog(ctl, spec) if outcome.failure is None else None,
    )  # fmt: skip
