"""Inlined rows decoded into DuckDB values for a flush.

The catalog library reads each value as the backend stores it, as bytes or as text
(``catalog.inlined``); an in-process DuckDB casts the text back with the column's DuckDB
type: the exact inverse of how DuckDB rendered it.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from ducklake_operator.catalog.inlined import SYSTEM_COLUMNS, InlinedRows
from ducklake_operator.model.types import to_duckdb_sql

from .parquet_writer import quote

_TEXT_STORED_AS_BYTES = ("varchar", "json")


def to_arrow(rows: InlinedRows) -> pa.Table:
    """row_id, begin_snapshot, end_snapshot, then c0..cn: text (or bytes for blobs)."""
    arrays: dict[str, pa.Array] = {
        n: pa.array([r[i] for r in rows.rows], pa.int64()) for i, n in enumerate(SYSTEM_COLUMNS)
    }
    for i, c in enumerate(rows.columns):
        values = [r[len(SYSTEM_COLUMNS) + i] for r in rows.rows]
        if c.type_name in _TEXT_STORED_AS_BYTES:
            values = [bytes(v).decode() if isinstance(v, (bytes, memoryview)) else v for v in values]
            arrays[f"c{i}"] = pa.array(values, pa.string())
        elif c.type_name == "blob":
            arrays[f"c{i}"] = pa.array([bytes(v) if v is not None else None for v in values], pa.binary())
        else:
            arrays[f"c{i}"] = pa.array([str(v) if v is not None else None for v in values], pa.string())
    return pa.table(arrays)


def register_decoded(con: duckdb.DuckDBPyConnection, rows: InlinedRows, name: str) -> None:
    """A temporary DuckDB table ``name`` of the rows with their real types: the columns
    under their names, then row_id, begin_snapshot, end_snapshot."""
    con.register(f"{name}_raw", to_arrow(rows))
    casts = ", ".join(f"CAST(c{i} AS {to_duckdb_sql(c.type)}) AS {quote(c.name)}" for i, c in enumerate(rows.columns))
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT {casts}{', ' if casts else ''}"
        f"row_id, begin_snapshot, end_snapshot FROM {name}_raw"
    )
    con.unregister(f"{name}_raw")
