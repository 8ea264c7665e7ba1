"""kopf wiring (the only module that imports kopf): parse the body, call a reconciler,
write its outcome to status and events, and turn temporary failures into kopf retries.

Progress and the last-handled configuration live in ``ducklake.dev/*`` annotations, so
``status`` is ours. Catalog manifests are held in a kopf index, so a table finds its
catalog without an API call; credentials are read from the catalog's Secret on demand.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import kopf

from ..api.load import parse_manifest
from ..errors import SpecError
from ..model.spec import GROUP, VERSION, CatalogSpec, SchemaSpec, TableSpec
from . import metrics
from .reconcilers import (
    CatalogPool, Outcome, check_table_drift, delete_schema, delete_table, reconcile_catalog, reconcile_schema, reconcile_table,
)
from .status import condition, merge_conditions

log = logging.getLogger(__name__)
DRIFT_INTERVAL = float(os.environ.get("DUCKLAKE_DRIFT_INTERVAL", "60"))
RETRY_SCALE = float(os.environ.get("DUCKLAKE_RETRY_SCALE", "1"))  # tests shorten retry delays
CATALOGS, SCHEMAS, TABLES = "ducklakecatalogs", "ducklakeschemas", "ducklaketables"


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=GROUP, key="last-handled-configuration")
    settings.posting.level = logging.INFO
    settings.execution.max_workers = int(os.environ.get("DUCKLAKE_WORKERS", "8"))
    if "pool" not in memo:
        from .secrets import read_secret

        memo.pool = CatalogPool(credentials=read_secret)


@kopf.on.cleanup()
def close_catalogs(memo: kopf.Memo, **_: Any) -> None:
    if "pool" in memo:
        memo.pool.close()


@kopf.index(GROUP, VERSION, CATALOGS)
def catalog_manifests(namespace: str, name: str, body: kopf.Body, **_: Any) -> dict[tuple[str, str], dict[str, Any]]:
    return {(namespace, name): {"kind": body.get("kind"), "apiVersion": body.get("apiVersion"),
                                "metadata": {"name": name, "namespace": namespace}, "spec": dict(body.get("spec", {}))}}


def _parse(body: kopf.Body) -> Any:
    meta = body.get("metadata", {})
    doc = {"apiVersion": body.get("apiVersion"), "kind": body.get("kind"), "spec": body.get("spec"),
           "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace"), "generation": meta.get("generation"),
                        "labels": dict(meta.get("labels") or {})}}
    return parse_manifest(doc, source=f"{meta.get('namespace')}/{meta.get('name')}")


def _catalog_for(spec: SchemaSpec | TableSpec, index: kopf.Index) -> CatalogSpec | None:
    store = index.get((spec.ref.namespace, spec.catalog))
    for doc in store or []:
        try:
            parsed = parse_manifest(doc, source=f"{spec.ref.namespace}/{spec.catalog}")
        except SpecError:
            return None
        return parsed if isinstance(parsed, CatalogSpec) else None
    return None


def _publish(outcome: Outcome, body: kopf.Body, patch: kopf.Patch, status: dict[str, Any], kind: str) -> None:
    for key, value in outcome.status.items():
        patch.status[key] = value
    if outcome.conditions:
        patch.status["conditions"] = merge_conditions(status.get("conditions"), outcome.conditions)
    for type_, reason, message in outcome.events:
        kopf.event(body, type=type_, reason=reason, message=message)
    metrics.RECONCILES.labels(kind=kind, result=outcome.failure.reason if outcome.failure else "ok").inc()
    if outcome.failure is not None:
        raise kopf.TemporaryError(outcome.failure.message, delay=max(outcome.failure.delay * RETRY_SCALE, 0.1))


def _invalid(exc: SpecError, body: kopf.Body, patch: kopf.Patch, status: dict[str, Any], kind: str) -> None:
    """An invalid manifest: say so in status and an event; do not retry until it changes."""
    generation = body.get("metadata", {}).get("generation")
    message = "; ".join(exc.problems)
    _publish(Outcome(status={"observedGeneration": generation},
                     conditions=[condition("Ready", False, "InvalidSpec", message, generation),
                                 condition("Progressing", False, "InvalidSpec", "", generation)],
                     events=[("Warning", "InvalidSpec", message)]), body, patch, status, kind)


@kopf.on.resume(GROUP, VERSION, CATALOGS)
@kopf.on.create(GROUP, VERSION, CATALOGS)
@kopf.on.update(GROUP, VERSION, CATALOGS, field="spec")
@kopf.timer(GROUP, VERSION, CATALOGS, interval=DRIFT_INTERVAL, initial_delay=DRIFT_INTERVAL)
def catalog_reconcile(body: kopf.Body, patch: kopf.Patch, status: dict[str, Any], memo: kopf.Memo, **_: Any) -> None:
    try:
        spec = _parse(body)
    except SpecError as exc:
        return _invalid(exc, body, patch, status, "DuckLakeCatalog")
    with metrics.RECONCILE_SECONDS.labels(kind="DuckLakeCatalog").time():
        _publish(reconcile_catalog(spec, memo.pool), body, patch, status, "DuckLakeCatalog")


@kopf.on.resume(GROUP, VERSION, SCHEMAS)
@kopf.on.create(GROUP, VERSION, SCHEMAS)
@kopf.on.update(GROUP, VERSION, SCHEMAS, field="spec")
def schema_reconcile(body: kopf.Body, patch: kopf.Patch, status: dict[str, Any], memo: kopf.Memo,
                     catalog_manifests: kopf.Index, **_: Any) -> None:
    try:
        spec = _parse(body)
    except SpecError as exc:
        return _invalid(exc, body, patch, status, "DuckLakeSchema")
    _publish(reconcile_schema(spec, _catalog_for(spec, catalog_manifests), memo.pool), body, patch, status, "DuckLakeSchema")


@kopf.on.delete(GROUP, VERSION, SCHEMAS)
def schema_delete(body: kopf.Body, patch: kopf.Patch, status: dict[str, Any], memo: kopf.Memo, catalog_manifests: kopf.Index, **_: Any) -> None:
    try:
        spec = _parse(body)
    except SpecError:
        return  # an invalid schema was never applied: nothing to drop
    _publish(delete_schema(spec, _catalog_for(spec, catalog_manifests), memo.pool), body, patch, status, "DuckLakeSchema")


@kopf.on.resume(GROUP, VERSION, TABLES)
@kopf.on.create(GROUP, VERSION, TABLES)
@kopf.on.update(GROUP, VERSION, TABLES, field="spec")
def table_reconcile(body: kopf.Body, patch: kopf.Patch, status: dict[str, Any], memo: kopf.Memo,
                    catalog_manifests: kopf.Index, **_: Any) -> None:
    try:
        spec = _parse(body)
    except SpecError as exc:
        return _invalid(exc, body, patch, status, "DuckLakeTable")
    with metrics.RECONCILE_SECONDS.labels(kind="DuckLakeTable").time():
        _publish(reconcile_table(spec, _catalog_for(spec, catalog_manifests), memo.pool), body, patch, status, "DuckLakeTable")


@kopf.timer(GROUP, VERSION, TABLES, interval=DRIFT_INTERVAL, initial_delay=DRIFT_INTERVAL, idle=DRIFT_INTERVAL / 2)
def table_drift(body: kopf.Body, patch: kopf.Patch, status: dict[str, Any], memo: kopf.Memo, catalog_manifests: kopf.Index, **_: Any) -> None:
    try:
        spec = _parse(body)
    except SpecError:
        return
    outcome = check_table_drift(spec, _catalog_for(spec, catalog_manifests), memo.pool)
    # report a drift event once, when it appears
    was = {c["type"]: c for c in status.get("conditions", [])}.get("Drifted", {})
    if was.get("status") == "True" and outcome.events and outcome.events[0][1] == "Drifted":
        outcome.events = []
    _publish(outcome, body, patch, status, "DuckLakeTable")


@kopf.on.delete(GROUP, VERSION, TABLES)
def table_delete(body: kopf.Body, patch: kopf.Patch, status: dict[str, Any], memo: kopf.Memo, catalog_manifests: kopf.Index, **_: Any) -> None:
    try:
        spec = _parse(body)
    except SpecError:
        return
    _publish(delete_table(spec, _catalog_for(spec, catalog_manifests), memo.pool), body, patch, status, "DuckLakeTable")
