"""kopf wiring (the only module that imports kopf): parse the body, call a reconciler,
write its outcome to status and events, and turn temporary failures into kopf retries.

Progress and the last-handled configuration live in ``ducklake.dev/*`` annotations, so
``status`` is ours. Catalog manifests are held in a kopf index, so a table finds its
catalog without an API call; credentials are read from the catalog's Secret on demand.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

import kopf

from ..api.load import parse_manifest
from ..errors import SpecError
from ..model.spec import GROUP, VERSION, CatalogSpec, SchemaSpec, TableSpec
from ..reconcile import lake_identity
from . import metrics
from .reconcilers import (
    CatalogPool,
    Outcome,
    check_table_drift,
    delete_catalog,
    delete_schema,
    delete_table,
    reconcile_catalog,
    reconcile_schema,
    reconcile_table,
)
from .status import condition, merge_conditions

log = logging.getLogger(__name__)
DRIFT_INTERVAL = float(os.environ.get("DUCKLAKE_DRIFT_INTERVAL", "60"))
RETRY_SCALE = float(os.environ.get("DUCKLAKE_RETRY_SCALE", "1"))  # tests shorten retry delays
CATALOGS, SCHEMAS, TABLES = "ducklakecatalogs", "ducklakeschemas", "ducklaketables"


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=GROUP, key="last-handled-configuration"
    )
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
    return {
        (namespace, name): {
            "kind": body.get("kind"),
            "apiVersion": body.get("apiVersion"),
            "metadata": {"name": name, "namespace": namespace},
            "spec": dict(body.get("spec", {})),
        }
    }


def _user(namespace: str, name: str, body: kopf.Body) -> dict[tuple[str, str], str]:
    return {(namespace, str(body.get("spec", {}).get("catalogRef", {}).get("name"))): f"{body.get('kind')}/{name}"}


# Schemas and tables by the catalog they use: a catalog with deletionPolicy Delete waits for them.
@kopf.index(GROUP, VERSION, SCHEMAS)
def schema_users(namespace: str, name: str, body: kopf.Body, **_: Any) -> dict[tuple[str, str], str]:
    return _user(namespace, name, body)


@kopf.index(GROUP, VERSION, TABLES)
def table_users(namespace: str, name: str, body: kopf.Body, **_: Any) -> dict[tuple[str, str], str]:
    return _user(namespace, name, body)


def _parse(body: kopf.Body) -> Any:
    meta = body.get("metadata", {})
    doc = {
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
    _publish(
        Outcome(
            status={"observedGeneration": generation},
            conditions=[
                condition("Ready", False, "InvalidSpec", message, generation),
                condition("Progressing", False, "InvalidSpec", "", generation),
            ],
            events=[("Warning", "InvalidSpec", message)],
        ),
        body,
        patch,
        status,
        kind,
    )


def _handle(
    kind: str,
    body: kopf.Body,
    patch: kopf.Patch,
    status: dict[str, Any],
    reconcile: Callable[[Any], Outcome],
    *,
    on_invalid: str = "report",
) -> None:
    """Parse, reconcile, publish. An invalid manifest is reported (or, on deletion, ignored:
    it was never applied) and not retried until it changes."""
    try:
        spec = _parse(body)
    except SpecError as exc:
        if on_invalid == "report":
            _invalid(exc, body, patch, status, kind)
        return
    with metrics.RECONCILE_SECONDS.labels(kind=kind).time():
        _publish(reconcile(spec), body, patch, status, kind)


@kopf.on.resume(GROUP, VERSION, CATALOGS)
@kopf.on.create(GROUP, VERSION, CATALOGS)
@kopf.on.update(GROUP, VERSION, CATALOGS, field="spec")
@kopf.timer(GROUP, VERSION, CATALOGS, interval=DRIFT_INTERVAL, initial_delay=DRIFT_INTERVAL)
def catalog_reconcile(body: kopf.Body, patch: kopf.Patch, status: dict[str, Any], memo: kopf.Memo, **_: Any) -> None:
    _handle("DuckLakeCatalog", body, patch, status, lambda spec: reconcile_catalog(spec, memo.pool))


@kopf.on.delete(GROUP, VERSION, CATALOGS)
def catalog_delete(
    body: kopf.Body,
    patch: kopf.Patch,
    status: dict[str, Any],
    memo: kopf.Memo,
    schema_users: kopf.Index,
    table_users: kopf.Index,
    catalog_manifests: kopf.Index,
    namespace: str,
    name: str,
    **_: Any,
) -> None:
    users = [*schema_users.get((namespace, name), []), *table_users.get((namespace, name), [])]
    _handle(
        "DuckLakeCatalog",
        body,
        patch,
        status,
        on_invalid="ignore",
        reconcile=lambda spec: delete_catalog(
            spec,
            memo.pool,
            users,
            [
                f"{ns}/{n}"
                for (ns, n), docs in catalog_manifests.items()
                if (ns, n) != (namespace, name)
                for doc in docs
                if _declares_lake(doc, lake_identity(spec))
            ],
        ),
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
def schema_reconcile(
    body: kopf.Body, patch: kopf.Patch, status: dict[str, Any], memo: kopf.Memo, catalog_manifests: kopf.Index, **_: Any
) -> None:
    _handle(
        "DuckLakeSchema",
        body,
        patch,
        status,
        lambda spec: reconcile_schema(spec, _catalog_for(spec, catalog_manifests), memo.pool),
    )


@kopf.on.delete(GROUP, VERSION, SCHEMAS)
def schema_delete(
    body: kopf.Body, patch: kopf.Patch, status: dict[str, Any], memo: kopf.Memo, catalog_manifests: kopf.Index, **_: Any
) -> None:
    _handle(
        "DuckLakeSchema",
        body,
        patch,
        status,
        lambda spec: delete_schema(spec, _catalog_for(spec, catalog_manifests), memo.pool),
        on_invalid="ignore",
    )


@kopf.on.resume(GROUP, VERSION, TABLES)
@kopf.on.create(GROUP, VERSION, TABLES)
@kopf.on.update(GROUP, VERSION, TABLES, field="spec")
def table_reconcile(
    body: kopf.Body, patch: kopf.Patch, status: dict[str, Any], memo: kopf.Memo, catalog_manifests: kopf.Index, **_: Any
) -> None:
    _handle(
        "DuckLakeTable",
        body,
        patch,
        status,
        lambda spec: reconcile_table(spec, _catalog_for(spec, catalog_manifests), memo.pool),
    )


@kopf.timer(GROUP, VERSION, TABLES, interval=DRIFT_INTERVAL, initial_delay=DRIFT_INTERVAL, idle=DRIFT_INTERVAL / 2)
def table_drift(
    body: kopf.Body, patch: kopf.Patch, status: dict[str, Any], memo: kopf.Memo, catalog_manifests: kopf.Index, **_: Any
) -> None:
    def check(spec: TableSpec) -> Outcome:
        outcome = check_table_drift(spec, _catalog_for(spec, catalog_manifests), memo.pool)
        was = {c["type"]: c for c in status.get("conditions", [])}.get("Drifted", {})
        if was.get("status") == "True" and outcome.events and outcome.events[0][1] == "Drifted":
            outcome.events = []  # report a drift event once, when it appears
        return outcome

    _handle("DuckLakeTable", body, patch, status, check, on_invalid="ignore")


@kopf.on.delete(GROUP, VERSION, TABLES)
def table_delete(
    body: kopf.Body, patch: kopf.Patch, status: dict[str, Any], memo: kopf.Memo, catalog_manifests: kopf.Index, **_: Any
) -> None:
    _handle(
        "DuckLakeTable",
        body,
        patch,
        status,
        lambda spec: delete_table(spec, _catalog_for(spec, catalog_manifests), memo.pool),
        on_invalid="ignore",
    )
