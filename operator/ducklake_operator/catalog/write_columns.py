"""Writers for changes to one table's columns, partitioning and sort order (docs/ducklake-format.md §3.5-§3.11, §6).

DuckDB's rules, followed here:
* a column change ends the live row and inserts a full new row with the same id; several
  edits of one column in a commit become one new row (``CommitContext.column_edits``);
* added columns and fields take ids ``MAX(column_id)+1`` over every row the table ever had;
* layout changes (add, drop, rename, type, partitioning) get a ``ducklake_schema_versions``
  row and a new inlined-data table; defaults and nullability only the former; comments and
  sort order neither. Every one is an ``altered_table``.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from ..errors import CommitConflict, SpecError
from ..model.changes import (
    AddColumn,
    DropColumn,
    PromoteColumn,
    RenameColumn,
    RewriteColumnType,
    SetColumnTags,
    SetDefault,
    SetNullable,
    SetPartitioning,
    SetSortOrder,
)
from ..model.defaults import for_added_column
from ..model.names import check_identifier, fold
from .changes_made import Change as Token
from .tables import CATALOG_TABLES
from .write_column_rows import column_rows, validate_fields
from .write_context import CommitContext, live_columns, resolve_path
from .write_tables import write_partition, write_sort


def mark_altered(ctx: CommitContext, table_id: int, *, versioned: bool, layout: bool) -> None:
    ctx.catalog_change(Token("altered_table", id=table_id))
    if versioned:
        ctx.versioned(table_id)
    if layout:
        ctx.layout_changed.setdefault(table_id, _schema_id(ctx, table_id))


def _schema_id(ctx: CommitContext, table_id: int) -> int:
    t = CATALOG_TABLES["ducklake_table"]
    return ctx.conn.execute(
        sa.select(t.c.schema_id).where(t.c.table_id == table_id, t.c.end_snapshot.is_(None))
    ).scalar_one()


def _next_column_id(ctx: CommitContext, table_id: int) -> int:
    col = CATALOG_TABLES["ducklake_column"]
    stored = ctx.conn.execute(sa.select(sa.func.max(col.c.column_id)).where(col.c.table_id == table_id)).scalar() or 0
    in_commit = max((r["column_id"] for r in live_columns(ctx, table_id)), default=0)
    return max(stored, in_commit) + 1


def edit_column(ctx: CommitContext, table_id: int, column_id: int, **values: Any) -> None:
    ctx.column_edits.setdefault((table_id, column_id), {}).update(values)
    for row in live_columns(ctx, table_id):
        if row["column_id"] == column_id:
            row.update(values)


def _descendants(ctx: CommitContext, table_id: int, column_id: int) -> list[int]:
    rows = live_columns(ctx, table_id)
    out, frontier = [column_id], [column_id]
    while frontier:
        frontier = [r["column_id"] for r in rows if r["parent_column"] in frontier]
        out += frontier
    return out


def _add_column(change: AddColumn, ctx: CommitContext) -> None:
    table_id = ctx.table_id(change.table_id, change.table)
    validate_fields((change.field,), f"table {change.table}")
    parent_id = None
    if change.parent_path:
        parent = resolve_path(ctx, table_id, change.parent_path, f"add {'.'.join(change.path)}")
        if parent["column_type"] != "struct":
            raise SpecError(
                f"{'.'.join(change.path)}: fields can only be added to structs, {'.'.join(change.parent_path)} is a {parent['column_type']}"
            )
        parent_id = parent["column_id"]
    siblings = [r for r in live_columns(ctx, table_id) if r["parent_column"] == parent_id]
    if any(fold(r["column_name"]) == fold(change.field.name) for r in siblings):
        raise CommitConflict(f"add {'.'.join(change.path)}: a column of that name exists now; re-plan")
    rows, tags, _ = column_rows(
        change.field,
        table_id=table_id,
        snapshot_id=ctx.snapshot_id,
        first_id=_next_column_id(ctx, table_id),
        parent_id=parent_id,
    )
    ctx.emit_rows(CATALOG_TABLES["ducklake_column"], rows)
    ctx.emit_rows(CATALOG_TABLES["ducklake_column_tag"], tags)
    live_columns(ctx, table_id).extend(rows)
    mark_altered(ctx, table_id, versioned=True, layout=True)


def _drop_column(change: DropColumn, ctx: CommitContext) -> None:
    resolve_path(ctx, change.table_id, change.path, f"drop {'.'.join(change.path)}")
    ids = _descendants(ctx, change.table_id, change.column_id)
    col, ctag = CATALOG_TABLES["ducklake_column"], CATALOG_TABLES["ducklake_column_tag"]
    ctx.end_live(col, col.c.table_id == change.table_id, col.c.column_id.in_(ids))
    # DuckDB 1.5.5 leaves the comment of a dropped column live (fixed upstream later); end it.
    ctx.end_live(ctag, ctag.c.table_id == change.table_id, ctag.c.column_id.in_(ids))
    ctx.columns_cache[change.table_id] = [r for r in live_columns(ctx, change.table_id) if r["column_id"] not in ids]
    mark_altered(ctx, change.table_id, versioned=True, layout=True)


def _rename_column(change: RenameColumn, ctx: CommitContext) -> None:
    check_identifier(change.new_name, "column")
    row = resolve_path(ctx, change.table_id, change.path, f"rename {'.'.join(change.path)}")
    if row["column_id"] != change.column_id:
        raise CommitConflict(f"rename {'.'.join(change.path)}: the column changed since the plan; re-plan")
    edit_column(ctx, change.table_id, change.column_id, column_name=change.new_name)
    mark_altered(ctx, change.table_id, versioned=True, layout=True)


def _promote_column(change: PromoteColumn, ctx: CommitContext) -> None:
    row = resolve_path(ctx, change.table_id, change.path, f"promote {'.'.join(change.path)}")
    if row["column_type"] != change.old_type.name:
        raise CommitConflict(
            f"promote {'.'.join(change.path)}: its type is now {row['column_type']}, not {change.old_type}; re-plan"
        )
    edit_column(ctx, change.table_id, change.column_id, column_type=change.new_type.name)
    mark_altered(ctx, change.table_id, versioned=True, layout=True)


def _rewrite_column(change: RewriteColumnType, ctx: CommitContext) -> None:
    """A plan's heavy change: the rewriteColumnType job commits it with the rewritten files
    (``RetypeColumns``); on its own it would leave the files' values in the old type."""
    raise SpecError(
        f"{'.'.join(change.path)}: {change.old_type} → {change.new_type} needs its data rewritten: "
        "run the rewriteColumnType job (use_cases.apply_plan says which; it commits the plan's other changes too)"
    )


def _set_default(change: SetDefault, ctx: CommitContext) -> None:
    resolve_path(ctx, change.table_id, change.path, f"set default of {'.'.join(change.path)}")
    d = change.default
    if d is not None and d.is_expression and not _created_with_table(ctx, change.table_id, change.column_id):
        # DuckDB accepts expressions only on columns created with the table; booleans become literals
        d = for_added_column(d, ".".join(change.path))
    edit_column(
        ctx,
        change.table_id,
        change.column_id,
        default_value=d.value if d else "NULL",
        default_value_type=("expression" if d and d.is_expression else "literal"),
    )
    mark_altered(ctx, change.table_id, versioned=True, layout=False)


def _created_with_table(ctx: CommitContext, table_id: int, column_id: int) -> bool:
    col, t = CATALOG_TABLES["ducklake_column"], CATALOG_TABLES["ducklake_table"]
    first_column = ctx.conn.execute(
        sa.select(sa.func.min(col.c.begin_snapshot)).where(col.c.table_id == table_id, col.c.column_id == column_id)
    ).scalar()
    created = ctx.conn.execute(sa.select(sa.func.min(t.c.begin_snapshot)).where(t.c.table_id == table_id)).scalar()
    return first_column is None or first_column == created


def _set_nullable(change: SetNullable, ctx: CommitContext) -> None:
    row = resolve_path(ctx, change.table_id, change.path, f"change nullability of {'.'.join(change.path)}")
    if not change.nullable:
        _check_no_nulls(ctx, change.table_id, row, ".".join(change.path))
    edit_column(ctx, change.table_id, change.column_id, nulls_allowed=change.nullable)
    mark_altered(ctx, change.table_id, versioned=True, layout=False)


def _check_no_nulls(ctx: CommitContext, table_id: int, row: dict[str, Any], path: str) -> None:
    """SET NOT NULL only when the catalog's stats prove there is no NULL (as DuckDB checks)."""
    ts, tcs = CATALOG_TABLES["ducklake_table_stats"], CATALOG_TABLES["ducklake_table_column_stats"]
    records = ctx.conn.execute(sa.select(ts.c.record_count).where(ts.c.table_id == table_id)).scalar()
    if not records:
        return
    contains_null = ctx.conn.execute(
        sa.select(tcs.c.contains_null).where(tcs.c.table_id == table_id, tcs.c.column_id == row["column_id"])
    ).one_or_none()
    if contains_null is None:
        raise SpecError(
            f"cannot set NOT NULL on {path}: the catalog has no statistics for it (it was added after the "
            "table's first insert), so it cannot be proven free of NULLs"
        )
    if contains_null[0]:
        raise SpecError(f"cannot set NOT NULL on {path}: the column has NULL values")


def _set_column_tags(change: SetColumnTags, ctx: CommitContext) -> None:
    resolve_path(ctx, change.table_id, change.path, f"tag {'.'.join(change.path)}")
    ctag = CATALOG_TABLES["ducklake_column_tag"]
    current = {
        r.key: r.value
        for r in ctx.conn.execute(
            sa.select(ctag.c.key, ctag.c.value).where(
                ctag.c.table_id == change.table_id, ctag.c.column_id == change.column_id, ctag.c.end_snapshot.is_(None)
            )
        )
    }
    changed = False
    for key, value in change.tags:
        if current.get(key) == value:
            continue
        if key != "comment" and value is None:
            # DuckDB 1.5.5 fails every query on a table with a column tag other than the comment,
            # ended or not, at any snapshot: the rows go (an earlier version of ours wrote them)
            ctx.emit(
                ctag.delete().where(
                    ctag.c.table_id == change.table_id, ctag.c.column_id == change.column_id, ctag.c.key == key
                )
            )
            changed = True
            continue
        if key in current:
            ctx.end_live(
                ctag, ctag.c.table_id == change.table_id, ctag.c.column_id == change.column_id, ctag.c.key == key
            )
        if value is not None:
            ctx.emit(
                ctag.insert().values(
                    table_id=change.table_id,
                    column_id=change.column_id,
                    begin_snapshot=ctx.snapshot_id,
                    end_snapshot=None,
                    key=key,
                    value=value,
                )
            )
        changed = True
    if changed:
        mark_altered(ctx, change.table_id, versioned=False, layout=False)


def _set_partitioning(change: SetPartitioning, ctx: CommitContext) -> None:
    write_partition(ctx, change.table_id, change.keys)
    mark_altered(ctx, change.table_id, versioned=True, layout=True)


def _set_sort_order(change: SetSortOrder, ctx: CommitContext) -> None:
    write_sort(ctx, change.table_id, change.keys)
    mark_altered(ctx, change.table_id, versioned=False, layout=False)


# registered on ``writers.write_change``
WRITERS = (
    _add_column,
    _drop_column,
    _rename_column,
    _promote_column,
    _rewrite_column,
    _set_default,
    _set_nullable,
    _set_column_tags,
    _set_partitioning,
    _set_sort_order,
)
