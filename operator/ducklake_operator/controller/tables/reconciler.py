"""The DuckLakeSchema and DuckLakeTable reconcilers: plain functions over specs and the
catalog pool, no kopf. Each returns an ``Outcome``; ``tables.handlers`` publishes it. Plans
are made and applied by the use cases in ``ducklake_operator.use_cases``. Tested directly,
without a cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ...api.v1alpha1.catalog import CatalogSpec
from ...api.v1alpha1.names import BLOCKED, DRIFTED, IN_SYNC, PROGRESSING, READY, UP_TO_DATE
from ...api.v1alpha1.schema import SchemaSpec
from ...api.v1alpha1.table import TableSpec
from ...catalog import Catalog
from ...errors import CatalogNotFound, DuckLakeError
from ...evolution.drift import drift_lines
from ...model.changes import DropSchema, DropTable
from ...model.state import CatalogState
from ...use_cases import apply_plan, plan_for
from ..boundary import Failure, classify
from ..catalog_pool import CatalogPool
from ..metrics import COMMIT_RETRIES, RECONCILE
from ..outcome import Outcome, failed
from ..status import condition, plan_fields, table_fields

# A freshness check of the catalog is trusted this long before planning: a storm of
# reconciles shares one. A plan made on a state this stale is still safe: its commit
# re-checks against what was committed since.
FRESH_FOR = 0.5


class DeletionBlocked(DuckLakeError):
    """A deletion the policy asks for cannot be done yet (it waits, and says why)."""


def _apply(
    spec: TableSpec | SchemaSpec, catalog_spec: CatalogSpec | None, pool: CatalogPool
) -> tuple[Outcome, Catalog | None, Any, Any]:
    generation = spec.ref.generation
    if catalog_spec is None:
        return (
            failed(
                CatalogNotFound(f"waiting for DuckLakeCatalog {spec.catalog!r} (not found in this namespace)"),
                generation,
            ),
            None,
            None,
            None,
        )
    try:
        catalog, _ = pool.catalog(catalog_spec)
        state = pool.state(catalog_spec, catalog, max_age=FRESH_FOR)
        result = apply_plan(catalog, spec, state=state, commit=pool.committer(catalog_spec, catalog))
    except DuckLakeError as exc:
        return failed(exc, generation), None, None, None
    plan = result.plan
    snapshot = result.commit.snapshot_id if result.commit else None
    if result.commit is not None and result.commit.attempts > 1:
        COMMIT_RETRIES.labels(operation=RECONCILE).inc(result.commit.attempts - 1)
    status: dict[str, Any] = {"observedGeneration": generation, **plan_fields(plan, snapshot)}
    events = []
    if plan.is_refused:
        why = "; ".join([b.describe() for b in plan.blocked] + list(plan.unsupported))
        conditions = [
            condition(READY, False, BLOCKED, f"plan {plan.hash} refused, nothing applied: {why}", generation),
            condition(BLOCKED, True, "DestructiveChange" if plan.blocked else "Unsupported", why, generation),
            condition(PROGRESSING, False, BLOCKED, "", generation),
        ]
        events.append(("Warning", BLOCKED, f"plan {plan.hash} refused: {why}"))
    else:
        message = f"applied in snapshot {snapshot}: {plan.summary()}" if snapshot is not None else "up to date"
        conditions = [
            condition(READY, True, "Applied" if snapshot is not None else UP_TO_DATE, message, generation),
            condition(BLOCKED, False, "NotBlocked", "", generation),
            condition(PROGRESSING, False, "Reconciled", "", generation),
        ]
        if snapshot is not None:
            events.append(("Normal", "Applied", message))
    return Outcome(status=status, conditions=conditions, events=events), catalog, result, state


def reconcile_schema(spec: SchemaSpec, catalog_spec: CatalogSpec | None, pool: CatalogPool) -> Outcome:
    outcome, catalog, result, state = _apply(spec, catalog_spec, pool)
    if catalog_spec is not None and catalog is not None and result is not None:
        if result.commit is not None and result.commit.snapshot_id is not None:
            state = pool.state(catalog_spec, catalog, at_least=result.commit.snapshot_id)
        schema = state.schema(spec.name)
        if schema is not None:
            outcome.status.update(snapshot=schema.begin_snapshot, schemaId=schema.schema_id)
    return outcome


def reconcile_table(spec: TableSpec, catalog_spec: CatalogSpec | None, pool: CatalogPool) -> Outcome:
    outcome, catalog, result, state = _apply(spec, catalog_spec, pool)
    if catalog_spec is None or catalog is None or result is None:
        return outcome
    if result.commit is not None and result.commit.snapshot_id is not None:
        state = pool.state(catalog_spec, catalog, at_least=result.commit.snapshot_id)
    table = state.table(spec.schema, spec.name)
    if table is not None:
        outcome.status.update(table_fields(table))
        if not result.plan.is_refused:
            outcome.status["drift"] = []
            outcome.conditions.append(condition(DRIFTED, False, IN_SYNC, "", spec.ref.generation))
    outcome.heavy = result.heavy
    return outcome


def check_table_drift(
    spec: TableSpec, catalog_spec: CatalogSpec | None, pool: CatalogPool, *, state: CatalogState | None = None
) -> Outcome:
    """Timer: compare the catalog with the manifest; report, or revert when onDrift: revert.
    ``state``: the catalog as a pass over many tables read it once (else read now)."""
    if catalog_spec is None:
        return Outcome()
    try:
        if state is None:
            catalog, _ = pool.catalog(catalog_spec)
            state = pool.state(catalog_spec, catalog)
        lines = drift_lines(plan_for(spec, state))
    except DuckLakeError as exc:
        return failed(exc, spec.ref.generation)
    table = state.table(spec.schema, spec.name)
    current = table_fields(table) if table is not None else {}
    if not lines:
        return Outcome(
            status={"drift": [], **current},
            conditions=[condition(DRIFTED, False, IN_SYNC, "", spec.ref.generation)],
        )
    if spec.evolution.on_drift == "revert":
        outcome = reconcile_table(spec, catalog_spec, pool)
        outcome.events.insert(0, ("Warning", "DriftReverted", "; ".join(lines)))
        return outcome
    message = "; ".join(lines)
    return Outcome(
        status={"drift": lines, **current},
        conditions=[condition(DRIFTED, True, "ChangedOutside", message, spec.ref.generation)],
        events=[("Warning", DRIFTED, message)],
    )


def delete_table(spec: TableSpec, catalog_spec: CatalogSpec | None, pool: CatalogPool) -> Outcome:
    """Finalizer: Retain leaves the table; Delete drops it in one snapshot. A catalog that is
    gone does not hold the resource hostage."""
    if spec.deletion_policy != "Delete":
        return Outcome(
            events=[("Normal", "Retained", f"{spec.qualified_name} stays in the lake (deletionPolicy: Retain)")]
        )
    return _drop(
        catalog_spec,
        pool,
        spec,
        lambda state: [DropTable(t.table_id, t.qualified_name)] if (t := state.table(spec.schema, spec.name)) else [],
    )


def delete_schema(spec: SchemaSpec, catalog_spec: CatalogSpec | None, pool: CatalogPool) -> Outcome:
    if spec.deletion_policy != "Delete":
        return Outcome(
            events=[("Normal", "Retained", f"schema {spec.name} stays in the lake (deletionPolicy: Retain)")]
        )

    def drop(state: CatalogState) -> list[Any]:
        schema = state.schema(spec.name)
        if schema is None:
            return []
        tables = sorted(t.name for t in state.tables.values() if t.schema_id == schema.schema_id)
        if tables:
            names = ", ".join(tables[:10]) + (f", ... ({len(tables)} in all)" if len(tables) > 10 else "")
            raise DeletionBlocked(
                f"schema {spec.name} still holds tables ({names}): the schema is dropped once they are gone (delete "
                "their DuckLakeTable resources with deletionPolicy: Delete, or drop them in DuckDB), or set "
                "deletionPolicy: Retain to keep the schema"
            )
        return [DropSchema(schema.schema_id, schema.name)]

    return _drop(catalog_spec, pool, spec, drop)


def _drop(
    catalog_spec: CatalogSpec | None,
    pool: CatalogPool,
    spec: TableSpec | SchemaSpec,
    changes: Callable[[CatalogState], list[Any]],
) -> Outcome:
    if catalog_spec is None:
        return Outcome(events=[("Warning", "CatalogGone", f"catalog {spec.catalog!r} is gone; nothing to drop")])
    try:
        catalog, _ = pool.catalog(catalog_spec)
        todo = changes(catalog.state(include_files=False))
        if not todo:
            return Outcome(events=[("Normal", "AlreadyGone", "nothing to drop")])
        result = catalog.commit(todo, message=f"{spec.ref.kind} {spec.ref.name} deleted (deletionPolicy: Delete)")
    except DeletionBlocked as exc:
        failure = Failure("DeletionBlocked", str(exc), True, waits=True)
        return Outcome(
            conditions=[condition(READY, False, failure.reason, failure.message, spec.ref.generation)],
            events=[("Warning", failure.reason, failure.message)],
            failure=failure,
        )
    except DuckLakeError as exc:
        outcome = failed(exc, spec.ref.generation)
        if outcome.failure is None:  # never let a finalizer go without doing what the policy says
            outcome.failure = replace(classify(exc), temporary=True, waits=True)
        return outcome
    return Outcome(events=[("Normal", "Dropped", f"dropped in snapshot {result.snapshot_id}")])
