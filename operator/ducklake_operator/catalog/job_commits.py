"""What the catalog knows of a DuckLakeJob's run (``model.job_marker``): the snapshot it
committed, if any, whether a session of it is still open, and the files it wrote that no
catalog row refers to."""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa

from .. import storage
from ..errors import CatalogUnavailable, SpecError, TableNotFound
from ..model.job_marker import ends_run, file_marker, is_marked, job_commit_report, session_name
from ..model.names import same_name
from ..model.state import SnapshotRecord
from ..storage import S3Config
from .catalog import Catalog
from .connect import describe_db_error
from .read_files import load_lake_paths, referenced_files
from .read_snapshots import load_snapshots
from .tables import CATALOG_TABLES


def find_job_commit(catalog: Catalog, uid: str, after_snapshot: int | None = None) -> SnapshotRecord | None:
    """The snapshot that ended the run of the job with ``uid`` (after ``after_snapshot``): its
    only commit, or the last of a run that commits several (``model.job_marker.ends_run``; the
    first such, should there be more);
    None while it has not landed, or landed only in part (``job_commits`` lists those)."""
    ending = [s for s in job_commits(catalog, uid, after_snapshot) if ends_run(_report(s, uid))]
    return ending[0] if ending else None


def job_commits(catalog: Catalog, uid: str, after_snapshot: int | None = None) -> list[SnapshotRecord]:
    """Every snapshot the job with ``uid`` committed, oldest first. ``commit_extra_info`` is
    free text to DuckDB: rows containing the uid are read, and only those whose JSON names
    the job count."""
    with catalog.reading() as conn:
        found = load_snapshots(conn, after_snapshot, extra_info_containing=uid)
    return [s for s in found if job_commit_report(s.commit_extra_info, uid) is not None]


def _report(snapshot: SnapshotRecord, uid: str) -> dict[str, Any]:
    return job_commit_report(snapshot.commit_extra_info, uid) or {}


def job_sessions_ended(catalog: Catalog, uid: str, *, timeout: float = 10.0, poll: float = 0.2) -> bool:
    """Whether no session of the job with ``uid`` is left in the catalog database, waiting
    up to ``timeout`` seconds. Once the job's process has died, PostgreSQL ends its session
    when it notices, deciding a transaction that was committing; only then does "no commit
    of the job" mean it will not commit. SQLite: a dead process holds no transaction."""
    if catalog.location.kind != "postgres":
        return True
    deadline = time.monotonic() + timeout
    query = sa.text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :name")
    with catalog.engine.connect() as conn:
        while True:
            left = conn.execute(query, {"name": session_name(uid)}).scalar()
            conn.rollback()  # a fresh view of pg_stat_activity each time
            if not left:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll)


def end_job_sessions(catalog: Catalog, uid: str) -> int:
    """End every catalog session of the job with ``uid`` (``pg_terminate_backend``): a
    transaction it had open is rolled back, unless its COMMIT was processed first; either
    way its outcome is decided once the sessions are gone (``job_sessions_ended``). How many
    were ended. The catalog's role may end its own sessions (the job's are the same role's,
    from the catalog's Secret); otherwise PostgreSQL refuses: ``CatalogUnavailable``.
    SQLite: nothing to end (a dead process holds no transaction)."""
    if catalog.location.kind != "postgres":
        return 0
    query = sa.text(
        "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE application_name = :name AND pid <> pg_backend_pid()"
    )
    try:
        with catalog.engine.connect() as conn:
            ended = conn.execute(query, {"name": session_name(uid)}).scalar()
            conn.rollback()
    except sa.exc.DBAPIError as exc:
        raise CatalogUnavailable(f"could not end the job's catalog sessions: {describe_db_error(exc)}") from None
    return int(ended or 0)


def uncommitted_files(catalog: Catalog, table: str, uid: str, *, s3: S3Config | None = None) -> list[str]:
    """The files the job with ``uid`` wrote under the directory of ``table`` ("schema.table",
    any version of it, so a rename does not hide them) that no catalog row refers to. Files
    are listed before the catalog is read, so one committed meanwhile is not among them."""
    schema, dot, name = table.partition(".")
    if not dot:
        raise SpecError(f"table {table!r} is not schema.table")
    marker = file_marker(uid)
    with catalog.reading() as conn:
        directories = {load_lake_paths(conn).tables[i] for i in _table_ids(conn, schema, name)}
    if not directories:
        raise TableNotFound(f"table {table} does not exist")
    candidates = [
        f.path
        for directory in sorted(directories)
        for f in storage.list_files(directory, s3)
        if is_marked(f.path, marker)
    ]
    if not candidates:
        return []
    with catalog.reading() as conn:
        referenced = referenced_files(conn, load_lake_paths(conn))
    return [path for path in candidates if path not in referenced]


def delete_uncommitted_files(catalog: Catalog, table: str, uid: str, *, s3: S3Config | None = None) -> int:
    """Delete ``uncommitted_files``; how many were deleted (not gone already). Call it once the
    run has ended."""
    return sum(1 for path in uncommitted_files(catalog, table, uid, s3=s3) if storage.delete(path, s3))


def _table_ids(conn: sa.Connection, schema: str, name: str) -> set[int]:
    """Ids of every table that was ever ``schema.name``, names compared as DuckDB does (``names.same_name``:
    ASCII case only; SQL's ``lower`` folds more on PostgreSQL, and differently on SQLite)."""
    tb, sc = CATALOG_TABLES["ducklake_table"], CATALOG_TABLES["ducklake_schema"]
    rows = conn.execute(
        sa.select(tb.c.table_id, sc.c.schema_name, tb.c.table_name).select_from(
            tb.join(sc, sc.c.schema_id == tb.c.schema_id)
        )
    )
    return {r.table_id for r in rows if same_name(r.schema_name, schema) and same_name(r.table_name, name)}
