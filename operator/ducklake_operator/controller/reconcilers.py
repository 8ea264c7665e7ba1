"""Reconcile functions: plain functions over specs and a catalog pool, no kopf.

Each returns an ``Outcome`` (status fields, conditions, events, or a failure to retry);
``handlers`` turns it into kopf calls. Tested directly, without a cluster.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..catalog import Catalog, CommitResult
from ..catalog.batch import CommitBatcher
from ..catalog.state_cache import StateCache
from ..errors import CatalogNotFound, CommitConflict, DuckLakeError
from ..evolution.drift import drift_lines
from ..evolution.heavy import HeavyJob
from ..model.changes import DropSchema, DropTable
from ..model.spec import CatalogSpec, SchemaSpec, TableSpec
from ..model.state import CatalogState
from ..reconcile import Credentials, apply_plan, destroy_catalog, ensure_catalog, location_for, plan_for, s3_settings
from .boundary import Failure, classify
from .metrics import CATALOG_QUERIES, COMMIT_CONFLICTS, COMMIT_RETRIES, RECONCILE
from .status import condition, plan_fields, table_fields

# A freshness check of the catalog is trusted this long before planning: a storm of
# reconciles shares one. A plan made on a state this stale is still safe: its commit
# re-checks against what was committed since.
FRESH_FOR = 0.5


class DeletionBlocked(DuckLakeError):
    """A deletion the policy asks for cannot be done yet (it waits, and says why)."""


@dataclass
class Outcome:
    status: dict[str, Any] = field(default_factory=dict)
    conditions: list[dict[str, Any]] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (Normal|Warning, reason, message)
    failure: Failure | None = None  # temporary: retry after failure.delay
    heavy: tuple[HeavyJob, ...] = ()  # jobs the applied plan's heavy changes need (``heavy_runs`` starts them)


class CatalogPool:
    """Open catalogs (engine pools) per catalog resource, each with its ``StateCache``: a
    reconcile asks whether anything changed (one query) and reuses the cached state when
    nothing did, so resyncing many tables costs one small query per table, not a full read.
    """

    def __init__(self, credentials: Credentials | None = None) -> None:
        self.credentials = credentials
        self._catalogs: dict[tuple[str, str], tuple[tuple[Any, ...], Catalog]] = {}
        self._states: dict[tuple[str, str], StateCache] = {}
        self._batchers: dict[tuple[str, str], tuple[Catalog, CommitBatcher]] = {}
        self._lock = threading.Lock()
        self.queries = 0  # statements sent to catalog databases (for the benchmark)

    def _key(self, spec: CatalogSpec) -> tuple[str, str]:
        return (spec.ref.namespace or "", spec.ref.name)

    def _count(self, statement: str) -> None:
        if not statement.startswith("BEGIN"):
            self.queries += 1
            CATALOG_QUERIES.inc()

    def catalog(self, spec: CatalogSpec, *, create: bool = False) -> tuple[Catalog, bool]:
        location = location_for(spec, self.credentials)
        identity = (location, spec.data_path)
        key = self._key(spec)
        with self._lock:
            cached = self._catalogs.get(key)
            if cached and cached[0] == identity:
                return cached[1], False
        if create:
            catalog, created = ensure_catalog(spec, self.credentials)
        else:
            catalog, created = Catalog.open(location, expected_data_path=spec.data_path), False
        catalog.on_statement(self._count)
        with self._lock:
            old = self._catalogs.pop(key, None)
            self._catalogs[key] = (identity, catalog)
            self._states.pop(key, None)
        if old:
            old[1].close()
        return catalog, created

    def forget(self, spec: CatalogSpec) -> None:
        with self._lock:
            old = self._catalogs.pop(self._key(spec), None)
            self._states.pop(self._key(spec), None)
            self._batchers.pop(self._key(spec), None)
        if old:
            old[1].close()

    def state(self, spec: CatalogSpec, catalog: Catalog, **freshness: Any) -> CatalogState:
        """The catalog's current state, from its ``StateCache`` (``at_least``, ``max_age``)."""
        key = self._key(spec)
        with self._lock:
            cache = self._states.get(key)
            if cache is None or cache.catalog is not catalog:
                cache = self._states[key] = StateCache(catalog)
        return cache.state(**freshness)

    def committer(self, spec: CatalogSpec, catalog: Catalog) -> Callable[..., CommitResult]:
        """``catalog.commit`` through the catalog's ``CommitBatcher``: plans reconciled at
        once (a folder applied by GitOps) share snapshots instead of colliding."""
        key = self._key(spec)
        with self._lock:
            cached = self._batchers.get(key)
            if cached is None or cached[0] is not catalog:
                cached = self._batchers[key] = (catalog, CommitBatcher(catalog.commit))
        return cached[1].commit

    def close(self) -> None:
        with self._lock:
            for _, catalog in self._catalogs.values():
                catalog.close()
            self._catalogs.clear()
            self._states.clear()
            self._batchers.clear()


def _failed(exc: BaseException, generation: int | None, extra: list[dict[str, Any]] | None = None) -> Outcome:
    failure = classify(exc)
    if isinstance(exc, CommitConflict):
        COMMIT_CONFLICTS.labels(operation=RECONCILE).inc()
    conditions = [
        condition("Ready", False, failure.reason, failure.message, generation),
        condition("Progressing", False, failure.reason, "", generation),
    ] + (extra or [])
    return Outcome(
        conditions=conditions,
        events=[("Warning", failure.reason, failure.message)],
        failure=failure if failure.temporary else None,
    )


# ------------------------------------------------------------------ catalogs


def reconcile_catalog(spec: CatalogSpec, pool: CatalogPool) -> Outcome:
    generation = spec.ref.generation
    try:
        catalog, created = pool.catalog(spec, create=True)
        snap = catalog.snapshot()
        state_version = catalog.state(table_names=[]).version
    except DuckLakeError as exc:
        reachable = classify(exc).reason != "CatalogUnreachable"
        return _failed(
            exc, generation, [condition("CatalogReachable", reachable, classify(exc).reason, str(exc), generation)]
        )
    location = catalog.location
    events = [("Normal", "Created", f"initialised a new DuckLake catalog at {location.describe()}")] if created else []
    return Outcome(
        status={
            "formatVersion": state_version,
            "currentSnapshot": snap.snapshot_id,
            "schemaVersion": snap.schema_version,
            "backend": location.kind,
            "dataPath": spec.data_path,
            "observedGeneration": generation,
        },
        conditions=[
            condition(
                "Ready", True, "Created" if created else "Adopted", f"catalog at {location.describe()}", generation
            ),
            condition("CatalogReachable", True, "Connected", "", generation),
        ],
        events=events,
    )


def delete_catalog(
    spec: CatalogSpec, pool: CatalogPool, dependents: list[str], sharing: list[str] | None = None
) -> Outcome:
    """Finalizer. Retain leaves the lake as it is. Delete waits until no DuckLakeSchema or
    DuckLakeTable uses the catalog any more (their own finalizers need it), then deletes
    every file the catalog refers to and drops its metadata tables, unless another
    DuckLakeCatalog resource (``sharing``) declares the same lake: then it is retained."""
    if spec.deletion_policy != "Delete":
        pool.forget(spec)
        return Outcome(
            events=[("Normal", "Retained", "the lake stays: metadata and files untouched (deletionPolicy: Retain)")]
        )
    if sharing:
        pool.forget(spec)
        return Outcome(
            events=[
                (
                    "Warning",
                    "LakeShared",
                    f"not deleting the lake: {', '.join(sorted(sharing))} declare the same "
                    "catalog database; metadata and files are retained",
                )
            ]
        )
    if dependents:
        names = ", ".join(sorted(dependents)[:5]) + (", ..." if len(dependents) > 5 else "")
        return Outcome(
            events=[("Normal", "WaitingForDependents", f"{len(dependents)} resources still use this catalog: {names}")],
            failure=Failure(
                "DependentsRemain",
                f"waiting for {len(dependents)} resources that use this catalog to be deleted first: {names}",
                True,
                waits=True,
            ),
        )
    try:
        catalog, _ = pool.catalog(spec)
    except CatalogNotFound:
        return Outcome(events=[("Normal", "AlreadyGone", "no catalog to delete")])
    except DuckLakeError as exc:
        return _failed(exc, spec.ref.generation)
    try:
        result = destroy_catalog(catalog, s3_settings(spec, pool.credentials))
    except (DuckLakeError, OSError) as exc:
        failure = Failure("DeleteFailed", f"deleting the lake failed part-way, will retry: {exc}", True, cap=30)
        return Outcome(events=[("Warning", failure.reason, failure.message)], failure=failure)
    finally:
        pool.forget(spec)
    return Outcome(
        events=[
            (
                "Normal",
                "Deleted",
                f"deleted {result.files_deleted} files and dropped {result.tables_dropped} "
                "metadata tables (deletionPolicy: Delete)",
            )
        ]
    )


# ------------------------------------------------------------------ schemas and tables


def _apply(
    spec: TableSpec | SchemaSpec, catalog_spec: CatalogSpec | None, pool: CatalogPool
) -> tuple[Outcome, Catalog | None, Any, Any]:
    generation = spec.ref.generation
    if catalog_spec is None:
        return (
            _failed(
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
        return _failed(exc, generation), None, None, None
    plan = result.plan
    snapshot = result.commit.snapshot_id if result.commit else None
    if result.commit is not None and result.commit.attempts > 1:
        COMMIT_RETRIES.labels(operation=RECONCILE).inc(result.commit.attempts - 1)
    status: dict[str, Any] = {"observedGeneration": generation, **plan_fields(plan, snapshot)}
    events = []
    if plan.is_refused:
        why = "; ".join([b.describe() for b in plan.blocked] + list(plan.unsupported))
        conditions = [
            condition("Ready", False, "Blocked", f"plan {plan.hash} refused, nothing applied: {why}", generation),
            condition("Blocked", True, "DestructiveChange" if plan.blocked else "Unsupported", why, generation),
            condition("Progressing", False, "Blocked", "", generation),
        ]
        events.append(("Warning", "Blocked", f"plan {plan.hash} refused: {why}"))
    else:
        message = f"applied in snapshot {snapshot}: {plan.summary()}" if snapshot is not None else "up to date"
        conditions = [
            condition("Ready", True, "Applied" if snapshot is not None else "UpToDate", message, generation),
            condition("Blocked", False, "NotBlocked", "", generation),
            condition("Progressing", False, "Reconciled", "", generation),
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
            outcome.conditions.append(condition("Drifted", False, "InSync", "", spec.ref.generation))
    outcome.heavy = result.heavy
    return outcome


def check_table_drift(
    spec: TableSpec, catalog_spec: CatalogSpec | None, pool: CatalogPool, *, max_age: float = 0.0
) -> Outcome:
    """Timer: compare the catalog with the manifest; report, or revert when onDrift: revert.
    ``max_age``: how old a freshness check of the catalog may be (a pass over many tables
    reads the catalog once)."""
    if catalog_spec is None:
        return Outcome()
    try:
        catalog, _ = pool.catalog(catalog_spec)
        state = pool.state(catalog_spec, catalog, max_age=max_age)
        lines = drift_lines(plan_for(spec, state))
    except DuckLakeError as exc:
        return _failed(exc, spec.ref.generation)
    table = state.table(spec.schema, spec.name)
    current = table_fields(table) if table is not None else {}
    if not lines:
        return Outcome(
            status={"drift": [], **current},
            conditions=[condition("Drifted", False, "InSync", "", spec.ref.generation)],
        )
    if spec.evolution.on_drift == "revert":
        outcome = reconcile_table(spec, catalog_spec, pool)
        outcome.events.insert(0, ("Warning", "DriftReverted", "; ".join(lines)))
        return outcome
    message = "; ".join(lines)
    return Outcome(
        status={"drift": lines, **current},
        conditions=[condition("Drifted", True, "ChangedOutside", message, spec.ref.generation)],
        events=[("Warning", "Drifted", message)],
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
            conditions=[condition("Ready", False, failure.reason, failure.message, spec.ref.generation)],
            events=[("Warning", failure.reason, failure.message)],
            failure=failure,
        )
    except DuckLakeError as exc:
        outcome = _failed(exc, spec.ref.generation)
        if outcome.failure is None:  # never let a finalizer go without doing what the policy says
            outcome.failure = replace(classify(exc), temporary=True, waits=True)
        return outcome
    return Outcome(events=[("Normal", "Dropped", f"dropped in snapshot {result.snapshot_id}")])
