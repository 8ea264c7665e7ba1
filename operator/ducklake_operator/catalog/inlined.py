"""Inlined rows as the catalog database stores them, read for a flush.

DuckDB stores inlined values per backend (docs/ducklake-format.md §1.3): natively where the backend has the
type, as BYTEA/BLOB for VARCHAR/JSON/BLOB, and otherwise as its own text rendering
(dates, timestamps, nested values, HUGEINT, floats on SQLite, ...). So every value is
fetched either as bytes or as text; the job casts the text back with the column's DuckDB
type, the exact inverse of how DuckDB rendered it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from ..errors import DuckLakeError
from ..model.state import ColumnState, PartitionSpec, TableState
from .read_metadata import metadata_schema

SYSTEM_COLUMNS = ("row_id", "begin_snapshot", "end_snapshot")


@dataclass(frozen=True)
class InlinedRows:
    """The rows of one inlined table, in the layout of its schema version."""

    table_name: str
    columns: tuple[ColumnState, ...]
    partition: PartitionSpec | None  # the spec in force for that layout
    rows: list[tuple[Any, ...]]  # row_id, begin_snapshot, end_snapshot, then each column as bytes or text

    @property
    def deleted(self) -> int:
        return sum(1 for r in self.rows if r[2] is not None)


def inlined_table(pg_schema: str | None, name: str) -> sa.Table:
    """An inlined table's snapshot columns: enough to count, end or delete its rows, whatever
    its layout's value columns."""
    return sa.Table(
        name,
        sa.MetaData(),
        sa.Column("begin_snapshot", sa.BigInteger),
        sa.Column("end_snapshot", sa.BigInteger),
        schema=pg_schema,
    )


def read_inlined(
    conn: sa.Connection, pg_schema: str | None, table_name: str, columns: tuple[ColumnState, ...], at_most: int
) -> list[tuple[Any, ...]]:
    """Rows of one inlined table that exist at snapshot ``at_most`` (deleted ones too), by row id."""
    table = sa.Table(table_name, sa.MetaData(), autoload_with=conn, schema=pg_schema)
    stored = [c.name for c in table.columns if c.name not in SYSTEM_COLUMNS]
    if stored != [c.name for c in columns]:
        raise DuckLakeError(f"inlined table {table_name} has columns {stored}, expected {[c.name for c in columns]}")
    selected: list[Any] = [table.c[n] for n in SYSTEM_COLUMNS]
    for c in columns:
        physical = table.c[c.name]
        is_bytes = isinstance(physical.type, sa.LargeBinary) or str(physical.type).upper() in ("BYTEA", "BLOB")
        selected.append(physical if is_bytes else sa.cast(physical, sa.Text()))
    query = sa.select(*selected).where(table.c.begin_snapshot <= at_most).order_by(table.c.row_id)
    return [tuple(r) for r in conn.execute(query)]


def load_inlined_rows(conn: sa.Connection, table: TableState, snapshot_id: int) -> list[dict[str, object]]:
    """Inlined rows of one table visible at ``snapshot_id``, values as the backend stores them."""
    out: list[dict[str, object]] = []
    schema = metadata_schema(conn)
    for inlined_table in table.inlined_tables:
        reflected = sa.Table(inlined_table.name, sa.MetaData(), autoload_with=conn, schema=schema)
        query = (
            sa.select(reflected)
            .where(
                reflected.c.begin_snapshot <= snapshot_id,
                sa.or_(reflected.c.end_snapshot.is_(None), reflected.c.end_snapshot > snapshot_id),
            )
            .order_by(reflected.c.row_id)
        )
        out.extend(dict(r._mapping) for r in conn.execute(query))
    return out
