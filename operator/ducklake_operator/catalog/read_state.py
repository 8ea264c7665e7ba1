"""Read catalog state at a snapshot: a fixed number of queries, whatever the catalog's size.

Each catalog table is read with one query over all tables at once and assembled in Python,
so 1,000 tables cost the same ~14 round trips as one. Also a table's layout (columns and
partition spec) at an older snapshot, and every partition spec it has had.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass

import sqlalchemy as sa

from ..errors import DuckLakeError
from ..model.names import fold
from ..model.state import (
    CatalogState,
    ColumnState,
    ColumnStats,
    DataFile,
    DeleteFile,
    InlinedTable,
    PartitionField,
    PartitionSpec,
    SchemaState,
    SortField,
    SortSpec,
    TableState,
    TableStats,
)
from .read_files import load_live_files
from .read_metadata import attached_data_path, check_format_version, load_metadata, options_by_scope, with_slash
from .read_snapshots import load_snapshot, valid_at
from .tables import CATALOG_TABLES, OnlyTables, Row, Select


def load_catalog_state(
    conn: sa.Connection,
    snapshot_id: int | None = None,
    *,
    include_files: bool = True,
    table_ids: Collection[int] | None = None,
    table_names: Collection[tuple[str, str]] | None = None,
) -> CatalogState:
    """The whole catalog as of ``snapshot_id`` (default: the latest snapshot).

    ``include_files=False`` skips data/delete files and partition values (the schema
    planner needs neither); ``table_ids`` or ``table_names`` ((schema, table), matched
    case-insensitively) restrict the tables read to those.
    """
    snap = load_snapshot(conn, snapshot_id)
    at = snap.snapshot_id
    metadata = load_metadata(conn)
    version = check_format_version(metadata, "the catalog")
    global_opts, scoped = options_by_scope(metadata)
    tags = _load_tags(conn, at)
    schemas = _load_schemas(conn, at, tags, scoped)
    table_rows = _load_table_rows(conn, at, schemas, table_ids, table_names)
    if table_names is not None:
        table_ids = [r.table_id for r in table_rows]
    ids = table_ids

    def only_tables(table: sa.Table, query: Select) -> Select:
        return query.where(table.c.table_id.in_(list(ids))) if ids is not None else query

    parts = _TableParts(
        columns=_load_columns(conn, at, only_tables),
        partitions=_load_partitions(conn, at, only_tables),
        sorts=_load_sorts(conn, at, only_tables),
        stats=_load_stats(conn, only_tables),
        inlined=_load_inlined_tables(conn, only_tables),
        files=load_live_files(conn, at, only_tables) if include_files else ({}, {}),
        layouts=_load_layout_changes(conn, at, only_tables),
        tags=tags,
        options=scoped,
    )
    tables: dict[tuple[str, str], TableState] = {}
    for r in table_rows:
        schema = schemas.get(r.schema_id)
        if schema is None:
            raise DuckLakeError(
                f"table {r.table_id} refers to schema {r.schema_id}, which does not exist at snapshot {at}"
            )
        tables[(schema.name, r.table_name)] = parts.table(r, schema)
    return CatalogState(
        snapshot=snap,
        version=version,
        data_path=attached_data_path(conn) or with_slash(global_opts.get("data_path", "")),
        options=global_opts,
        schemas={s.name: s for s in schemas.values()},
        tables=tables,
    )


Tags = dict[int, dict[str, str]]  # by object id (schema or table)
ScopedOptions = dict[tuple[str, int], dict[str, str]]  # by (scope, scope id)


@dataclass(frozen=True)
class _Columns:
    rows: dict[int, list[Row]]  # by table id, in column order
    tags: dict[tuple[int, int], dict[str, str]]  # by (table id, column id)
    next_ids: dict[int, int]  # by table id: the next column id (ids are never reused)


@dataclass(frozen=True)
class _TableParts:
    """Everything read about the tables besides their own rows, by table id."""

    columns: _Columns
    partitions: dict[int, PartitionSpec]
    sorts: dict[int, SortSpec]
    stats: dict[int, TableStats]
    inlined: dict[int, list[InlinedTable]]
    files: tuple[dict[int, list[DataFile]], dict[int, list[DeleteFile]]]
    layouts: dict[int, tuple[int, int]]
    tags: Tags
    options: ScopedOptions

    def table(self, r: Row, schema: SchemaState) -> TableState:
        data_files, delete_files = self.files
        return TableState(
            table_id=r.table_id,
            table_uuid=str(r.table_uuid),
            schema_id=r.schema_id,
            schema_name=schema.name,
            name=r.table_name,
            path=r.path,
            path_is_relative=bool(r.path_is_relative),
            begin_snapshot=r.begin_snapshot,
            columns=_column_tree(self.columns.rows.get(r.table_id, []), self.columns.tags, r.table_id),
            next_column_id=self.columns.next_ids.get(r.table_id, 1),
            partition=self.partitions.get(r.table_id),
            sort=self.sorts.get(r.table_id),
            tags=dict(self.tags.get(r.table_id, {})),
            options=self.options.get(("table", r.table_id), {}),
            data_files=tuple(data_files.get(r.table_id, ())),
            delete_files=tuple(delete_files.get(r.table_id, ())),
            stats=self.stats.get(r.table_id),
            inlined_tables=tuple(self.inlined.get(r.table_id, ())),
            layout_change=self.layouts.get(r.table_id),
        )


def _load_tags(conn: sa.Connection, at: int) -> Tags:
    tg = CATALOG_TABLES["ducklake_tag"]
    tags: Tags = defaultdict(dict)
    for r in conn.execute(sa.select(tg.c.object_id, tg.c.key, tg.c.value).where(valid_at(tg, at))):
        tags[r.object_id][r.key] = r.value
    return tags


def _load_schemas(conn: sa.Connection, at: int, tags: Tags, scoped: ScopedOptions) -> dict[int, SchemaState]:
    sc = CATALOG_TABLES["ducklake_schema"]
    return {
        r.schema_id: SchemaState(
            r.schema_id,
            str(r.schema_uuid),
            r.schema_name,
            r.path,
            bool(r.path_is_relative),
            r.begin_snapshot,
            tags=dict(tags.get(r.schema_id, {})),
            options=scoped.get(("schema", r.schema_id), {}),
        )
        for r in conn.execute(sa.select(sc).where(valid_at(sc, at)))
    }


def _load_table_rows(
    conn: sa.Connection,
    at: int,
    schemas: dict[int, SchemaState],
    table_ids: Collection[int] | None,
    table_names: Collection[tuple[str, str]] | None,
) -> list[Row]:
    """The live tables' rows: those of ``table_ids``, or named in ``table_names`` (by name,
    or by id when both are given), or all."""
    tb = CATALOG_TABLES["ducklake_table"]
    query = sa.select(tb)
    if table_names is None and table_ids is not None:
        query = query.where(tb.c.table_id.in_(list(table_ids)))
    rows = list(conn.execute(query.where(valid_at(tb, at))))
    if table_names is None:
        return rows
    wanted = {(fold(s), fold(t)) for s, t in table_names}
    ids = set(table_ids or ())
    return [
        r
        for r in rows
        if r.table_id in ids
        or (r.schema_id in schemas and (fold(schemas[r.schema_id].name), fold(r.table_name)) in wanted)
    ]


def _load_columns(conn: sa.Connection, at: int, only_tables: OnlyTables) -> _Columns:
    col, ctag = CATALOG_TABLES["ducklake_column"], CATALOG_TABLES["ducklake_column_tag"]
    column_tags: dict[tuple[int, int], dict[str, str]] = defaultdict(dict)
    for r in conn.execute(
        only_tables(
            ctag, sa.select(ctag.c.table_id, ctag.c.column_id, ctag.c.key, ctag.c.value).where(valid_at(ctag, at))
        )
    ):
        column_tags[(r.table_id, r.column_id)][r.key] = r.value
    rows: dict[int, list[Row]] = defaultdict(list)
    for r in conn.execute(
        only_tables(col, sa.select(col).where(valid_at(col, at)).order_by(col.c.table_id, col.c.column_order))
    ):
        rows[r.table_id].append(r)
    next_ids: dict[int, int] = dict(
        conn.execute(
            only_tables(col, sa.select(col.c.table_id, sa.func.max(col.c.column_id) + 1).group_by(col.c.table_id))
        ).all()
    )
    return _Columns(rows, column_tags, next_ids)


def _load_inlined_tables(conn: sa.Connection, only_tables: OnlyTables) -> dict[int, list[InlinedTable]]:
    it = CATALOG_TABLES["ducklake_inlined_data_tables"]
    inlined: dict[int, list[InlinedTable]] = defaultdict(list)
    for r in conn.execute(only_tables(it, sa.select(it).order_by(it.c.schema_version))):
        inlined[r.table_id].append(InlinedTable(r.table_name, r.schema_version))
    return inlined


def _load_layout_changes(conn: sa.Connection, at: int, only_tables: OnlyTables) -> dict[int, tuple[int, int]]:
    """The last snapshot (and its schema version) that changed each table's layout."""
    sv = CATALOG_TABLES["ducklake_schema_versions"]
    return {
        r.table_id: (r.snapshot, r.schema_version)
        for r in conn.execute(
            only_tables(
                sv,
                sa.select(
                    sv.c.table_id,
                    sa.func.max(sv.c.begin_snapshot).label("snapshot"),
                    sa.func.max(sv.c.schema_version).label("schema_version"),
                )
                .where(sv.c.begin_snapshot <= at)
                .group_by(sv.c.table_id),
            )
        )
    }


def _column_tree(
    rows: list[Row], tags: dict[tuple[int, int], dict[str, str]], table_id: int
) -> tuple[ColumnState, ...]:
    children: dict[int | None, list[Row]] = defaultdict(list)
    for r in rows:
        children[r.parent_column].append(r)

    def build(r: Row) -> ColumnState:
        return ColumnState(
            column_id=r.column_id,
            name=r.column_name,
            type_name=r.column_type,
            nullable=bool(r.nulls_allowed),
            initial_default=r.initial_default,
            default_value=r.default_value,
            default_value_type=r.default_value_type,
            parent_id=r.parent_column,
            order=r.column_order,
            begin_snapshot=r.begin_snapshot,
            children=tuple(build(c) for c in sorted(children.get(r.column_id, []), key=lambda x: x.column_order)),
            tags=dict(tags.get((table_id, r.column_id), {})),
        )

    return tuple(build(r) for r in sorted(children.get(None, []), key=lambda x: x.column_order))


def _load_partitions(conn: sa.Connection, at: int, only_tables: OnlyTables) -> dict[int, PartitionSpec]:
    pi, pc = CATALOG_TABLES["ducklake_partition_info"], CATALOG_TABLES["ducklake_partition_column"]
    query = (
        sa.select(pi.c.table_id, pi.c.partition_id, pc.c.partition_key_index, pc.c.column_id, pc.c.transform)
        .select_from(pi.outerjoin(pc, sa.and_(pc.c.partition_id == pi.c.partition_id, pc.c.table_id == pi.c.table_id)))
        .where(valid_at(pi, at))
        .order_by(pi.c.table_id, pc.c.partition_key_index)
    )
    fields: dict[int, list[PartitionField]] = defaultdict(list)
    ids: dict[int, int] = {}
    for r in conn.execute(only_tables(pi, query)):
        ids[r.table_id] = r.partition_id
        if r.partition_key_index is not None:
            fields[r.table_id].append(PartitionField(r.partition_key_index, r.column_id, r.transform))
    return {t: PartitionSpec(pid, tuple(fields.get(t, ()))) for t, pid in ids.items()}


def load_partition_specs(conn: sa.Connection, table_id: int) -> dict[int, PartitionSpec]:
    """Every partition spec a table has had (live or ended), by id: files keep the spec they
    were written under (docs/ducklake-format.md §6.3)."""
    pi, pc = CATALOG_TABLES["ducklake_partition_info"], CATALOG_TABLES["ducklake_partition_column"]
    rows = conn.execute(
        sa.select(pi.c.partition_id, pc.c.partition_key_index, pc.c.column_id, pc.c.transform)
        .select_from(pi.outerjoin(pc, sa.and_(pc.c.partition_id == pi.c.partition_id, pc.c.table_id == pi.c.table_id)))
        .where(pi.c.table_id == table_id)
        .order_by(pi.c.partition_id, pc.c.partition_key_index)
    )
    fields: dict[int, list[PartitionField]] = defaultdict(list)
    for r in rows:
        found = fields[r.partition_id]
        if r.partition_key_index is not None:
            found.append(PartitionField(r.partition_key_index, r.column_id, r.transform))
    return {pid: PartitionSpec(pid, tuple(f)) for pid, f in fields.items()}


def _load_sorts(conn: sa.Connection, at: int, only_tables: OnlyTables) -> dict[int, SortSpec]:
    si, se = CATALOG_TABLES["ducklake_sort_info"], CATALOG_TABLES["ducklake_sort_expression"]
    query = (
        sa.select(
            si.c.table_id,
            si.c.sort_id,
            se.c.sort_key_index,
            se.c.expression,
            se.c.dialect,
            se.c.sort_direction,
            se.c.null_order,
        )
        .select_from(si.outerjoin(se, sa.and_(se.c.sort_id == si.c.sort_id, se.c.table_id == si.c.table_id)))
        .where(valid_at(si, at))
        .order_by(si.c.table_id, se.c.sort_key_index)
    )
    fields: dict[int, list[SortField]] = defaultdict(list)
    ids: dict[int, int] = {}
    for r in conn.execute(only_tables(si, query)):
        ids[r.table_id] = r.sort_id
        if r.sort_key_index is not None:
            fields[r.table_id].append(
                SortField(r.sort_key_index, r.expression, r.dialect, r.sort_direction, r.null_order)
            )
    return {t: SortSpec(sid, tuple(fields.get(t, ()))) for t, sid in ids.items()}


def _load_stats(conn: sa.Connection, only_tables: OnlyTables) -> dict[int, TableStats]:
    ts, tcs = CATALOG_TABLES["ducklake_table_stats"], CATALOG_TABLES["ducklake_table_column_stats"]
    per_column: dict[int, dict[int, ColumnStats]] = defaultdict(dict)
    for r in conn.execute(only_tables(tcs, sa.select(tcs))):
        per_column[r.table_id][r.column_id] = ColumnStats(
            r.column_id, r.contains_null, r.contains_nan, r.min_value, r.max_value, r.extra_stats
        )
    return {
        r.table_id: TableStats(
            r.record_count or 0, r.next_row_id or 0, r.file_size_bytes or 0, per_column.get(r.table_id, {})
        )
        for r in conn.execute(only_tables(ts, sa.select(ts)))
    }


def load_schema_versions(conn: sa.Connection, table_id: int) -> list[tuple[int, int]]:
    """(begin_snapshot, schema_version) rows of one table, oldest first (for compaction)."""
    sv = CATALOG_TABLES["ducklake_schema_versions"]
    return [
        (r.begin_snapshot, r.schema_version)
        for r in conn.execute(
            sa.select(sv.c.begin_snapshot, sv.c.schema_version)
            .where(sv.c.table_id == table_id)
            .order_by(sv.c.begin_snapshot)
        )
    ]


def load_layout_at(
    conn: sa.Connection, table_id: int, snapshot_id: int
) -> tuple[tuple[ColumnState, ...], PartitionSpec | None]:
    """A table's columns and partition spec as of ``snapshot_id``, read from the versioned
    rows alone (the snapshot itself may have been expired): for flushing an older inlined
    table in the layout its rows were written with."""
    col = CATALOG_TABLES["ducklake_column"]
    rows = list(conn.execute(sa.select(col).where(col.c.table_id == table_id, valid_at(col, snapshot_id))))
    only = lambda table, query: query.where(table.c.table_id == table_id)  # noqa: E731
    return _column_tree(rows, {}, table_id), _load_partitions(conn, snapshot_id, only).get(table_id)


def layout_snapshot(schema_versions: list[tuple[int, int]], schema_version: int) -> int | None:
    """The snapshot at which a table's layout of ``schema_version`` began (the newest
    ``ducklake_schema_versions`` row at or below it; versions bumped without a row, such
    as DuckDB creating a first inlined table, keep the previous layout)."""
    begins = [begin for begin, version in schema_versions if version <= schema_version]
    return max(begins) if begins else None
