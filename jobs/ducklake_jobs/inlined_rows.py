"""Inlined rows, read from the catalog database and decoded into DuckDB values.

DuckDB stores inlined values per backend (memo §1.3): natively where the backend has the
type, as BYTEA/BLOB for VARCHAR/JSON/BLOB, and otherwise as its own text rendering
(dates, timestamps, nested values, HUGEINT, floats on SQLite, ...). Every value is fetched
either as bytes or as text, and an in-process DuckDB casts the text back with the
column's DuckDB type: the exact inverse of how DuckDB rendered it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa
import sqlalchemy as sa

from ducklake_operator.errors import DuckLakeError
from ducklake_operator.model.state import ColumnState
from ducklake_operator.model.types import to_duckdb_sql

from .parquet_writer import quote

_SYSTEM = ("row_id", "begin_snapshot", "end_snapshot")
_TEXT_STORED_AS_BYTES = ("varchar", "json")


@dataclass(frozen=True)
class InlinedRows:
    table_name: str
    columns: tuple[ColumnState, ...]
    raw: pa.Table  # row_id, begin_snapshot, end_snapshot, then c0..cn as text or bytes


def read_inlined(
    conn: sa.Connection, pg_schema: str | None, table_name: str, columns: tuple[ColumnState, ...], at_most: int
) -> InlinedRows:
    """Rows of one inlined table that exist at snapshot ``at_most`` (deleted ones too)."""
    table = sa.Table(table_name, sa.MetaData(), autoload_with=conn, schema=pg_schema)
    stored = [c.name for c in table.columns if c.name not in _SYSTEM]
    if stored != [c.name for c in columns]:
        raise DuckLakeError(f"inlined table {table_name} has columns {stored}, expected {[c.name for c in columns]}")
    text = sa.Text()
    selected: list[Any] = [table.c[n] for n in _SYSTEM]
    for c in columns:
        physical = table.c[c.name]
        is_bytes = isinstance(physical.type, sa.LargeBinary) or str(physical.type).upper() in ("BYTEA", "BLOB")
        selected.append((physical if is_bytes else sa.cast(physical, text)).label(f"c{len(selected) - 3}"))
    rows = conn.execute(sa.select(*selected).where(table.c.begin_snapshot <= at_most).order_by(table.c.row_id)).all()
    arrays: dict[str, pa.Array] = {n: pa.array([r[i] for r in rows], pa.int64()) for i, n in enumerate(_SYSTEM)}
    for i, c in enumerate(columns):
        values = [r[3 + i] for r in rows]
        if c.type_name in _TEXT_STORED_AS_BYTES:
            values = [bytes(v).decode() if isinstance(v, (bytes, memoryview)) else v for v in values]
            arrays[f"c{i}"] = pa.array(values, pa.string())
        elif c.type_name == "blob":
            arrays[f"c{i}"] = pa.array([bytes(v) if v is not None else None for v in values], pa.binary())
        else:
            arrays[f"c{i}"] = pa.array([str(v) if v is not None else None for v in values], pa.string())
    return InlinedRows(table_name, columns, pa.table(arrays))


def register_decoded(con: duckdb.DuckDBPyConnection, rows: InlinedRows, name: str) -> None:
    """A temporary DuckDB table ``name`` of the rows with their real types: the columns
    under their names, then row_id, begin_snapshot, end_snapshot."""
    con.register(f"{name}_raw", rows.raw)
    casts = ", ".join(f"CAST(c{i} AS {to_duckdb_sql(c.type)}) AS {quote(c.name)}" for i, c in enumerate(rows.columns))
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT {casts}{', ' if casts else ''}"
        f"row_id, begin_snapshot, end_snapshot FROM {name}_raw"
    )
    con.unregister(f"{name}_raw")
