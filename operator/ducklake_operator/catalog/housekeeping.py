"""The catalog side of the housekeeping jobs (expireSnapshots, cleanupFiles,
deleteOrphanFiles): none writes a snapshot. Driver failures are left to the caller, which
says the job is safe to run again (``connect.safe_to_rerun``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from ..model.maintenance_params import DRY_RUN
from ..model.state import SnapshotRecord
from .catalog import Catalog
from .expire import ExpiryResult, expire_snapshots
from .read_files import load_lake_paths, referenced_files
from .read_snapshots import load_snapshots
from .tables import CATALOG_TABLES


@contextmanager
def _transaction(catalog: Catalog, write: bool) -> Iterator[sa.Connection]:
    with catalog.engine.connect().execution_options(ducklake_write=write) as conn, conn.begin():
        yield conn


def expire(
    catalog: Catalog, choose: Callable[[list[SnapshotRecord]], Sequence[int]], *, dry_run: bool = DRY_RUN.default
) -> ExpiryResult:
    """Expire the snapshots ``choose`` picks from all of them, in the same transaction that
    read them; a dry run only says which."""
    with _transaction(catalog, write=True) as conn:
        ids = tuple(choose(load_snapshots(conn)))
        if dry_run:
            return ExpiryResult(ids, (), ())
        return expire_snapshots(conn, ids, dialect=catalog.location.dialect, pg_schema=catalog.location.schema)


@dataclass(frozen=True)
class ScheduledFile:
    data_file_id: int
    path: str  # as stored: relative to the data path when path_is_relative
    location: str  # where the file is
    schedule_start: datetime | str  # as stored (text on SQLite)


def delete_scheduled_files(
    catalog: Catalog, due: Callable[[ScheduledFile], bool], delete_file: Callable[[str], object] | None
) -> list[ScheduledFile]:
    """In one transaction: delete the scheduled files ``due`` picks with ``delete_file`` (one
    already gone is forgotten too), then their rows; ``delete_file=None`` is a dry run."""
    sched = CATALOG_TABLES["ducklake_files_scheduled_for_deletion"]
    with _transaction(catalog, write=True) as conn:
        lake = load_lake_paths(conn)
        files = [
            f
            for f in (
                ScheduledFile(r.data_file_id, r.path, lake.scheduled(r.path, r.path_is_relative), r.schedule_start)
                for r in conn.execute(sa.select(sched))
            )
            if due(f)
        ]
        if delete_file is None:
            return files
        for f in files:
            delete_file(f.location)
        keys = [(f.data_file_id, f.path) for f in files]
        for i in range(0, len(keys), 500):  # one statement per 500 rows, not one per file
            conn.execute(sched.delete().where(sa.tuple_(sched.c.data_file_id, sched.c.path).in_(keys[i : i + 500])))
    return files


def lake_files(catalog: Catalog) -> tuple[str, set[str]]:
    """The data path, and where every file any catalog row refers to is (none is an orphan)."""
    with _transaction(catalog, write=False) as conn:
        lake = load_lake_paths(conn)
        return lake.data_path, referenced_files(conn, lake)
