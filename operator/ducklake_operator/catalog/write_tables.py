"""The writers of schemas and tables: create, drop and rename them, their tags, options,
partitioning and sort order. Each checks its change against the catalog as it is now (inside
the commit transaction), allocates ids and buffers the rows (``write_context``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from uuid6 import uuid7

from ..errors import AlreadyExists, CommitConflict, SchemaNotFound, SpecError
from ..model.changes import (
    CreateSchema,
    CreateTable,
    DropSchema,
    DropTable,
    PartitionColumn,
    RenameTable,
    SetOption,
    SetTags,
    SortExpression,
)
from ..model.names import check_identifier, column_reference_sql, fold, path_for
from ..model.options import catalog_key, normalize_option
from .changes_made import Change as Token
from .tables import CATALOG_TABLES
from .write_column_rows import column_rows, type_names, validate_fields
from .write_context import (
    CommitContext,
    live_schemas,
    live_table_row,
    relation_id,
    resolve_path,
    schema_id_for,
    stored_schema_name,
)
from .write_inlined import create_inlined_table


def _create_schema(change: CreateSchema, ctx: CommitContext) -> None:
    check_identifier(change.name, "schema")
    existing = live_schemas(ctx).get(fold(change.name))
    if existing is not None:
        raise AlreadyExists(f"schema {existing[1]!r} already exists")
    schema_id = ctx.catalog_id()
    uuid = str(uuid7())
    ctx.emit(
        CATALOG_TABLES["ducklake_schema"]
        .insert()
        .values(
            schema_id=schema_id,
            schema_uuid=uuid,
            begin_snapshot=ctx.snapshot_id,
            end_snapshot=None,
            schema_name=change.name,
            path=path_for(change.name, uuid),
            path_is_relative=True,
        )
    )
    _write_tags(ctx, schema_id, tuple(change.tags), created=True)
    ctx.new_schemas[fold(change.name)] = (schema_id, change.name)
    ctx.catalog_change(Token("created_schema", schema=change.name))


def _drop_schema(change: DropSchema, ctx: CommitContext) -> None:
    sc = CATALOG_TABLES["ducklake_schema"]
    row = ctx.conn.execute(
        sa.select(sc).where(sc.c.schema_id == change.schema_id, sc.c.end_snapshot.is_(None))
    ).one_or_none()
    if row is None:
        raise SchemaNotFound(f"schema {change.name!r} no longer exists")
    t = CATALOG_TABLES["ducklake_table"]
    tables = list(
        ctx.conn.execute(
            sa.select(t.c.table_id, t.c.table_name).where(t.c.schema_id == change.schema_id, t.c.end_snapshot.is_(None))
        )
    )
    if tables and not change.cascade:
        names = ", ".join(sorted(r.table_name for r in tables))
        raise SpecError(f"schema {change.name!r} is not empty (tables: {names}); drop its tables first or use cascade")
    for r in tables:
        _drop_table(DropTable(r.table_id, f"{change.name}.{r.table_name}"), ctx)
    ctx.end_live(sc, sc.c.schema_id == change.schema_id)
    tg = CATALOG_TABLES["ducklake_tag"]
    ctx.end_live(tg, tg.c.object_id == change.schema_id)
    ctx.dropped_schemas.add(change.schema_id)
    ctx.catalog_change(Token("dropped_schema", id=change.schema_id))


def _create_table(change: CreateTable, ctx: CommitContext) -> None:
    check_identifier(change.name, "table")
    where = f"table {change.schema}.{change.name}"
    validate_fields(change.columns, where)
    schema_id = schema_id_for(ctx, change.schema)
    if relation_id(ctx, schema_id, change.name) is not None:
        raise AlreadyExists(f"{change.schema}.{change.name} already exists")
    table_id = ctx.catalog_id()
    uuid = str(uuid7())
    ctx.emit_rows(
        CATALOG_TABLES["ducklake_table"],
        [
            dict(
                table_id=table_id,
                table_uuid=uuid,
                begin_snapshot=ctx.snapshot_id,
                end_snapshot=None,
                schema_id=schema_id,
                table_name=change.name,
                path=path_for(change.name, uuid),
                path_is_relative=True,
            )
        ],
    )
    all_columns: list[dict[str, Any]] = []
    all_tags: list[dict[str, Any]] = []
    next_id = 1
    for f in change.columns:
        cols, tags, next_id = column_rows(
            f, table_id=table_id, snapshot_id=ctx.snapshot_id, first_id=next_id, parent_id=None
        )
        all_columns += cols
        all_tags += tags
    ctx.emit_rows(CATALOG_TABLES["ducklake_column"], all_columns)
    ctx.emit_rows(CATALOG_TABLES["ducklake_column_tag"], all_tags)
    _write_tags(ctx, table_id, tuple(change.tags), created=True)
    ctx.columns_cache[table_id] = list(all_columns)
    all_types = [t for f in change.columns for t in type_names(f.type)]
    create_inlined_table(ctx, table_id, schema_id, [(f.name, f.type.name) for f in change.columns], all_types)
    ctx.versioned(table_id)
    if change.partition_by:
        write_partition(ctx, table_id, change.partition_by)
    if change.sort_by:
        write_sort(ctx, table_id, change.sort_by)
    ctx.new_tables[(schema_id, fold(change.name))] = table_id
    ctx.created_table_ids[f"{change.schema}.{change.name}"] = table_id
    schema_name = stored_schema_name(ctx, schema_id)
    ctx.catalog_change(Token("created_table", schema=schema_name, name=change.name))
    if change.tags or all_tags or change.partition_by or change.sort_by:
        ctx.tokens.append(Token("altered_table", id=table_id))


def _drop_table(change: DropTable, ctx: CommitContext) -> None:
    live_table_row(ctx, change.table_id, f"drop {change.name}")
    tid = change.table_id
    for name in (
        "ducklake_table",
        "ducklake_partition_info",
        "ducklake_column",
        "ducklake_column_tag",
        "ducklake_data_file",
        "ducklake_delete_file",
        "ducklake_sort_info",
    ):
        ctx.end_live(CATALOG_TABLES[name], CATALOG_TABLES[name].c.table_id == tid)
    ctx.end_live(CATALOG_TABLES["ducklake_tag"], CATALOG_TABLES["ducklake_tag"].c.object_id == tid)
    ctx.catalog_change(Token("dropped_table", id=tid))


def _rename_table(change: RenameTable, ctx: CommitContext) -> None:
    check_identifier(change.new_name, "table")
    row = live_table_row(ctx, change.table_id, f"rename {change.old_name}")
    old_short = change.old_name.rsplit(".", 1)[-1] if "." in change.old_name else change.old_name
    if row.table_name != old_short:
        raise CommitConflict(f"rename {change.old_name}: the table is now called {row.table_name!r}; re-plan")
    if relation_id(ctx, row.schema_id, change.new_name) not in (None, change.table_id):
        raise AlreadyExists(f"cannot rename {change.old_name}: {change.new_name!r} already exists in its schema")
    t = CATALOG_TABLES["ducklake_table"]
    ctx.end_live(t, t.c.table_id == change.table_id)
    ctx.emit(
        t.insert().values(
            table_id=row.table_id,
            table_uuid=str(row.table_uuid),
            begin_snapshot=ctx.snapshot_id,
            end_snapshot=None,
            schema_id=row.schema_id,
            table_name=change.new_name,
            path=row.path,
            path_is_relative=row.path_is_relative,
        )
    )
    ctx.layout_changed[change.table_id] = row.schema_id
    ctx.versioned(change.table_id)
    ctx.catalog_change(Token("created_table", schema=stored_schema_name(ctx, row.schema_id), name=change.new_name))


def _set_tags(change: SetTags, ctx: CommitContext) -> None:
    if change.is_table:
        live_table_row(ctx, change.object_id, f"set tags of {change.object_name}")
    if _write_tags(ctx, change.object_id, change.tags):
        ctx.catalog_change(*([Token("altered_table", id=change.object_id)] if change.is_table else []))


def _write_tags(
    ctx: CommitContext, object_id: int, tags: tuple[tuple[str, str | None], ...], *, created: bool = False
) -> bool:
    """End changed tags and insert their new values; False if nothing changed. An object
    ``created`` in this commit has a new id, so no tags yet: nothing to read (one query less
    per table in a storm of creations)."""
    tg = CATALOG_TABLES["ducklake_tag"]
    if not tags:
        return False
    current = (
        {}
        if created
        else {
            r.key: r.value
            for r in ctx.conn.execute(
                sa.select(tg.c.key, tg.c.value).where(tg.c.object_id == object_id, tg.c.end_snapshot.is_(None))
            )
        }
    )
    changed = False
    for key, value in tags:
        check_identifier(key, "tag")
        if current.get(key) == value:
            continue
        if key in current:
            ctx.end_live(tg, tg.c.object_id == object_id, tg.c.key == key)
        if value is not None:
            row = dict(object_id=object_id, begin_snapshot=ctx.snapshot_id, end_snapshot=None, key=key, value=value)
            ctx.emit_rows(tg, [row])
        changed = True
    return changed


def _set_option(change: SetOption, ctx: CommitContext) -> None:
    key = catalog_key(change.key)
    value = None
    if change.value is not None:
        key, value = normalize_option(change.key, change.value, change.scope)
    scope = None if change.scope == "global" else change.scope
    scope_id = change.scope_id
    if scope == "table" and scope_id is None:  # a table created in this commit
        scope_id = ctx.table_id(None, change.scope_name or "")
    m = CATALOG_TABLES["ducklake_metadata"]
    scope_cond = (
        [m.c.scope.is_(None), m.c.scope_id.is_(None)]
        if scope is None
        else [m.c.scope == scope, m.c.scope_id == scope_id]
    )
    ctx.emit(m.delete().where(m.c.key == key, *scope_cond))
    if value is not None:
        ctx.emit(m.insert().values(key=key, value=value, scope=scope, scope_id=scope_id))
    ctx.metadata = [r for r in ctx.metadata if not (r[0] == key and r[2] == scope and r[3] == scope_id)]
    if value is not None:
        ctx.metadata.append((key, value, scope, scope_id))


def write_partition(ctx: CommitContext, table_id: int, keys: tuple[PartitionColumn, ...]) -> None:
    """End the live partition spec and write a new one (an empty one resets it, as DuckDB)."""
    pi, pc = CATALOG_TABLES["ducklake_partition_info"], CATALOG_TABLES["ducklake_partition_column"]
    ctx.end_live(pi, pi.c.table_id == table_id)
    partition_id = ctx.catalog_id()
    ctx.emit(
        pi.insert().values(
            partition_id=partition_id, table_id=table_id, begin_snapshot=ctx.snapshot_id, end_snapshot=None
        )
    )
    rows = [
        dict(
            partition_id=partition_id,
            table_id=table_id,
            partition_key_index=i,
            column_id=resolve_path(ctx, table_id, (k.column,), "partition")["column_id"],
            transform=k.transform,
        )
        for i, k in enumerate(keys)
    ]
    if rows:
        ctx.emit(pc.insert().values(rows))
    ctx.versioned(table_id)


def write_sort(ctx: CommitContext, table_id: int, keys: tuple[SortExpression, ...]) -> None:
    """End the live sort order; write a new one unless ``keys`` is empty (RESET)."""
    si, se = CATALOG_TABLES["ducklake_sort_info"], CATALOG_TABLES["ducklake_sort_expression"]
    ctx.end_live(si, si.c.table_id == table_id)
    if not keys:
        return
    sort_id = ctx.catalog_id()
    ctx.emit(si.insert().values(sort_id=sort_id, table_id=table_id, begin_snapshot=ctx.snapshot_id, end_snapshot=None))
    ctx.emit(
        se.insert().values(
            [
                dict(
                    sort_id=sort_id,
                    table_id=table_id,
                    sort_key_index=i,
                    expression=column_reference_sql(resolve_path(ctx, table_id, (k.column,), "sort")["column_name"]),
                    dialect="duckdb",
                    sort_direction=k.direction,
                    null_order=k.null_order,
                )
                for i, k in enumerate(keys)
            ]
        )
    )


def relation_names(changes: Iterable[object]) -> frozenset[str]:
    """The relation names (folded) that ``changes`` create or rename tables to: the names a
    commit looks up (``write_context.relation_id``)."""
    names = {c.name for c in changes if isinstance(c, CreateTable)}
    names |= {c.new_name for c in changes if isinstance(c, RenameTable)}
    return frozenset(fold(n) for n in names)


# registered on ``writers.write_change``
WRITERS = (_create_schema, _drop_schema, _create_table, _drop_table, _rename_table, _set_tags, _set_option)
