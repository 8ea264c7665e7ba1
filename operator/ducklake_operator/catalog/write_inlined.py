"""The inlined-data table of a table's schema version: created in the commit's transaction
when the table may inline rows (``tables.can_inline``)."""

from __future__ import annotations

from ..errors import SpecError
from . import tables as tb
from .tables import CATALOG_TABLES
from .write_context import CommitContext, inlining_limit


def create_inlined_table(
    ctx: CommitContext, table_id: int, schema_id: int, columns: list[tuple[str, str]], all_types: list[str]
) -> None:
    """New ``ducklake_inlined_data_<table>_<schema_version>`` for the table's current columns,
    when inlining is on for it (DuckDB does this at CREATE, RENAME and layout changes)."""
    if inlining_limit(ctx, schema_id, table_id) <= 0 or not tb.can_inline(ctx.dialect, columns, all_types):
        return
    if ctx.dialect == "postgresql" and "time_ns" in all_types:
        raise SpecError(
            "time_ns columns cannot be inlined on a PostgreSQL catalog (DuckDB 1.5.5 emits an invalid TIME_NS "
            "column type there); set dataInliningRowLimit to 0 for this table or schema, or use time"
        )
    name = tb.inlined_table_name(table_id, ctx.base.schema_version + 1)
    ctx.emit_ddl(tb.create_inlined_table_ddl(ctx.dialect, ctx.pg_schema, name, columns))
    ctx.emit_rows(
        CATALOG_TABLES["ducklake_inlined_data_tables"],
        [dict(table_id=table_id, table_name=name, schema_version=ctx.base.schema_version + 1)],
    )
