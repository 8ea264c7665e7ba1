"""Use cases shared by the CLI and the controller: connect, plan, apply, detect drift.

Nothing here knows about Kubernetes or argparse: callers pass specs and credentials in, and
get plans and results out.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from . import storage
from .api.v1alpha1.catalog import CatalogSpec, PostgresSpec
from .api.v1alpha1.schema import SchemaSpec
from .api.v1alpha1.table import TableSpec
from .catalog import Catalog, CommitResult
from .catalog.commit import DEFAULT_AUTHOR
from .errors import CommitConflict
from .evolution.drift import drift_lines
from .evolution.heavy import HeavyJob, heavy_jobs
from .evolution.manifest_plans import commit_message, counts_files, plan_table_names
from .evolution.manifest_plans import plan_for as plan_for  # the CLI's, the controller's and the tests'
from .lake_access import Credentials as Credentials  # where callers found them first
from .lake_access import location_for as location_for
from .lake_access import s3_settings as s3_settings
from .model.plans import TablePlan
from .model.state import CatalogState, SchemaState, SnapshotInfo
from .storage import S3Config

MAX_REPLANS = 3


def lake_identity(spec: CatalogSpec) -> tuple[object, ...]:
    """What makes two DuckLakeCatalog resources the same lake: the metadata database."""
    backend = spec.backend
    if isinstance(backend, PostgresSpec):
        return ("postgres", backend.host, backend.port, backend.database, backend.schema or "public")
    return ("sqlite", os.path.realpath(backend.path))


def ensure_catalog(spec: CatalogSpec, credentials: Credentials | None = None) -> tuple[Catalog, bool]:
    """Adopt the catalog (format version and data path checked) or create it."""
    return Catalog.open_or_create(location_for(spec, credentials), spec.data_path, dict(spec.options))


def empty_state(spec: CatalogSpec) -> CatalogState:
    """What a catalog that does not exist yet will look like once created (for plans)."""
    main = SchemaState(0, "", "main", "main/", True, 0)
    return CatalogState(SnapshotInfo(0, None, 0, 1, 0), "1.0", spec.data_path, dict(spec.options), {"main": main}, {})


@dataclass(frozen=True)
class ApplyResult:
    plan: TablePlan
    commit: CommitResult | None  # None: nothing to do (no light change), or refused
    heavy: tuple[HeavyJob, ...] = ()  # the job that does the plan (its heavy changes and the rest); nothing committed


def apply_plan(
    catalog: Catalog,
    spec: TableSpec | SchemaSpec,
    *,
    author: str = DEFAULT_AUTHOR,
    state: CatalogState | None = None,
    commit: Callable[..., CommitResult] | None = None,
) -> ApplyResult:
    """Plan against the catalog and commit the plan as one snapshot. A plan with heavy changes
    commits nothing here: the result names the job they need (``evolution.heavy``), for the
    caller to run with the manifest, and that job commits the whole plan in its snapshot.

    A refused plan commits nothing. If the catalog moved under the plan (a conflicting
    concurrent commit), the plan is made again from fresh state, never replayed.
    ``commit``: ``Catalog.commit`` or a stand-in with its signature (the controller's
    ``CommitBatcher`` lets concurrent plans share a snapshot).
    """
    commit = commit or catalog.commit
    attempt = 0
    while True:
        attempt += 1
        current = state if state is not None and attempt == 1 else read_for_plan(catalog, spec)
        plan = plan_for(spec, current)
        heavy = heavy_jobs(plan, spec.evolution) if isinstance(spec, TableSpec) else ()
        if plan.is_empty or plan.is_refused or not plan.light_changes or heavy:
            return ApplyResult(plan, None, heavy)
        message, extra = commit_message(spec, plan)
        try:
            result = commit(
                plan.light_changes, author=author, message=message, extra_info=extra, base_snapshot=plan.base_snapshot
            )
            return ApplyResult(plan, result, heavy)
        except CommitConflict:
            if attempt >= MAX_REPLANS:
                raise


def read_for_plan(catalog: Catalog, spec: TableSpec | SchemaSpec) -> CatalogState:
    """Only what planning ``spec`` needs: its table (and the tables it may be renamed from),
    with its files when a heavy change's plan counts them."""
    if isinstance(spec, TableSpec):
        return catalog.state(include_files=counts_files(spec), table_names=plan_table_names(spec))
    return catalog.state(include_files=False, table_names=[])


def drift(spec: TableSpec | SchemaSpec, state: CatalogState) -> list[str]:
    """How the catalog differs from the manifest (someone ran ALTER TABLE outside)."""
    return drift_lines(plan_for(spec, state))


@dataclass(frozen=True)
class DestroyResult:
    files_deleted: int
    tables_dropped: int


def destroy_catalog(catalog: Catalog, s3: S3Config | None = None) -> DestroyResult:
    """A catalog's ``deletionPolicy: Delete``: holding every catalog table exclusively,
    delete every file the catalog refers to (live, time-travel, scheduled for deletion),
    then drop the tables, in one transaction. A client still attached makes it fail before
    anything is deleted; a failure part-way through the files leaves a catalog to retry
    from, never files nobody knows of. Files under the data path that no row refers to
    (orphans) are not touched: run deleteOrphanFiles before. ``s3``: the lake's S3
    settings (``s3_settings``)."""
    deleted, dropped = catalog.drop(lambda path: storage.delete(path, s3))
    return DestroyResult(files_deleted=deleted, tables_dropped=len(dropped))
