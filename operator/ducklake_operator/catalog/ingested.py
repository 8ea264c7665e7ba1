"""Which files earlier ingests took into a table: the ingest ledger, read by the ingest job as
it plans and by its commit's writer, written by that writer.

The ledger is a table of the operator's own beside DuckLake's, ``ducklake_operator_ingested_files``
(a row per file and ingest: table id, snapshot, path, size, modification time), created by the
first ingest commit of a catalog, in its transaction. Snapshot expiry (ours or DuckDB's) leaves
it alone, so a file stays refused after the snapshot that took it in has expired; our expiry
deletes the rows of the tables it purges. DuckDB 1.5.5 reads only the tables it knows, so the
lake stays readable and writable from DuckDB (tests/maintenance/test_ingest_vs_duckdb.py).
Reads and writes cost O(files asked about), by the (table, path) index.

Ingests before the ledger existed remembered their files only in their snapshot's
``commit_extra_info`` (``model.ingested_files``, still written for DuckDB's ``snapshots()``);
those are read too while their snapshots last.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from contextlib import AbstractContextManager
from typing import Protocol

import sqlalchemy as sa

from ..model.ingested_files import INGEST_KEY, SourceFile, ingested
from .read_metadata import metadata_schema
from .read_snapshots import load_snapshots


class Readable(Protocol):
    """What ``ingested_files`` reads through: a ``Catalog`` (named by its one method here, so
    this module, which the ingest's commit writer imports, does not import the catalog)."""

    def reading(self) -> AbstractContextManager[sa.Connection]: ...


LEDGER_NAME = "ducklake_operator_ingested_files"
ROWS_PER_STATEMENT = 500  # within SQLite's bound variables

LEDGER = sa.Table(
    LEDGER_NAME,
    sa.MetaData(),  # not DuckLake's: created on demand, never by bootstrap
    sa.Column("table_id", sa.BigInteger, nullable=False),
    sa.Column("snapshot_id", sa.BigInteger, nullable=False),  # the ingest's snapshot (it may have expired)
    sa.Column("path", sa.String, nullable=False),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("mtime", sa.Double, nullable=False),  # seconds since the epoch, as listed
    sa.Index(f"{LEDGER_NAME}_by_path", "table_id", "path"),
)


def _has_ledger(conn: sa.Connection) -> bool:
    return sa.inspect(conn).has_table(LEDGER_NAME, schema=metadata_schema(conn))


def ingested_by_snapshot(
    conn: sa.Connection, table_id: int, files: Collection[SourceFile], after: int | None = None
) -> dict[SourceFile, int]:
    """Each of ``files`` that was ingested into the table (by a snapshot after ``after``) ->
    the first snapshot that took it in."""
    wanted = set(files)
    out: dict[SourceFile, int] = {}

    def note(f: SourceFile, snapshot: int) -> None:
        if f in wanted and snapshot < out.get(f, snapshot + 1):
            out[f] = snapshot

    if not wanted:
        return out
    if _has_ledger(conn):
        paths = sorted({f.path for f in wanted})
        for i in range(0, len(paths), ROWS_PER_STATEMENT):
            query = sa.select(LEDGER).where(
                LEDGER.c.table_id == table_id, LEDGER.c.path.in_(paths[i : i + ROWS_PER_STATEMENT])
            )
            if after is not None:
                query = query.where(LEDGER.c.snapshot_id > after)
            for r in conn.execute(query):
                note(SourceFile(r.path, r.size, r.mtime), r.snapshot_id)
    for s in load_snapshots(conn, after, extra_info_containing=f'"{INGEST_KEY}"'):  # ingests before the ledger
        for f in ingested(s.commit_extra_info, table_id):
            note(f, s.snapshot_id)
    return out


def ingested_files(catalog: Readable, table_id: int, files: Collection[SourceFile]) -> dict[SourceFile, int]:
    with catalog.reading() as conn:
        return ingested_by_snapshot(conn, table_id, files)


def record_ingested(conn: sa.Connection, table_id: int, snapshot_id: int, files: Iterable[SourceFile]) -> None:
    """Note ``files`` as ingested into the table by ``snapshot_id``, in the commit's
    transaction (creating the ledger on the catalog's first ingest)."""
    rows = [dict(table_id=table_id, snapshot_id=snapshot_id, path=f.path, size=f.size, mtime=f.mtime) for f in files]
    if not rows:
        return
    if not _has_ledger(conn):
        LEDGER.create(conn)
    for i in range(0, len(rows), ROWS_PER_STATEMENT):
        conn.execute(LEDGER.insert(), rows[i : i + ROWS_PER_STATEMENT])


def forget_tables(conn: sa.Connection, table_ids: Collection[int]) -> None:
    """Drop the ledger's rows of tables that are gone for good (purged by expiry)."""
    if table_ids and _has_ledger(conn):
        conn.execute(LEDGER.delete().where(LEDGER.c.table_id.in_(list(table_ids))))
