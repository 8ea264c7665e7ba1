"""Catalog-wide housekeeping: expireSnapshots, cleanupFiles, deleteOrphanFiles.

These need no Spark: they are catalog transactions (``catalog.housekeeping``) and file
deletions, run by the job driver (or ``ducklake run-job``). Each returns a
JSON-serialisable result; ``dry_run`` lists what would go and changes nothing. Files are
local or on S3 (``storage``).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

from ducklake_operator import storage
from ducklake_operator.catalog import Catalog, housekeeping
from ducklake_operator.maintenance.expiry import parse_snapshot_time, plan_expiry
from ducklake_operator.model.durations import parse_duration
from ducklake_operator.model.job_params import (
    CLEANUP_FILES,
    DELETE_ORPHAN_FILES,
    EXPIRE_SNAPSHOTS,
    CleanupArgs,
    ExpireArgs,
    OrphanArgs,
)
from ducklake_operator.model.maintenance_params import CLEANUP_OLDER_THAN, DRY_RUN, ORPHAN_OLDER_THAN
from ducklake_operator.model.state import SnapshotRecord

from .job_steps import Report
from .operation_plugin import JobContext, OperationPlugin


def expire(
    catalog: Catalog,
    *,
    older_than: str | None = None,
    retain_last: int | None = None,
    versions: list[int] | None = None,
    dry_run: bool = DRY_RUN.default,
) -> dict[str, Any]:
    now = datetime.now(UTC)
    report = Report("expireSnapshots")

    def choose(records: list[SnapshotRecord]) -> tuple[int, ...]:
        snapshots = [(s.snapshot_id, parse_snapshot_time(s.snapshot_time)) for s in records]
        if versions is not None:
            latest = max(sid for sid, _ in snapshots)
            known = {sid for sid, _ in snapshots}
            return tuple(v for v in sorted(versions) if v in known and v != latest)
        return plan_expiry(
            snapshots,
            now=now,
            older_than=parse_duration(older_than) if older_than else None,
            retain_last=retain_last,
        ).expire

    result = housekeeping.expire(catalog, choose, dry_run=dry_run)
    if dry_run:
        return report.done(dryRun=True, expired=list(result.expired))
    return report.done(
        dryRun=False,
        expired=list(result.expired),
        filesScheduled=len(result.files_scheduled),
        tablesPurged=list(result.tables_purged),
    )


def cleanup_files(
    catalog: Catalog, *, older_than: str = CLEANUP_OLDER_THAN.default, dry_run: bool = DRY_RUN.default
) -> dict[str, Any]:
    """Delete files scheduled for deletion longer than ``older_than`` ago, then their rows."""
    cutoff = datetime.now(UTC) - parse_duration(older_than)
    report = Report("cleanupFiles")
    deleted = housekeeping.delete_scheduled_files(
        catalog,
        lambda f: parse_snapshot_time(f.schedule_start) < cutoff,
        None if dry_run else storage.delete,  # already gone: forgotten too
    )
    return report.done(dryRun=dry_run, deleted=[f.path for f in deleted])


def delete_orphan_files(
    catalog: Catalog, *, older_than: str = ORPHAN_OLDER_THAN.default, dry_run: bool = DRY_RUN.default
) -> dict[str, Any]:
    """Delete Parquet files under the data path that no catalog row references and that are
    older than ``older_than`` (files of running, uncommitted writes are young). Never
    touches anything outside the data path, and does not follow symlinks."""
    cutoff = datetime.now(UTC).timestamp() - parse_duration(older_than).total_seconds()
    report = Report("deleteOrphanFiles")
    root, referenced = housekeeping.lake_files(catalog)
    if not storage.is_remote(root):  # listed by its real path: name the referenced files the same way
        real = os.path.realpath(root) + "/"
        referenced = {real + p[len(root) :] if p.startswith(root) else p for p in referenced}
        root = real
    orphans = sorted(
        f.path[len(root) :]
        for f in storage.list_files(root)
        if f.path.startswith(root) and f.path.endswith(".parquet") and f.mtime < cutoff and f.path not in referenced
    )
    if not dry_run:
        for rel in orphans:
            storage.delete(root + rel)
    return report.done(dryRun=dry_run, deleted=orphans)


def run_expire(job: JobContext, args: ExpireArgs) -> dict[str, Any]:
    return expire(
        job.catalog,
        older_than=args.older_than,
        retain_last=args.retain_last,
        versions=args.versions,
        dry_run=args.dry_run,
    )


def run_cleanup_files(job: JobContext, args: CleanupArgs) -> dict[str, Any]:
    return cleanup_files(job.catalog, older_than=args.older_than, dry_run=args.dry_run)


def run_delete_orphan_files(job: JobContext, args: OrphanArgs) -> dict[str, Any]:
    return delete_orphan_files(job.catalog, older_than=args.older_than, dry_run=args.dry_run)


# catalog-wide: neither a table nor a runner (their transactions are the catalog's)
EXPIRE = OperationPlugin(EXPIRE_SNAPSHOTS, run_expire)
CLEANUP = OperationPlugin(CLEANUP_FILES, run_cleanup_files)
ORPHANS = OperationPlugin(DELETE_ORPHAN_FILES, run_delete_orphan_files)
