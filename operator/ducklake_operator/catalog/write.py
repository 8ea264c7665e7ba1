"""One writer per change kind: check it against the catalog as it is now (inside the commit
transaction), allocate ids, and buffer the rows DuckDB 1.5.5 would write (docs/ducklake-format.md §3).

Writers read immediately but only *buffer* their writes in the ``CommitContext``, because
the snapshot row must be inserted first and its counters are known only once every change
has taken its ids. Rows are never updated in place: the live row is ended
(``end_snapshot``) and a full new row inserted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import singledispatch
from typing import Any

import sqlalchemy as sa
from uuid6 import uuid7

from ..errors import AlreadyExists, CommitConflict, SchemaNotFound, SpecError, TableNotFound
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
from ..model.options import DEFAULT_INLINING_ROW_LIMIT, catalog_key, normalize_option
from ..model.state import SnapshotInfo
from ..model.types import DuckLakeType, Field, ListOf, MapOf, Struct, is_nested, member_fields
from . import tables as tb
from .changes_made import Change as Token
from .read_metadata import attached_data_path, with_slash
from .tables import CATALOG_TABLES, Row


@dataclass
class CommitContext:
    """Everything one commit attempt accumulates before it is written."""

    conn: sa.Connection
    dialect: str
    pg_schema: str | None
    base: SnapshotInfo  # the latest snapshot when this attempt started
    metadata: list[tuple[str, str, str | None, int | None]]
    next_catalog_id: int = 0
    next_file_id: int = 0
    needs_snapshot: bool = False
    shape_changed: bool = False
    tokens: list[Token] = field(default_factory=list)
    statements: list[Any] = field(default_factory=list)
    versioned_tables: list[int] = field(default_factory=list)
    new_schemas: dict[str, tuple[int, str]] = field(default_factory=dict)  # folded name -> (id, name)
    dropped_schemas: set[int] = field(default_factory=set)
    new_tables: dict[tuple[int, str], int] = field(default_factory=dict)  # (schema id, folded) -> id
    created_table_ids: dict[str, int] = field(default_factory=dict)  # "schema.table" -> id
    layout_changed: dict[int, int] = field(default_factory=dict)  # table id -> schema id: needs a new inlined table
    column_edits: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)  # (table, column) -> new values
    columns_cache: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # live column rows per table
    # live tables and views per schema as stored (the writers' ends run after them, so this
    # stays what the database holds for the whole attempt): one read per schema, not per table
    relations_cache: dict[int, dict[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.next_catalog_id = self.base.next_catalog_id
        self.next_file_id = self.base.next_file_id

    @property
    def data_path(self) -> str:
        """Where the lake's files are (``read.data_path``)."""
        return attached_data_path(self.conn) or with_slash(self.option("data_path", [(None, None)]) or "")

    @property
    def snapshot_id(self) -> int:
        return self.base.snapshot_id + 1

    @property
    def schema_version(self) -> int:
        return self.base.schema_version + (1 if self.shape_changed else 0)

    def catalog_id(self) -> int:
        self.next_catalog_id += 1
        return self.next_catalog_id - 1

    def catalog_change(self, *tokens: Token) -> None:
        """Record a change of the catalog's shape (bumps ``schema_version``)."""
        self.needs_snapshot = True
        self.shape_changed = True
        self.tokens.extend(tokens)

    def emit(self, statement: Any) -> None:
        self.statements.append(statement)

    def table_id(self, table_id: int | None, qualified: str) -> int:
        """The id of an existing table, or of one created earlier in this commit."""
        if table_id is not None:
            return table_id
        if qualified not in self.created_table_ids:
            raise TableNotFound(f"table {qualified} is neither in the catalog nor created by this commit")
        return self.created_table_ids[qualified]

    def versioned(self, table_id: int) -> None:
        """The table's layout, defaults, nullability or partitioning changed in this commit."""
        self.versioned_tables.append(table_id)

    def end_live(self, table: sa.Table, *conditions: sa.ColumnElement[bool]) -> None:
        """End the live version of rows (never update them in place)."""
        self.emit(
            table.update().where(*conditions, table.c.end_snapshot.is_(None)).values(end_snapshot=self.snapshot_id)
        )

    def option(self, key: str, scopes: list[tuple[str | None, int | None]]) -> str | None:
        """Resolve an option by scope precedence (first match in ``scopes``)."""
        for scope, scope_id in scopes:
            for k, v, s, sid in self.metadata:
                if k == key and s == scope and sid == scope_id:
                    return v
        return None


@singledispatch
def write_change(change: object, ctx: CommitContext) -> None:
    raise TypeError(f"no writer for {type(change).__name__}")


# --------------------------------------------------------------------------- lookups


def live_schemas(ctx: CommitContext) -> dict[str, tuple[int, str]]:
    """Live schemas by folded name, including those created earlier in this commit."""
    sc = CATALOG_TABLES["ducklake_schema"]
    rows = ctx.conn.execute(sa.select(sc.c.schema_id, sc.c.schema_name).where(sc.c.end_snapshot.is_(None)))
    out = {fold(r.schema_name): (r.schema_id, r.schema_name) for r in rows if r.schema_id not in ctx.dropped_schemas}
    out.update(ctx.new_schemas)
    return out


def schema_id_for(ctx: CommitContext, name: str) -> int:
    found = live_schemas(ctx).get(fold(name))
    if found is None:
        raise SchemaNotFound(f"schema {name!r} does not exist")
    return found[0]


def live_relations(ctx: CommitContext, schema_id: int) -> dict[str, int]:
    """Live tables and views of a schema by folded name (they share one namespace)."""
    stored = ctx.relations_cache.get(schema_id)
    if stored is None:
        t, v = CATALOG_TABLES["ducklake_table"], CATALOG_TABLES["ducklake_view"]
        stored = {
            fold(r.table_name): r.table_id
            for r in ctx.conn.execute(
                sa.select(t.c.table_id, t.c.table_name).where(t.c.schema_id == schema_id, t.c.end_snapshot.is_(None))
            )
        }
        stored.update(
            {
                fold(r.view_name): r.view_id
                for r in ctx.conn.execute(
                    sa.select(v.c.view_id, v.c.view_name).where(v.c.schema_id == schema_id, v.c.end_snapshot.is_(None))
                )
            }
        )
        ctx.relations_cache[schema_id] = stored
    out = dict(stored)
    out.update({name: tid for (sid, name), tid in ctx.new_tables.items() if sid == schema_id})
    return out


def live_table_row(ctx: CommitContext, table_id: int, what: str) -> Row:
    t = CATALOG_TABLES["ducklake_table"]
    row = ctx.conn.execute(sa.select(t).where(t.c.table_id == table_id, t.c.end_snapshot.is_(None))).one_or_none()
    if row is None:
        raise TableNotFound(f"{what}: table {table_id} no longer exists (dropped by a concurrent commit?)")
    return row


def inlining_limit(ctx: CommitContext, schema_id: int, table_id: int | None) -> int:
    value = ctx.option("data_inlining_row_limit", [("table", table_id), ("schema", schema_id), (None, None)])
    return int(value) if value is not None else DEFAULT_INLINING_ROW_LIMIT


# --------------------------------------------------------------------------- columns


def validate_fields(fields: tuple[Field, ...], where: str) -> None:
    """Names valid and unique (case-insensitively) at every level of the tree."""
    problems: list[str] = []

    def visit(fs: tuple[Field, ...], path: str) -> None:
        seen: dict[str, str] = {}
        if not fs:
            problems.append(
                f"{path or where}: needs at least one column"
                if not path
                else f"{path}: a struct needs at least one field"
            )
        for f in fs:
            label = f"{path}.{f.name}" if path else str(f.name)
            try:
                check_identifier(f.name, "column")
            except SpecError as exc:
                problems.extend(exc.problems)
                continue
            if fold(f.name) in seen:
                problems.append(
                    f"{label}: duplicate column name (same as {seen[fold(f.name)]!r}; names are case-insensitive)"
                )
            seen[fold(f.name)] = f.name
            if f.default is not None and is_nested(f.type):
                problems.append(f"{label}: defaults on {f.type.name} columns are not supported by DuckLake")
            for sub, sub_path in _nested_structs(f.type, label):
                visit(sub.fields, sub_path)

    visit(fields, "")
    if problems:
        raise SpecError(problems, source=where)


def _nested_structs(t: DuckLakeType, path: str) -> list[tuple[Struct, str]]:
    if isinstance(t, Struct):
        return [(t, path)]
    if isinstance(t, ListOf):
        return _nested_structs(t.element, f"{path}.element")
    if isinstance(t, MapOf):
        return _nested_structs(t.key, f"{path}.key") + _nested_structs(t.value, f"{path}.value")
    return []


def type_names(t: DuckLakeType) -> list[str]:
    out = [t.name]
    for sub in member_fields(t):
        out += type_names(sub.type)
    return out


def column_rows(
    f: Field,
    *,
    table_id: int,
    snapshot_id: int,
    first_id: int,
    parent_id: int | None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """``ducklake_column`` rows (depth-first ids from ``first_id``) and column-tag rows for a
    new column or field; returns them with the next free id.

    An expression default has no ``initial_default`` (DuckDB only accepts one at CREATE
    TABLE; the planner refuses it for added columns).
    """
    columns: list[dict[str, Any]] = []
    tags: list[dict[str, Any]] = []
    next_id = first_id

    def add(c: Field, parent: int | None) -> None:
        nonlocal next_id
        cid = next_id
        next_id += 1
        t, default = c.type, c.default
        if is_nested(t):
            initial, value, kind = None, "NULL", ""
        elif default is None:
            initial, value, kind = None, "NULL", "literal"
        else:
            initial, value = default.initial_default, default.value
            kind = "expression" if default.is_expression else "literal"
        columns.append(
            dict(
                column_id=cid,
                begin_snapshot=snapshot_id,
                end_snapshot=None,
                table_id=table_id,
                column_order=cid,
                column_name=c.name,
                column_type=t.name,
                initial_default=initial,
                default_value=value,
                nulls_allowed=c.nullable,
                parent_column=parent,
                default_value_type=kind,
                default_value_dialect="duckdb",
            )
        )
        for key, tag_value in ((("comment", c.comment),) if c.comment is not None else ()) + c.tags:
            tags.append(
                dict(
                    table_id=table_id,
                    column_id=cid,
                    begin_snapshot=snapshot_id,
                    end_snapshot=None,
                    key=key,
                    value=tag_value,
                )
            )
        for sub in member_fields(t):
            add(sub, cid)

    add(f, parent_id)
    return columns, tags, next_id


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
    ctx.emit(sa.text(tb.create_inlined_table_ddl(ctx.dialect, ctx.pg_schema, name, columns)))
    ctx.emit(
        CATALOG_TABLES["ducklake_inlined_data_tables"]
        .insert()
        .values(table_id=table_id, table_name=name, schema_version=ctx.base.schema_version + 1)
    )


def live_top_level_columns(ctx: CommitContext, table_id: int) -> tuple[list[tuple[str, str]], list[str]]:
    """(name, type name) of live top-level columns and all live type names, for inlined tables."""
    col = CATALOG_TABLES["ducklake_column"]
    rows = list(
        ctx.conn.execute(
            sa.select(col.c.column_name, col.c.column_type, col.c.parent_column)
            .where(col.c.table_id == table_id, col.c.end_snapshot.is_(None))
            .order_by(col.c.column_order)
        )
    )
    return [(r.column_name, r.column_type) for r in rows if r.parent_column is None], [r.column_type for r in rows]


# --------------------------------------------------------------------------- writers


@write_change.register
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
    _write_tags(ctx, schema_id, tuple(change.tags))
    ctx.new_schemas[fold(change.name)] = (schema_id, change.name)
    ctx.catalog_change(Token("created_schema", schema=change.name))


@write_change.register
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
        write_change(DropTable(r.table_id, f"{change.name}.{r.table_name}"), ctx)
    ctx.end_live(sc, sc.c.schema_id == change.schema_id)
    tg = CATALOG_TABLES["ducklake_tag"]
    ctx.end_live(tg, tg.c.object_id == change.schema_id)
    ctx.dropped_schemas.add(change.schema_id)
    ctx.catalog_change(Token("dropped_schema", id=change.schema_id))


@write_change.register
def _create_table(change: CreateTable, ctx: CommitContext) -> None:
    check_identifier(change.name, "table")
    where = f"table {change.schema}.{change.name}"
    validate_fields(change.columns, where)
    schema_id = schema_id_for(ctx, change.schema)
    if fold(change.name) in live_relations(ctx, schema_id):
        raise AlreadyExists(f"{change.schema}.{change.name} already exists")
    table_id = ctx.catalog_id()
    uuid = str(uuid7())
    ctx.emit(
        CATALOG_TABLES["ducklake_table"]
        .insert()
        .values(
            table_id=table_id,
            table_uuid=uuid,
            begin_snapshot=ctx.snapshot_id,
            end_snapshot=None,
            schema_id=schema_id,
            table_name=change.name,
            path=path_for(change.name, uuid),
            path_is_relative=True,
        )
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
    ctx.emit(CATALOG_TABLES["ducklake_column"].insert().values(all_columns))
    if all_tags:
        ctx.emit(CATALOG_TABLES["ducklake_column_tag"].insert().values(all_tags))
    _write_tags(ctx, table_id, tuple(change.tags))
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


def stored_schema_name(ctx: CommitContext, schema_id: int) -> str:
    """The stored spelling of a live schema's name, also one created in this commit
    (change tokens compare names exactly)."""
    return next(name for sid, name in live_schemas(ctx).values() if sid == schema_id)


@write_change.register
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


@write_change.register
def _rename_table(change: RenameTable, ctx: CommitContext) -> None:
    check_identifier(change.new_name, "table")
    row = live_table_row(ctx, change.table_id, f"rename {change.old_name}")
    old_short = change.old_name.rsplit(".", 1)[-1] if "." in change.old_name else change.old_name
    if row.table_name != old_short:
        raise CommitConflict(f"rename {change.old_name}: the table is now called {row.table_name!r}; re-plan")
    taken = live_relations(ctx, row.schema_id)
    if fold(change.new_name) in taken and taken[fold(change.new_name)] != change.table_id:
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


@write_change.register
def _set_tags(change: SetTags, ctx: CommitContext) -> None:
    if change.is_table:
        live_table_row(ctx, change.object_id, f"set tags of {change.object_name}")
    if _write_tags(ctx, change.object_id, change.tags):
        ctx.catalog_change(*([Token("altered_table", id=change.object_id)] if change.is_table else []))


def _write_tags(ctx: CommitContext, object_id: int, tags: tuple[tuple[str, str | None], ...]) -> bool:
    """End changed tags and insert their new values; False if nothing changed."""
    tg = CATALOG_TABLES["ducklake_tag"]
    current = {
        r.key: r.value
        for r in ctx.conn.execute(
            sa.select(tg.c.key, tg.c.value).where(tg.c.object_id == object_id, tg.c.end_snapshot.is_(None))
        )
    }
    changed = False
    for key, value in tags:
        check_identifier(key, "tag")
        if current.get(key) == value:
            continue
        if key in current:
            ctx.end_live(tg, tg.c.object_id == object_id, tg.c.key == key)
        if value is not None:
            ctx.emit(
                tg.insert().values(
                    object_id=object_id, begin_snapshot=ctx.snapshot_id, end_snapshot=None, key=key, value=value
                )
            )
        changed = True
    return changed


@write_change.register
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


# --------------------------------------------------------------------------- partitioning and sort


def live_columns(ctx: CommitContext, table_id: int) -> list[dict[str, Any]]:
    """Live column rows of a table as this commit leaves them (cached per commit)."""
    if table_id not in ctx.columns_cache:
        col = CATALOG_TABLES["ducklake_column"]
        ctx.columns_cache[table_id] = [
            dict(r._mapping)
            for r in ctx.conn.execute(
                sa.select(col)
                .where(col.c.table_id == table_id, col.c.end_snapshot.is_(None))
                .order_by(col.c.column_order)
            )
        ]
    return ctx.columns_cache[table_id]


def resolve_path(ctx: CommitContext, table_id: int, path: tuple[str, ...], what: str) -> dict[str, Any]:
    """The live column row at ``path`` (names matched case-insensitively, as DuckDB does)."""
    rows = live_columns(ctx, table_id)
    parent: int | None = None
    found: dict[str, Any] | None = None
    for name in path:
        found = next((r for r in rows if r["parent_column"] == parent and fold(r["column_name"]) == fold(name)), None)
        if found is None:
            raise CommitConflict(
                f"{what}: column {'.'.join(path)} does not exist (changed by a concurrent commit?); re-plan"
            )
        parent = found["column_id"]
    assert found is not None
    return found


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


# --------------------------------------------------------------------------- after the rows


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
    for statement in ctx.statements[statements_before:]:
        ctx.conn.execute(statement)
