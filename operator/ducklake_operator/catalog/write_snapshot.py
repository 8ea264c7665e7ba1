"""The end of every commit: the snapshot row, its change set, the schema version and the
buffered rows of every writer, in the order DuckDB 1.5.5 writes them."""

from __future__ import annotations

from .tables import CATALOG_TABLES
from .write_context import CommitContext, execute_buffered, live_columns, live_top_level_columns
from .write_inlined import create_inlined_table


def finish_commit(ctx: CommitContext) -> None:
    """Run once the buffered rows are written (same transaction): flush collapsed column
    edits, then give every table whose layout changed a new inlined-data table."""
    col = CATALOG_TABLES["ducklake_column"]
    for (table_id, column_id), values in ctx.column_edits.items():
        row = next(r for r in live_columns(ctx, table_id) if r["column_id"] == column_id)
        ctx.conn.execute(
            col.update()
            .where(col.c.table_id == table_id, col.c.column_id == column_id, col.c.end_snapshot.is_(None))
            .values(end_snapshot=ctx.snapshot_id)
        )
        ctx.conn.execute(
            col.insert().values({**row, **values, "begin_snapshot": ctx.snapshot_id, "end_snapshot": None})
        )
    statements_before = len(ctx.statements)
    for table_id, schema_id in ctx.layout_changed.items():
        if table_id in ctx.created_table_ids.values():
            continue
        columns, all_types = live_top_level_columns(ctx, table_id)
        create_inlined_table(ctx, table_id, schema_id, columns, all_types)
    execute_buffered(ctx.conn, ctx.statements[statements_before:])
