"""The writer of ``RetypeColumns`` (the rewriteColumnType job's commit): one snapshot that
changes columns' types as DuckDB 1.5.5's ``ALTER COLUMN ... TYPE`` does (docs/ducklake-format.md
§3.8: a new column row version each, a ``ducklake_schema_versions`` row, a new inlined-data
table, ``altered_table``) and swaps every live data file and inlined row of the table for files
holding the converted values, as ``ducklake_rewrite_data_files`` swaps files (§5.2: the
inputs and their delete files end, ``rewrite_delete``; ended inlined rows, ``inlined_delete``).

Those tokens make every DuckDB writer that planned before this snapshot conflict with it
(an insert, delete, merge, flush or alter of the table); a DuckDB insert or deletion that
landed since the job's base snapshot makes this writer refuse instead, so a row is never
lost, resurrected, or left in the old type.
"""

from __future__ import annotations

import sqlalchemy as sa

from ..errors import CommitConflict
from ..model.file_changes import RetypeColumns
from .changes_made import Change as Token
from .files import add_data_files, check_inputs, inputs_changed
from .inlined import inlined_table
from .table_stats import stats_after_full_rewrite
from .tables import CATALOG_TABLES
from .write_columns import edit_column, mark_altered
from .write_context import CommitContext, live_columns, resolve_path

_ADDED_ROWS = ("inserted_into_table", "inlined_insert", "inline_flush")


def _check_all_rows_planned(ctx: CommitContext, change: RetypeColumns, job: str) -> None:
    """Every live file and inlined row of the table now is one the job rewrote."""
    df = CATALOG_TABLES["ducklake_data_file"]
    live_files = set(
        ctx.conn.execute(
            sa.select(df.c.data_file_id).where(df.c.table_id == change.table_id, df.c.end_snapshot.is_(None))
        ).scalars()
    )
    it = CATALOG_TABLES["ducklake_inlined_data_tables"]
    planned = dict(change.inlined)
    live_rows = {}
    for name in ctx.conn.execute(sa.select(it.c.table_name).where(it.c.table_id == change.table_id)).scalars():
        inlined = inlined_table(ctx.pg_schema, name)
        live_rows[name] = ctx.conn.execute(
            sa.select(sa.func.count()).select_from(inlined).where(inlined.c.end_snapshot.is_(None))
        ).scalar_one()
    if live_files - set(change.inputs.data_files) or any(n != planned.get(k, 0) for k, n in live_rows.items()):
        raise inputs_changed(ctx, change.table_id, job, change.base_snapshot, _ADDED_ROWS + ("inlined_delete",))


def _retype_columns(change: RetypeColumns, ctx: CommitContext) -> None:
    job = f"rewriteColumnType of {change.table_name}"
    check_inputs(ctx, change.table_id, job, change.base_snapshot, change.inputs)
    _check_all_rows_planned(ctx, change, job)
    for c in change.columns:
        where = ".".join(c.path)
        row = resolve_path(ctx, change.table_id, c.path, f"rewriteColumnType {where}")
        if row["column_id"] != c.column_id or row["column_type"] != c.old_type:
            raise CommitConflict(
                f"{job}: {where} is now column {row['column_id']} of type {row['column_type']}, not "
                f"column {c.column_id} of type {c.old_type}; nothing was committed"
            )
        initial_default, default_value = c.defaults
        edit_column(
            ctx,
            change.table_id,
            c.column_id,
            column_type=c.new_type,
            initial_default=initial_default,
            default_value=default_value,
        )
    mark_altered(ctx, change.table_id, versioned=True, layout=True)
    add_data_files(ctx, change.table_id, change.outputs)
    sources = list(change.inputs.data_files)
    if sources:
        df, dl = CATALOG_TABLES["ducklake_data_file"], CATALOG_TABLES["ducklake_delete_file"]
        ctx.end_live(df, df.c.data_file_id.in_(sources))
        ctx.end_live(dl, dl.c.data_file_id.in_(sources))
        ctx.tokens.append(Token("rewrite_delete", id=change.table_id))
    ended = [name for name, rows in change.inlined if rows]
    for name in ended:
        inlined = inlined_table(ctx.pg_schema, name)
        ctx.emit(inlined.update().where(inlined.c.end_snapshot.is_(None)).values(end_snapshot=ctx.snapshot_id))
    if ended:
        ctx.tokens.append(Token("inlined_delete", id=change.table_id))
    types = {r["column_id"]: r["column_type"] for r in live_columns(ctx, change.table_id)}
    stats_after_full_rewrite(ctx, change.table_id, types, change.outputs)


# registered on ``writers.write_change``
WRITERS = (_retype_columns,)
