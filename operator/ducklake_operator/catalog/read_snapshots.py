"""Snapshots as the catalog records them: one (the latest by default), or every one with
its change set, and which versioned rows are valid at a snapshot.

Every versioned row is valid at S when ``begin_snapshot <= S AND (end_snapshot IS NULL
OR S < end_snapshot)`` (docs/ducklake-format.md §3.2).
"""

from __future__ import annotations

import sqlalchemy as sa

from ..errors import NotFound
from ..model.state import (
    SnapshotInfo,
    SnapshotRecord,
)
from .tables import CATALOG_TABLES


def valid_at(table: sa.Table, snapshot_id: int) -> sa.ColumnElement[bool]:
    return sa.and_(
        table.c.begin_snapshot <= snapshot_id,
        sa.or_(table.c.end_snapshot.is_(None), table.c.end_snapshot > snapshot_id),
    )


def load_snapshot(conn: sa.Connection, snapshot_id: int | None = None) -> SnapshotInfo:
    s = CATALOG_TABLES["ducklake_snapshot"]
    query = sa.select(s)
    if snapshot_id is None:
        query = query.where(s.c.snapshot_id == sa.select(sa.func.max(s.c.snapshot_id)).scalar_subquery())
    else:
        query = query.where(s.c.snapshot_id == snapshot_id)
    row = conn.execute(query).one_or_none()
    if row is None:
        raise NotFound(
            f"snapshot {snapshot_id} does not exist" if snapshot_id is not None else "the catalog has no snapshot"
        )
    return SnapshotInfo(row.snapshot_id, row.snapshot_time, row.schema_version, row.next_catalog_id, row.next_file_id)


def load_snapshots(
    conn: sa.Connection, after: int | None = None, *, extra_info_containing: str | None = None
) -> list[SnapshotRecord]:
    """Snapshots with their change sets, oldest first (``after``: only later ones;
    ``extra_info_containing``: only those whose ``commit_extra_info`` contains that text)."""
    s, c = CATALOG_TABLES["ducklake_snapshot"], CATALOG_TABLES["ducklake_snapshot_changes"]
    query = (
        sa.select(s, c.c.changes_made, c.c.author, c.c.commit_message, c.c.commit_extra_info)
        .select_from(s.outerjoin(c, c.c.snapshot_id == s.c.snapshot_id))
        .order_by(s.c.snapshot_id)
    )
    if after is not None:
        query = query.where(s.c.snapshot_id > after)
    if extra_info_containing is not None:
        query = query.where(c.c.commit_extra_info.contains(extra_info_containing, autoescape=True))
    return [
        SnapshotRecord(
            r.snapshot_id,
            r.snapshot_time,
            r.schema_version,
            r.changes_made,
            r.author,
            r.commit_message,
            r.commit_extra_info,
        )
        for r in conn.execute(query)
    ]
