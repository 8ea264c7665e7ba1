"""Widen a table's column statistics with new files' statistics, as DuckDB does when it
adds files (flush): ``contains_null`` if a file has NULLs, ``contains_nan`` where it is
tracked, min/max by typed comparison; a file with values but no min/max (types DuckDB
keeps no statistics for) makes the table's unknown. Statistics only ever widen."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import duckdb
import sqlalchemy as sa

from ducklake_operator.catalog.files import FileColumnStats
from ducklake_operator.catalog.tables import T
from ducklake_operator.catalog.write import CommitContext
from ducklake_operator.model.types import from_catalog_name, to_duckdb_sql


def _compare(con: duckdb.DuckDBPyConnection, type_name: str, table_value: str, file_value: str) -> int | None:
    """-1/0/1 for table value vs file value; None when either does not parse. File stats hold
    blobs in hex, while table stats from inlined inserts hold DuckDB's escaped text."""
    t = from_catalog_name(type_name)
    if t is None:
        return None
    sql_type = to_duckdb_sql(t)
    file_sql = "unhex($f)" if type_name == "blob" else f"TRY_CAST($f AS {sql_type})"
    row = con.execute(
        f"SELECT a < b, a = b FROM (SELECT TRY_CAST($t AS {sql_type}) AS a, {file_sql} AS b)",
        {"t": table_value, "f": file_value},
    ).fetchone()
    if row is None or row[0] is None:
        return None
    return -1 if row[0] else 0 if row[1] else 1


def widen_table_stats(
    ctx: CommitContext, table_id: int, type_names: dict[int, str], files: Iterable[Iterable[FileColumnStats]]
) -> None:
    ts = T["ducklake_table_column_stats"]
    current: dict[int, dict[str, Any]] = {
        r.column_id: dict(r._mapping) for r in ctx.conn.execute(sa.select(ts).where(ts.c.table_id == table_id))
    }
    before = {k: dict(v) for k, v in current.items()}
    con = duckdb.connect()
    try:
        for file_stats in files:
            for s in file_stats:
                row = current.get(s.column_id)
                if row is None:
                    continue  # columns added after the first insert have no table-level row (as in DuckDB)
                # an unknown null count (a field under a list) may hide NULLs
                row["contains_null"] = bool(row["contains_null"]) or s.null_count is None or s.null_count > 0
                if row["contains_nan"] is not None:
                    row["contains_nan"] = bool(row["contains_nan"]) or bool(s.contains_nan)
                if s.value_count == 0:
                    continue  # only NULLs: nothing to widen
                type_name = type_names.get(s.column_id, "varchar")
                for key, new, keep_if in (("min_value", s.min_value, (-1, 0)), ("max_value", s.max_value, (0, 1))):
                    if row[key] is None or new is None:
                        row[key] = None
                        continue
                    order = _compare(con, type_name, row[key], new)
                    row[key] = None if order is None else row[key] if order in keep_if else new
    finally:
        con.close()
    for column_id, row in current.items():
        if row != before[column_id]:
            ctx.emit(
                ts.update()
                .where(ts.c.table_id == table_id, ts.c.column_id == column_id)
                .values(
                    contains_null=row["contains_null"],
                    contains_nan=row["contains_nan"],
                    min_value=row["min_value"],
                    max_value=row["max_value"],
                )
            )
