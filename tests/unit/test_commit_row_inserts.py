"""How a commit buffers its rows (``CommitContext.emit_rows``): plain rows join an open insert
of the same catalog table and keys; any other statement closes the open inserts, so rows
emitted after it are inserted after it; a new table's DDL does not."""

from __future__ import annotations

from typing import Any, cast

import sqlalchemy as sa

from ducklake_operator.catalog.tables import CATALOG_TABLES
from ducklake_operator.catalog.write_context import CommitContext, RowsInsert
from ducklake_operator.model.state import SnapshotInfo

TABLE, COLUMN = CATALOG_TABLES["ducklake_table"], CATALOG_TABLES["ducklake_column"]


def context() -> CommitContext:
    base = SnapshotInfo(snapshot_id=1, snapshot_time=None, schema_version=1, next_catalog_id=5, next_file_id=0)
    return CommitContext(conn=cast(sa.Connection, None), dialect="sqlite", pg_schema=None, base=base, metadata=[])


def shape(ctx: CommitContext) -> list[Any]:
    """Each buffered statement: (table, row ids) for row inserts, else its kind."""
    return [
        (s.table.name, [r["id"] for r in s.rows]) if isinstance(s, RowsInsert) else type(s).__name__
        for s in ctx.statements
    ]


def test_rows_of_one_table_join_until_another_statement_comes() -> None:
    ctx = context()
    ctx.emit_rows(TABLE, [{"id": 1}])
    ctx.emit_rows(COLUMN, [{"id": 10}, {"id": 11}])
    ctx.emit_ddl("CREATE TABLE new_one(a INTEGER)")  # nothing before it reads that table
    ctx.emit_rows(TABLE, [{"id": 2}])
    ctx.emit_rows(COLUMN, [{"id": 12}])
    ctx.emit(TABLE.update().where(TABLE.c.table_id == 1).values(end_snapshot=2))
    ctx.emit_rows(TABLE, [{"id": 3}])
    ctx.emit_rows(TABLE, [{"id": 4, "other": "keys"}])
    ctx.emit_rows(TABLE, [])
    assert shape(ctx) == [
        ("ducklake_table", [1, 2]),
        ("ducklake_column", [10, 11, 12]),
        "TextClause",
        "Update",
        ("ducklake_table", [3]),
        ("ducklake_table", [4]),
    ]


def test_rows_with_values_in_common_are_an_insert_of_their_own() -> None:
    ctx = context()
    ctx.emit_rows(TABLE, [{"id": 1}])
    ctx.emit_rows(TABLE, [{"id": 2}], table_name="t")
    ctx.emit_rows(TABLE, [{"id": 3}])
    assert shape(ctx) == [("ducklake_table", [1, 3]), ("ducklake_table", [2])]


def test_rows_are_inserted_as_they_were_emitted() -> None:
    """A writer edits its cached rows later in the commit (a column's new default): the
    insert keeps the values as emitted, the edit is a row of its own."""
    ctx = context()
    cached = [{"id": 1, "default_value": "NULL"}]
    ctx.emit_rows(COLUMN, cached)
    cached[0]["default_value"] = "5"
    inserted = ctx.statements[0]
    assert isinstance(inserted, RowsInsert) and inserted.rows == [{"id": 1, "default_value": "NULL"}]
