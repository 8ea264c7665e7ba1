"""Read catalog state at a snapshot: a fixed number of queries, whatever the catalog's size.

Every versioned row is valid at S when ``begin_snapshot <= S AND (end_snapshot IS NULL
OR S < end_snapshot)`` (docs/ducklake-format.md §3.2). Each catalog table is read with one query over all
tables at once and assembled in Python, so 1,000 tables cost the same ~14 round trips as one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import Any

import sqlalchemy as sa

from ..errors import DuckLakeError, NotFound
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
    SnapshotInfo,
    SnapshotRecord,
    SortField,
    SortSpec,
    TableState,
    TableStats,
)
from .paths import LakePaths, table_directory
from .tables import CATALOG_TABLES

FORMAT_VERSION = "1.0"
DATA_PATH_OPTION = "ducklake_data_path"  # engine execution option: the data path attached with


def valid_at(table: sa.Table, snapshot_id: int) -> sa.ColumnElement[bool]:
    return sa.and_(
        table.c.begin_snapshot <= snapshot_id,
        sa.or_(table.c.end_snapshot.is_(None), table.c.end_snapshot > snapshot_id),
    )


def load_snapshot(conn: sa.Connection, snapshot_id: int | None = None) -> SnapshotInfo:
    s = CATALOG_TABLES["ducklake_snapshot"]
    query = sa.select(s)
    if snapshot_id is None:
        query = query.where(s.c.snapshot_id == sa.select(sa.func.max(s.c.snapshot_id)).scalar_subquery())
    else:
        query = query.where(s.c.snapshot_id == snapshot_id)
    row = conn.execute(query).one_or_none()
    if row is None:
        raise NotFound(
            f"snapshot {snapshot_id} does not exist" if snapshot_id is not None else "the catalog has no snapshot"
        )
    return SnapshotInfo(row.snapshot_id, row.snapshot_time, row.schema_version, row.next_catalog_id, row.next_file_id)


def load_snapshots(
    conn: sa.Connection, after: int | None = None, *, extra_info_containing: str | None = None
) -> list[SnapshotRecord]:
    """Snapshots with their change sets, oldest first (``after``: only later ones;
    ``extra_info_containing``: only those whose ``commit_extra_info`` contains that text)."""
    s, c = CATALOG_TABLES["ducklake_snapshot"], CATALOG_TABLES["ducklake_snapshot_changes"]
    query = (
        sa.select(s, c.c.changes_made, c.c.author, c.c.commit_message, c.c.commit_extra_info)
        .select_from(s.outerjoin(c, c.c.snapshot_id == s.c.snapshot_id))
        .order_by(s.c.snapshot_id)
    )
    if after is not None:
        query = query.where(s.c.snapshot_id > after)
    if extra_info_containing is not None:
        query = query.where(c.c.commit_extra_info.contains(extra_info_containing, autoescape=True))
    return [
        SnapshotRecord(
            r.snapshot_id,
            r.snapshot_time,
            r.schema_version,
            r.changes_made,
            r.author,
            r.commit_message,
            r.commit_extra_info,
        )
        for r in conn.execute(query)
    ]


Metadata = list[tuple[str, str, str | None, int | None]]  # ducklake_metadata rows: key, value, scope, scope id
Row = sa.Row[*tuple[Any, ...]]  # a row of any columns
Select = sa.Select[*tuple[Any, ...]]
OnlyTables = Callable[[sa.Table, Select], Select]  # restricts a query to the tables asked for


def load_metadata(conn: sa.Connection) -> Metadata:
    m = CATALOG_TABLES["ducklake_metadata"]
    return [tuple(r) for r in conn.execute(sa.select(m.c.key, m.c.value, m.c.scope, m.c.scope_id))]


def table_ids_from(conn: sa.Connection, first_id: int) -> set[int]:
    """Ids of the tables given ``first_id`` or a later catalog id (live or not): the tables
    created since the snapshot whose ``next_catalog_id`` that was."""
    tb = CATALOG_TABLES["ducklake_table"]
    return set(conn.execute(sa.select(tb.c.table_id).where(tb.c.table_id >= first_id)).scalars())


def load_freshness(conn: sa.Connection) -> tuple[int, Metadata]:
    """The latest snapshot id and the metadata rows, in one round trip: together they say
    whether a cached state is still current (options change without a snapshot)."""
    m, s = CATALOG_TABLES["ducklake_metadata"], CATALOG_TABLES["ducklake_snapshot"]
    latest = sa.select(sa.func.max(s.c.snapshot_id)).scalar_subquery()
    rows = conn.execute(
        sa.select(latest, m.c.key, m.c.value, m.c.scope, m.c.scope_id).order_by(
            m.c.scope, m.c.scope_id, m.c.key, m.c.value
        )
    ).all()
    if not rows:
        raise DuckLakeError("the catalog has no ducklake_metadata rows")
    return int(rows[0][0]), [tuple(r[1:]) for r in rows]


def options_by_scope(metadata: Metadata) -> tuple[dict[str, str], dict[tuple[str, int], dict[str, str]]]:
    """Global options, and those of each (scope, scope id)."""
    global_opts = {k: v for k, v, scope, _ in metadata if scope is None}
    scoped: dict[tuple[str, int], dict[str, str]] = defaultdict(dict)
    for k, v, scope, scope_id in metadata:
        if scope is not None and scope_id is not None:
            scoped[(scope, scope_id)][k] = v
    return global_opts, scoped


def with_options(state: CatalogState, metadata: Metadata) -> CatalogState:
    """``state`` with every option (global, schema, table) as ``metadata`` has it."""
    global_opts, scoped = options_by_scope(metadata)

    def scoped_options(kind: str, obj: Any) -> Any:
        options = scoped.get((kind, obj.schema_id if kind == "schema" else obj.table_id), {})
        return obj if obj.options == options else replace(obj, options=options)  # most keep theirs

    return replace(
        state,
        version=check_format_version(metadata, "the catalog"),
        options=global_opts,
        schemas={n: scoped_options("schema", s) for n, s in state.schemas.items()},
        tables={k: scoped_options("table", t) for k, t in state.tables.items()},
    )


def check_format_version(metadata: Metadata, where: str) -> str:
    from ..errors import UnsupportedCatalog

    version = next((v for k, v, scope, _ in metadata if k == "version" and scope is None), None)
    if version != FORMAT_VERSION:
        raise UnsupportedCatalog(
            f"{where} is a DuckLake catalog at format version {version!r}; this operator reads and writes "
            f"version {FORMAT_VERSION} only. "
            + (
                "Migrate it first by attaching it once from DuckDB 1.5.5 with ATTACH '...' (AUTOMATIC_MIGRATION TRUE)."
                if version and version < FORMAT_VERSION
                else "It was written by a newer DuckLake; upgrade the operator."
            )
        )
    return version


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
    S = snap.snapshot_id
    metadata = load_metadata(conn)
    version = check_format_version(metadata, "the catalog")
    global_opts, scoped = options_by_scope(metadata)

    def only_tables(table: sa.Table, query: Select) -> Select:
        return query.where(table.c.table_id.in_(list(table_ids))) if table_ids is not None else query

    tg = CATALOG_TABLES["ducklake_tag"]
    tags: dict[int, dict[str, str]] = defaultdict(dict)
    for r in conn.execute(sa.select(tg.c.object_id, tg.c.key, tg.c.value).where(valid_at(tg, S))):
        tags[r.object_id][r.key] = r.value

    sc = CATALOG_TABLES["ducklake_schema"]
    schemas: dict[int, SchemaState] = {}
    for r in conn.execute(sa.select(sc).where(valid_at(sc, S))):
        schemas[r.schema_id] = SchemaState(
            r.schema_id,
            str(r.schema_uuid),
            r.schema_name,
            r.path,
            bool(r.path_is_relative),
            r.begin_snapshot,
            tags=dict(tags.get(r.schema_id, {})),
            options=scoped.get(("schema", r.schema_id), {}),
        )

    tb = CATALOG_TABLES["ducklake_table"]
    table_rows = list(
        conn.execute(
            (sa.select(tb) if table_names is not None else only_tables(tb, sa.select(tb))).where(valid_at(tb, S))
        )
    )
    if table_names is not None:  # by name, or by id when both are given
        wanted = {(fold(s), fold(t)) for s, t in table_names}
        ids = set(table_ids or ())
        table_rows = [
            r
            for r in table_rows
            if r.table_id in ids
            or (r.schema_id in schemas and (fold(schemas[r.schema_id].name), fold(r.table_name)) in wanted)
        ]
        table_ids = [r.table_id for r in table_rows]

    col = CATALOG_TABLES["ducklake_column"]
    ctag = CATALOG_TABLES["ducklake_column_tag"]
    column_tags: dict[tuple[int, int], dict[str, str]] = defaultdict(dict)
    for r in conn.execute(
        only_tables(
            ctag, sa.select(ctag.c.table_id, ctag.c.column_id, ctag.c.key, ctag.c.value).where(valid_at(ctag, S))
        )
    ):
        column_tags[(r.table_id, r.column_id)][r.key] = r.value
    columns_by_table: dict[int, list[Row]] = defaultdict(list)
    for r in conn.execute(
        only_tables(col, sa.select(col).where(valid_at(col, S)).order_by(col.c.table_id, col.c.column_order))
    ):
        columns_by_table[r.table_id].append(r)
    next_ids: dict[int, int] = dict(
        conn.execute(
            only_tables(col, sa.select(col.c.table_id, sa.func.max(col.c.column_id) + 1).group_by(col.c.table_id))
        ).all()
    )

    partitions = _load_partitions(conn, S, only_tables)
    sorts = _load_sorts(conn, S, only_tables)
    stats = _load_stats(conn, only_tables)
    it = CATALOG_TABLES["ducklake_inlined_data_tables"]
    inlined: dict[int, list[InlinedTable]] = defaultdict(list)
    for r in conn.execute(only_tables(it, sa.select(it).order_by(it.c.schema_version))):
        inlined[r.table_id].append(InlinedTable(r.table_name, r.schema_version))
    data_files, delete_files = _load_files(conn, S, only_tables) if include_files else ({}, {})
    sv = CATALOG_TABLES["ducklake_schema_versions"]
    layouts = {  # the last snapshot (and its schema version) that changed each table's layout
        r.table_id: (r.snapshot, r.schema_version)
        for r in conn.execute(
            only_tables(
                sv,
                sa.select(
                    sv.c.table_id,
                    sa.func.max(sv.c.begin_snapshot).label("snapshot"),
                    sa.func.max(sv.c.schema_version).label("schema_version"),
                )
                .where(sv.c.begin_snapshot <= S)
                .group_by(sv.c.table_id),
            )
        )
    }

    tables: dict[tuple[str, str], TableState] = {}
    for r in table_rows:
        schema = schemas.get(r.schema_id)
        if schema is None:
            raise DuckLakeError(
                f"table {r.table_id} refers to schema {r.schema_id}, which does not exist at snapshot {S}"
            )
        tables[(schema.name, r.table_name)] = TableState(
            table_id=r.table_id,
            table_uuid=str(r.table_uuid),
            schema_id=r.schema_id,
            schema_name=schema.name,
            name=r.table_name,
            path=r.path,
            path_is_relative=bool(r.path_is_relative),
            begin_snapshot=r.begin_snapshot,
            columns=_column_tree(columns_by_table.get(r.table_id, []), column_tags, r.table_id),
            next_column_id=next_ids.get(r.table_id, 1),
            partition=partitions.get(r.table_id),
            sort=sorts.get(r.table_id),
            tags=dict(tags.get(r.table_id, {})),
            options=scoped.get(("table", r.table_id), {}),
            data_files=tuple(data_files.get(r.table_id, ())),
            delete_files=tuple(delete_files.get(r.table_id, ())),
            stats=stats.get(r.table_id),
            inlined_tables=tuple(inlined.get(r.table_id, ())),
            layout_change=layouts.get(r.table_id),
        )
    return CatalogState(
        snapshot=snap,
        version=version,
        data_path=attached_data_path(conn) or with_slash(global_opts.get("data_path", "")),
        options=global_opts,
        schemas={s.name: s for s in schemas.values()},
        tables=tables,
    )


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


def _load_partitions(conn: sa.Connection, S: int, only_tables: OnlyTables) -> dict[int, PartitionSpec]:
    pi, pc = CATALOG_TABLES["ducklake_partition_info"], CATALOG_TABLES["ducklake_partition_column"]
    query = (
        sa.select(pi.c.table_id, pi.c.partition_id, pc.c.partition_key_index, pc.c.column_id, pc.c.transform)
        .select_from(pi.outerjoin(pc, sa.and_(pc.c.partition_id == pi.c.partition_id, pc.c.table_id == pi.c.table_id)))
        .where(valid_at(pi, S))
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


def _load_sorts(conn: sa.Connection, S: int, only_tables: OnlyTables) -> dict[int, SortSpec]:
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
        .where(valid_at(si, S))
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


def _load_files(
    conn: sa.Connection, S: int, only_tables: OnlyTables
) -> tuple[dict[int, list[DataFile]], dict[int, list[DeleteFile]]]:
    df, dl, pv = (
        CATALOG_TABLES["ducklake_data_file"],
        CATALOG_TABLES["ducklake_delete_file"],
        CATALOG_TABLES["ducklake_file_partition_value"],
    )
    values: dict[int, list[tuple[int, str | None]]] = defaultdict(list)
    live_ids = sa.select(df.c.data_file_id).where(valid_at(df, S))
    for r in conn.execute(
        only_tables(
            pv,
            sa.select(pv).where(pv.c.data_file_id.in_(live_ids)).order_by(pv.c.data_file_id, pv.c.partition_key_index),
        )
    ):
        values[r.data_file_id].append((r.partition_key_index, r.partition_value))
    data: dict[int, list[DataFile]] = defaultdict(list)
    for r in conn.execute(
        only_tables(df, sa.select(df).where(valid_at(df, S)).order_by(df.c.table_id, df.c.data_file_id))
    ):
        data[r.table_id].append(
            DataFile(
                r.data_file_id,
                r.table_id,
                r.begin_snapshot,
                r.end_snapshot,
                r.path,
                bool(r.path_is_relative),
                r.file_format,
                r.record_count or 0,
                r.file_size_bytes or 0,
                r.footer_size,
                r.row_id_start,
                r.partition_id,
                r.encryption_key,
                r.mapping_id,
                r.partial_max,
                tuple(values.get(r.data_file_id, ())),
            )
        )
    deletes: dict[int, list[DeleteFile]] = defaultdict(list)
    for r in conn.execute(
        only_tables(dl, sa.select(dl).where(valid_at(dl, S)).order_by(dl.c.table_id, dl.c.delete_file_id))
    ):
        deletes[r.table_id].append(
            DeleteFile(
                r.delete_file_id,
                r.table_id,
                r.begin_snapshot,
                r.end_snapshot,
                r.data_file_id,
                r.path,
                bool(r.path_is_relative),
                r.format,
                r.delete_count or 0,
                r.file_size_bytes or 0,
                r.footer_size,
                r.encryption_key,
                r.partial_max,
            )
        )
    return data, deletes


def metadata_schema(conn: sa.Connection) -> str | None:
    """The PostgreSQL schema holding the catalog (dynamic tables are not covered by the
    engine's schema translation, so they are qualified explicitly)."""
    return (conn.get_execution_options().get("schema_translate_map") or {}).get(None)


def load_inlined_rows(conn: sa.Connection, table: TableState, snapshot_id: int) -> list[dict[str, object]]:
    """Inlined rows of one table visible at ``snapshot_id``, values as the backend stores them."""
    out: list[dict[str, object]] = []
    schema = metadata_schema(conn)
    for inlined_table in table.inlined_tables:
        reflected = sa.Table(inlined_table.name, sa.MetaData(), autoload_with=conn, schema=schema)
        query = (
            sa.select(reflected)
            .where(
                reflected.c.begin_snapshot <= snapshot_id,
                sa.or_(reflected.c.end_snapshot.is_(None), reflected.c.end_snapshot > snapshot_id),
            )
            .order_by(reflected.c.row_id)
        )
        out.extend(dict(r._mapping) for r in conn.execute(query))
    return out


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


def load_lake_paths(conn: sa.Connection) -> LakePaths:
    """The directory of every table ever (each version with its schema's row; the latest
    wins), under the lake's data path (``data_path``)."""
    root, stored = data_path(conn), stored_data_path(conn)
    tb, sc = CATALOG_TABLES["ducklake_table"], CATALOG_TABLES["ducklake_schema"]
    rows = conn.execute(
        sa.select(
            tb.c.table_id,
            tb.c.path.label("table_path"),
            tb.c.path_is_relative.label("table_relative"),
            sc.c.path.label("schema_path"),
            sc.c.path_is_relative.label("schema_relative"),
        )
        .select_from(tb.outerjoin(sc, sc.c.schema_id == tb.c.schema_id))
        .order_by(tb.c.begin_snapshot, sc.c.begin_snapshot)
    )
    return LakePaths(
        root,
        {
            r.table_id: table_directory(root, r.schema_path, r.schema_relative, r.table_path, r.table_relative)
            for r in rows
        },
        moved_from=stored if stored != root else None,
    )


def referenced_files(conn: sa.Connection, lake: LakePaths) -> set[str]:
    """Where every file any catalog row refers to is (any version, and those scheduled for
    deletion): the files that are never orphans."""
    out: set[str] = set()
    for name in ("ducklake_data_file", "ducklake_delete_file"):
        f = CATALOG_TABLES[name]
        out |= {
            lake.file(r.table_id, r.path, r.path_is_relative)
            for r in conn.execute(sa.select(f.c.table_id, f.c.path, f.c.path_is_relative))
        }
    sched = CATALOG_TABLES["ducklake_files_scheduled_for_deletion"]
    out |= {
        lake.scheduled(r.path, r.path_is_relative)
        for r in conn.execute(sa.select(sched.c.path, sched.c.path_is_relative))
    }
    return out | {moved for path in out if (moved := lake.moved(path)) is not None}


def with_slash(path: str) -> str:
    return path if path.endswith("/") else path + "/"


def stored_data_path(conn: sa.Connection) -> str:
    """The data path the catalog stores, ending in '/'."""
    return with_slash(next(v for k, v, s, _ in load_metadata(conn) if k == "data_path" and s is None))


def attached_data_path(conn: sa.Connection) -> str | None:
    """The data path the catalog is attached with when its lake moved (``Catalog(data_path=...)``,
    DuckDB's OVERRIDE_DATA_PATH); DuckDB never rewrites the stored one."""
    return conn.get_execution_options().get(DATA_PATH_OPTION)


def data_path(conn: sa.Connection) -> str:
    """Where the lake's files are: the data path attached with, else the stored one."""
    return attached_data_path(conn) or stored_data_path(conn)


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
