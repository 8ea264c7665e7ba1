"""Catalog-wide housekeeping: expireSnapshots, cleanupFiles, deleteOrphanFiles.

These need no Spark: they are catalog transactions and file deletions, run by the job
driver (or ``ducklake run-job``). Each returns a JSON-serialisable result; ``dry_run``
lists what would go and changes nothing. Files are local or on S3 (``storage``).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from ducklake_operator import storage
from ducklake_operator.catalog import Catalog
from ducklake_operator.catalog.expire import expire_snapshots
from ducklake_operator.catalog.paths import join
from ducklake_operator.catalog.read import data_path, load_snapshots, referenced_files
from ducklake_operator.catalog.tables import T
from ducklake_operator.maintenance.expiry import parse_duration, parse_snapshot_time, plan_expiry

from .runtime import Report

DEFAULT_CLEANUP_AGE = "3d"  # as the managed services do (DuckDB's default is 2 days)


def expire(
    catalog: Catalog,
    *,
    older_than: str | None = None,
    retain_last: int | None = None,
    versions: list[int] | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    now = datetime.now(UTC)
    report = Report("expireSnapshots")
    with catalog.engine.connect().execution_options(ducklake_write=True) as conn, conn.begin():
        snapshots = [(s.snapshot_id, parse_snapshot_time(s.snapshot_time)) for s in load_snapshots(conn)]
        if versions is not None:
            latest = max(sid for sid, _ in snapshots)
            known = {sid for sid, _ in snapshots}
            ids = tuple(v for v in sorted(versions) if v in known and v != latest)
        else:
            ids = plan_expiry(
                snapshots,
                now=now,
                older_than=parse_duration(older_than) if older_than else None,
                retain_last=retain_last,
            ).expire
        if dry_run:
            return report.done(dryRun=True, expired=list(ids))
        result = expire_snapshots(conn, ids, dialect=catalog.location.dialect, pg_schema=catalog.location.schema)
    return report.done(
        dryRun=False,
        expired=list(result.expired),
        filesScheduled=len(result.files_scheduled),
        tablesPurged=list(result.tables_purged),
    )


def cleanup_files(catalog: Catalog, *, older_than: str = DEFAULT_CLEANUP_AGE, dry_run: bool = False) -> dict[str, Any]:
    """Delete files scheduled for deletion longer than ``older_than`` ago, then their rows."""
    cutoff = datetime.now(UTC) - parse_duration(older_than)
    report = Report("cleanupFiles")
    sched = T["ducklake_files_scheduled_for_deletion"]
    with catalog.engine.connect().execution_options(ducklake_write=True) as conn, conn.begin():
        root = data_path(conn)
        due = [r for r in conn.execute(sa.select(sched)) if parse_snapshot_time(r.schedule_start) < cutoff]
        deleted = [r.path for r in due]
        if dry_run:
            return report.done(dryRun=True, deleted=deleted)
        for r in due:
            storage.delete(join(root, r.path) if r.path_is_relative else r.path)  # already gone: forget it too
        keys = [(r.data_file_id, r.path) for r in due]
        for i in range(0, len(keys), 500):  # one statement per 500 rows, not one per file
            conn.execute(sched.delete().where(sa.tuple_(sched.c.data_file_id, sched.c.path).in_(keys[i : i + 500])))
    return report.done(dryRun=False, deleted=deleted)


def delete_orphan_files(
    catalog: Catalog, *, older_than: str = DEFAULT_CLEANUP_AGE, dry_run: bool = False
) -> dict[str, Any]:
    """Delete Parquet files under the data path that no catalog row references and that are
    older than ``older_than`` (files of running, uncommitted writes are young). Never
    touches anything outside the data path, and does not follow symlinks."""
    cutoff = datetime.now(UTC).timestamp() - parse_duration(older_than).total_seconds()
    report = Report("deleteOrphanFiles")
    with catalog.engine.connect() as conn, conn.begin():
        root = data_path(conn)
        referenced = referenced_files(conn)
    if not storage.is_remote(root):
        root = os.path.realpath(root) + "/"
    orphans = sorted(
        f.path[len(root) :]
        for f in storage.list_files(root)
        if f.path.startswith(root)
        and f.path.endswith(".parquet")
        and f.mtime < cutoff
        and f.path[len(root) :] not in referenced
        and f.path not in referenced
    )
    if not dry_run:
        for rel in orphans:
            storage.delete(root + rel)
    return report.done(dryRun=dry_run, deleted=orphans)
