"""What the writers of one commit share (``CommitContext``): the transaction, the ids taken
so far and the rows buffered; and their lookups of the catalog as it is now, including what
earlier changes of the same commit created.

Writers read immediately but only *buffer* their writes in the ``CommitContext``, because
the snapshot row must be inserted first and its counters are known only once every change
has taken its ids (``write_snapshot``). Rows are never updated in place: the live row is
ended (``end_snapshot``) and a full new row inserted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from ..errors import CommitConflict, SchemaNotFound, TableNotFound
from ..model.names import fold
from ..model.options import DEFAULT_INLINING_ROW_LIMIT
from ..model.state import SnapshotInfo
from .changes_made import Change as Token
from .read_metadata import attached_data_path, with_slash
from .tables import CATALOG_TABLES, Row


@dataclass(frozen=True)
class RowsInsert:
    """A buffered INSERT of many rows (``CommitContext.emit_rows``)."""

    table: sa.Table
    rows: list[dict[str, Any]]  # the same keys each
    same: dict[str, Any]  # values, or SQL expressions, of every row

    def statement(self, dialect: str) -> tuple[sa.Insert, list[dict[str, Any]] | None]:
        """PostgreSQL: one ``INSERT ... SELECT FROM unnest(<an array per column>)``, whatever
        the number of rows. SQLite (in-process, no arrays): one prepared statement run per row."""
        if dialect != "postgresql":
            insert = self.table.insert()
            return (insert.values(**self.same) if self.same else insert), self.rows
        names = list(self.rows[0])
        arrays = [
            sa.bindparam(f"u_{i}", [r[n] for r in self.rows], type_=postgresql.ARRAY(self.table.c[n].type))
            for i, n in enumerate(names)
        ]
        unnested = sa.func.unnest(*arrays).table_valued(*names).render_derived()
        columns = [_as_stored(unnested.c[n], self.table.c[n]) for n in names]
        select = sa.select(*columns, *self.same.values())
        return self.table.insert().from_select(names + list(self.same), select), None


def _as_stored(value: sa.ColumnElement[Any], column: sa.Column[Any]) -> sa.ColumnElement[Any]:
    """Times and UUIDs travel as text: cast to the column's type (no assignment cast from text)."""
    logical = column.info.get("logical")
    if logical == "TIMESTAMPTZ":
        return sa.cast(value, sa.TIMESTAMP(timezone=True))
    if logical == "UUID":
        return sa.cast(value, postgresql.UUID(as_uuid=False))
    return value


Buffered = Any  # an executable statement, or RowsInsert


def execute_buffered(conn: sa.Connection, statements: list[Buffered]) -> None:
    """Send the buffered statements, in order."""
    for statement in statements:
        if isinstance(statement, RowsInsert):
            conn.execute(*statement.statement(conn.dialect.name))
        else:
            conn.execute(statement)


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
    statements: list[Buffered] = field(default_factory=list)
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

    def emit_rows(self, table: sa.Table, rows: list[dict[str, Any]], **same: Any) -> None:
        """Insert ``rows`` (the same keys each; ``same``: values, or SQL expressions, of every
        row) in one statement, not a statement per row (``RowsInsert``)."""
        if rows:
            self.statements.append(RowsInsert(table, rows, same))

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


def stored_schema_name(ctx: CommitContext, schema_id: int) -> str:
    """The stored spelling of a live schema's name, also one created in this commit
    (change tokens compare names exactly)."""
    return next(name for sid, name in live_schemas(ctx).values() if sid == schema_id)


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
