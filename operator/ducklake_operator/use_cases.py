"""Use cases shared by the CLI and the controller: connect, plan, apply, detect drift.

Nothing here knows about Kubernetes or argparse: callers pass specs and credentials in, and
get plans and results out.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass

from . import storage
from .catalog import Catalog, CatalogLocation, CommitResult
from .catalog.commit import DEFAULT_AUTHOR
from .errors import CommitConflict, DuckLakeError
from .evolution.drift import drift_lines
from .evolution.heavy import HeavyJob, heavy_jobs
from .evolution.planner import plan_schema, plan_table
from .model.plans import TablePlan
from .model.spec import CatalogSpec, PostgresSpec, SchemaSpec, TableSpec
from .model.state import CatalogState, SchemaState, SnapshotInfo
from .storage import S3Config

MAX_REPLANS = 3

Credentials = Callable[
    [str, str, str, "str | None"], tuple[str | None, str | None]
]  # (secret, user key, pw key, namespace)


def location_for(spec: CatalogSpec, credentials: Credentials | None = None) -> CatalogLocation:
    backend = spec.backend
    if isinstance(backend, PostgresSpec):
        user = password = None
        if backend.credentials is not None and credentials is not None:
            c = backend.credentials
            user, password = credentials(c.name, c.username_key, c.password_key, spec.ref.namespace)
        return CatalogLocation(
            kind="postgres",
            host=backend.host,
            port=backend.port,
            database=backend.database,
            schema=backend.schema,
            user=user,
            password=password,
            sslmode=backend.ssl_mode,
        )
    return CatalogLocation(kind="sqlite", path=backend.path)


def s3_settings(spec: CatalogSpec, credentials: Credentials | None = None) -> S3Config | None:
    """S3 settings for a catalog whose data path is ``s3://``: ``spec.storage.s3`` over the
    standard AWS environment; keys from its ``credentialsSecretRef`` when ``credentials``
    can read Secrets (the controller), else from the environment (the CLI)."""
    if not spec.data_path.startswith("s3://"):
        return None
    env, s3 = S3Config.from_env(), spec.s3
    if s3 is None:
        return env
    key, secret, token = env.access_key, env.secret_key, env.session_token
    if s3.credentials is not None and credentials is not None:
        c = s3.credentials
        (key, secret), token = credentials(c.name, c.username_key, c.password_key, spec.ref.namespace), None
    return S3Config(
        endpoint=s3.endpoint or env.endpoint,
        region=s3.region or env.region,
        access_key=key,
        secret_key=secret,
        session_token=token,
        url_style=s3.url_style,
    )


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


def commit_message(spec: TableSpec | SchemaSpec, plan: TablePlan) -> tuple[str, str]:
    message = f"{spec.ref.kind} {spec.ref.name}: {'; '.join(c.describe() for c in plan.light_changes)}"
    extra = json.dumps(
        {"manifest": spec.ref.source or spec.ref.name, "generation": spec.ref.generation, "planHash": plan.hash},
        sort_keys=True,
    )
    return message, extra


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


def plan_table_names(spec: TableSpec) -> list[tuple[str, str]]:
    """The tables planning ``spec`` reads: its own, and those it may be renamed from."""
    return [(spec.schema, spec.name)] + [(spec.schema, old) for old in spec.renamed_from]


def counts_files(spec: TableSpec) -> bool:
    """Its plan may have heavy changes, whose notes count the files they rewrite."""
    return spec.evolution.type_changes == "rewrite"


def plan_for(
    spec: TableSpec | SchemaSpec, state: CatalogState, pending_schemas: frozenset[str] = frozenset()
) -> TablePlan:
    if isinstance(spec, TableSpec):
        return plan_table(spec, state, pending_schemas)
    if isinstance(spec, SchemaSpec):
        return plan_schema(spec, state)
    raise DuckLakeError(f"{spec.ref.kind} has no schema plan")


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
