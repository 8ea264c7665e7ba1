"""Which files earlier ingests took into a table: read from the snapshots' ``commit_extra_info``
(``model.ingested_files``), by the ingest job as it plans and by its commit's writer."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sqlalchemy as sa

from ..model.ingested_files import INGEST_KEY, SourceFile, ingested
from .read import load_snapshots

if TYPE_CHECKING:
    from .catalog import Catalog  # which imports the commit, whose writer imports this


def ingested_by_snapshot(conn: sa.Connection, table_id: int, after: int | None = None) -> dict[SourceFile, int]:
    """Each file ingested into the table (by snapshots after ``after``) -> its snapshot."""
    out: dict[SourceFile, int] = {}
    for s in load_snapshots(conn, after, extra_info_containing=f'"{INGEST_KEY}"'):
        for f in ingested(s.commit_extra_info, table_id):
            out.setdefault(f, s.snapshot_id)
    return out


def ingested_files(catalog: Catalog, table_id: int) -> dict[SourceFile, int]:
    with catalog.reading() as conn:
        return ingested_by_snapshot(conn, table_id)
