"""A table's statistics after a maintenance commit, as DuckDB keeps them.

Adding files (flush) widens the column statistics with the files': ``contains_null`` if a
file has NULLs, ``contains_nan`` where it is tracked, min/max by typed comparison (an
in-process DuckDB compares, as the values are DuckDB's text forms); a file with values but
no min/max (types DuckDB keeps no statistics for) makes the table's unknown. Statistics only
ever widen. A rewrite that leaves no deletion makes the counters and every column's
statistics exact (DuckDB answers min/max from them once ``record_count`` is the row count)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ..model.file_changes import FileColumnStats, NewDataFile
from ..model.types import Decimal, from_catalog_name, to_duckdb_sql
from .files import inlined_file_deletions
from .inlined import SYSTEM_COLUMNS, InlinedRows, inlined_table, read_inlined
from .read_state import layout_snapshot, load_layout_at, load_schema_versions
from .tables import CATALOG_TABLES
from .write_context import CommitContext, live_columns

if TYPE_CHECKING:
    import duckdb


def _compare(con: duckdb.DuckDBPyConnection, type_name: str, table_value: str, file_value: str) -> int | None:
    """-1/0/1 for table value vs file value; None when either does not parse. File stats hold
    blobs in hex, while table stats from inlined inserts hold DuckDB's escaped text."""
    t = from_catalog_name(type_name)
    if t is None:
        return None
    sql_type = to_duckdb_sql(t)
    file_sql = "unhex($f)" if type_name == "blob" else f"TRY_CAST($f AS {sql_type})"
    row = con.execute(
        f"SELECT a < b, a = b FROM (SELECT TRY_CAST($t AS {sql_type}) AS a, {file_sql} AS b)",
        {"t": table_value, "f": file_value},
    ).fetchone()
    if row is None or row[0] is None:
        return None
    return -1 if row[0] else 0 if row[1] else 1


def widen_table_stats(
    ctx: CommitContext, table_id: int, type_names: dict[int, str], files: Iterable[Iterable[FileColumnStats]]
) -> None:
    ts = CATALOG_TABLES["ducklake_table_column_stats"]
    current: dict[int, dict[str, Any]] = {
        r.column_id: dict(r._mapping) for r in ctx.conn.execute(sa.select(ts).where(ts.c.table_id == table_id))
    }
    before = {k: dict(v) for k, v in current.items()}
    from ..duckdb_session import open_session  # lazily: only a commit that widens column stats needs it

    con = open_session()
    try:
        for file_stats in files:
            for s in file_stats:
                row = current.get(s.column_id)
                if row is None:
                    continue  # columns added after the first insert have no table-level row (as in DuckDB)
                # an unknown null count (a field under a list) may hide NULLs
                row["contains_null"] = bool(row["contains_null"]) or s.null_count is None or s.null_count > 0
                if row["contains_nan"] is not None:
                    row["contains_nan"] = bool(row["contains_nan"]) or bool(s.contains_nan)
                if s.value_count == 0:
                    continue  # only NULLs: nothing to widen
                type_name = type_names.get(s.column_id, "varchar")
                for key, new, keep_if in (("min_value", s.min_value, (-1, 0)), ("max_value", s.max_value, (0, 1))):
                    if row[key] is None or new is None:
                        row[key] = None
                        continue
                    order = _compare(con, type_name, row[key], new)
                    row[key] = None if order is None else row[key] if order in keep_if else new
    finally:
        con.close()
    for column_id, row in current.items():
        if row != before[column_id]:
            ctx.emit(
                ts.update()
                .where(ts.c.table_id == table_id, ts.c.column_id == column_id)
                .values(
                    contains_null=row["contains_null"],
                    contains_nan=row["contains_nan"],
                    min_value=row["min_value"],
                    max_value=row["max_value"],
                )
            )


def add_file_sizes(ctx: CommitContext, table_id: int, outputs: Sequence[NewDataFile]) -> None:
    """New files add their bytes to the table's (their rows were counted when inlined)."""
    ts = CATALOG_TABLES["ducklake_table_stats"]
    ctx.emit(
        ts.update()
        .where(ts.c.table_id == table_id)
        .values(file_size_bytes=ts.c.file_size_bytes + sum(f.file_size_bytes for f in outputs))
    )


def recompute_if_delete_free(
    ctx: CommitContext, table_id: int, sources: Sequence[int], outputs: Sequence[NewDataFile]
) -> None:
    """DuckDB's RecomputeGlobalStatsAfterRewrite (1.5.5, compared on twin lakes): once no live
    data file has a deletion left (a live delete file, or an inlined file deletion: those of
    ended files do not count), the table's statistics become exact: the counters (rows in live
    files and live inlined rows, bytes of live files) and every column's statistics over the
    live files, the outputs and the live inlined rows (``_column_stats_now``). With live inlined
    rows and a top-level column DuckDB does not fold (``_FOLDABLE``) nothing changes: the
    stale counters keep DuckDB scanning rather than answering from statistics."""
    df, dl = CATALOG_TABLES["ducklake_data_file"], CATALOG_TABLES["ducklake_delete_file"]
    kept = sa.select(df.c.data_file_id).where(
        df.c.table_id == table_id, df.c.end_snapshot.is_(None), df.c.data_file_id.not_in(list(sources))
    )  # a subquery: a table may have many files
    delete_files = ctx.conn.execute(
        sa.select(sa.func.count()).select_from(dl).where(dl.c.data_file_id.in_(kept), dl.c.end_snapshot.is_(None))
    ).scalar()
    deleted_from = list(inlined_file_deletions(ctx.conn, ctx.pg_schema, table_id))
    if delete_files or (deleted_from and ctx.conn.execute(kept.where(df.c.data_file_id.in_(deleted_from))).first()):
        return
    columns = live_columns(ctx, table_id)
    roots = {int(c["column_id"]): str(c["column_type"]) for c in columns if c["parent_column"] is None}
    inlined = _live_inlined_rows(ctx, table_id)
    if inlined and not all(_foldable(t) for t in roots.values()):
        return
    rows, size = ctx.conn.execute(
        sa.select(
            sa.func.coalesce(sa.func.sum(df.c.record_count), 0),
            sa.func.coalesce(sa.func.sum(df.c.file_size_bytes), 0),
        ).where(df.c.data_file_id.in_(kept))
    ).one()
    _set_counters(
        ctx,
        table_id,
        int(rows) + sum(f.record_count for f in outputs) + sum(len(batch.rows) for batch in inlined),
        int(size) + sum(f.file_size_bytes for f in outputs),
    )
    types = {int(c["column_id"]): str(c["column_type"]) for c in columns}
    _column_stats_now(ctx, table_id, types, roots, kept, outputs, inlined)


def _set_counters(ctx: CommitContext, table_id: int, rows: int, size: int) -> None:
    ts = CATALOG_TABLES["ducklake_table_stats"]
    ctx.emit(ts.update().where(ts.c.table_id == table_id).values(record_count=rows, file_size_bytes=size))


def _over_files(con: duckdb.DuckDBPyConnection, type_name: str, stats: Sequence[FileColumnStats]) -> dict[str, Any]:
    """A leaf column's table statistics over files that hold every row of the table (with
    none, unknown: DuckDB's for a column without live data). Min and max are compared by
    value in one query (a table may have many files); on a tie the first stays, as in
    DuckDB's merge."""
    if not stats:
        return {"contains_null": None, "contains_nan": None, "min_value": None, "max_value": None}
    valued = [s for s in stats if s.value_count != 0]  # only NULLs: no bounds to merge
    minimum = maximum = None
    if valued and all(s.min_value is not None and s.max_value is not None for s in valued):
        t = from_catalog_name(type_name)
        if t is not None:
            key = "unhex(v)" if type_name == "blob" else f"TRY_CAST(v AS {to_duckdb_sql(t)})"
            # the values go as JSON text: DuckDB converts a Python list parameter value by value
            row = con.execute(
                f"SELECT (SELECT arg_min(v, {key}) FROM unnest(from_json($lo, '[\"VARCHAR\"]')) AS u(v)), "
                f"(SELECT arg_max(v, {key}) FROM unnest(from_json($hi, '[\"VARCHAR\"]')) AS u(v))",
                {"lo": json.dumps([s.min_value for s in valued]), "hi": json.dumps([s.max_value for s in valued])},
            ).fetchone()
            minimum, maximum = row if row is not None else (None, None)
    return {
        "contains_null": any(s.null_count is None or s.null_count > 0 for s in stats),
        "contains_nan": any(bool(s.contains_nan) for s in stats) if type_name in _FLOATS else None,
        "min_value": minimum,
        "max_value": maximum,
    }


def _column_stats_now(
    ctx: CommitContext,
    table_id: int,
    live: dict[int, str],
    roots: dict[int, str],
    kept: sa.Select[tuple[int]] | None,
    outputs: Sequence[NewDataFile],
    inlined: Sequence[InlinedRows],
) -> None:
    """Each column row of the table over what the table holds after the commit, as DuckDB
    merges it: a live column (``live``: id -> type) over the statistics of the kept files
    (those ``kept`` selects), the outputs' and, for a top-level column (``roots``), the live
    inlined rows'; a dropped column over the outputs' alone (DuckDB reads the kept files'
    statistics of live columns only, and takes the new files' whole); a dropped column the
    outputs do not hold keeps its row."""
    ts, fcs = CATALOG_TABLES["ducklake_table_column_stats"], CATALOG_TABLES["ducklake_file_column_stats"]
    present = set(ctx.conn.execute(sa.select(ts.c.column_id).where(ts.c.table_id == table_id)).scalars())
    types = dict(live)
    stats: dict[int, list[FileColumnStats]] = defaultdict(list)
    if kept is not None:
        for r in ctx.conn.execute(
            sa.select(fcs)
            .where(fcs.c.data_file_id.in_(kept), fcs.c.column_id.in_(list(types)))
            .order_by(fcs.c.data_file_id)  # DuckDB's merge order: kept files, outputs, inlined rows
        ):
            # a kept file's row without bounds makes the column's unknown even when the file
            # holds only NULLs (DuckDB 1.5.5 skips only new files' and inlined rows' NULLs)
            values = r.value_count if r.min_value is not None and r.max_value is not None else None
            contains_nan = None if r.contains_nan is None else bool(r.contains_nan)
            stats[r.column_id].append(
                FileColumnStats(
                    r.column_id, r.column_size_bytes or 0, values, r.null_count, r.min_value, r.max_value, contains_nan
                )
            )
    for f in outputs:
        for s in f.column_stats:
            stats[s.column_id].append(s)
    types.update(_last_types(ctx, table_id, (present & set(stats)) - set(types)))
    from ..duckdb_session import open_session  # lazily, as in widen_table_stats

    con = open_session()  # in UTC: TIMESTAMPTZ values rendered as in the files' statistics
    try:
        for s in _inlined_stats(con, inlined, roots, ctx.dialect):
            stats[s.column_id].append(s)
        for column_id in sorted(present & set(types)):
            ctx.emit(
                ts.update()
                .where(ts.c.table_id == table_id, ts.c.column_id == column_id)
                .values(**_over_files(con, types[column_id], stats[column_id]))
            )
    finally:
        con.close()


def _last_types(ctx: CommitContext, table_id: int, column_ids: set[int]) -> dict[int, str]:
    """The type each dropped column had last."""
    col = CATALOG_TABLES["ducklake_column"]
    out: dict[int, str] = {}
    for r in ctx.conn.execute(
        sa.select(col.c.column_id, col.c.column_type)
        .where(col.c.table_id == table_id, col.c.column_id.in_(sorted(column_ids)))
        .order_by(col.c.begin_snapshot)
    ):
        out[int(r.column_id)] = str(r.column_type)
    return out


# The types whose live inlined rows DuckDB folds into recomputed statistics (numbers, times,
# text, booleans: its IsFoldableScalarType); with a top-level column of another type (nested,
# BLOB, UUID, INTERVAL, ...) and live inlined rows it leaves the statistics as they were.
_FOLDABLE = frozenset(
    {"boolean", "int8", "int16", "int32", "int64", "int128", "uint8", "uint16", "uint32", "uint64", "uint128"}
    | {"float32", "float64", "varchar", "json", "date", "time", "time_ns", "timetz"}
    | {"timestamp", "timestamp_s", "timestamp_ms", "timestamp_ns", "timestamptz"}
)
_FLOATS = ("float32", "float64")


def _foldable(type_name: str) -> bool:
    t = from_catalog_name(type_name)
    return isinstance(t, Decimal) or (t is not None and t.name in _FOLDABLE)


def _live_inlined_rows(ctx: CommitContext, table_id: int) -> list[InlinedRows]:
    """The live rows of each of the table's inlined tables that has some, in its layout."""
    it = CATALOG_TABLES["ducklake_inlined_data_tables"]
    out: list[InlinedRows] = []
    versions: list[tuple[int, int]] | None = None
    for name, version in ctx.conn.execute(
        sa.select(it.c.table_name, it.c.schema_version).where(it.c.table_id == table_id).order_by(it.c.schema_version)
    ).all():
        t = inlined_table(ctx.pg_schema, name)
        if not ctx.conn.execute(sa.select(sa.func.count()).select_from(t).where(t.c.end_snapshot.is_(None))).scalar():
            continue
        versions = load_schema_versions(ctx.conn, table_id) if versions is None else versions
        at = layout_snapshot(versions, version)
        layout, spec = load_layout_at(ctx.conn, table_id, ctx.base.snapshot_id if at is None else at)
        rows = read_inlined(ctx.conn, ctx.pg_schema, name, layout, ctx.base.snapshot_id)
        out.append(InlinedRows(name, layout, spec, [r for r in rows if r[2] is None]))
    return out


def _inlined_stats(
    con: duckdb.DuckDBPyConnection, batches: Sequence[InlinedRows], type_names: dict[int, str], dialect: str
) -> list[FileColumnStats]:
    """What DuckDB folds of live inlined rows, per top-level column (of ``type_names``, by id)
    and inlined table: the typed minimum and maximum as DuckDB renders the stored values (a
    boolean 'false' on PostgreSQL, '0' on SQLite, which stores it as an integer), none for a
    float column holding NaN (as Parquet statistics leave NaN out). Text is written as it is:
    DuckDB 1.5.5 on PostgreSQL writes it escaped as a blob ('z\\xC3\\xA9'), not what it reads."""
    out: list[FileColumnStats] = []
    for batch in batches:
        for i, column in enumerate(batch.columns):
            type_name = type_names.get(column.column_id)
            t = from_catalog_name(type_name) if type_name is not None else None
            if type_name is None or t is None:
                continue  # a column added later, or nested (not folded)
            values = [_as_text(r[len(SYSTEM_COLUMNS) + i]) for r in batch.rows]
            nan = "coalesce(bool_or(isnan(x)), false)" if type_name in _FLOATS else "NULL"
            as_stored = "::INTEGER" if type_name == "boolean" and dialect == "sqlite" else ""
            row = con.execute(
                f"SELECT min(x){as_stored}::VARCHAR, max(x){as_stored}::VARCHAR, count(x), {nan} "
                f"FROM (SELECT CAST(v AS {to_duckdb_sql(t)}) AS x FROM unnest($v::VARCHAR[]) AS u(v))",
                {"v": values},
            ).fetchone()
            assert row is not None
            minimum, maximum, count, contains_nan = row
            if contains_nan:
                minimum = maximum = None
            out.append(FileColumnStats(column.column_id, 0, count, len(values) - count, minimum, maximum, contains_nan))
    return out


def _as_text(value: Any) -> str | None:
    """An inlined value as ``read_inlined`` returns it (text, or bytes for text DuckDB stores as a blob)."""
    return bytes(value).decode() if isinstance(value, (bytes, memoryview)) else value


def stats_after_full_rewrite(
    ctx: CommitContext, table_id: int, type_names: dict[int, str], outputs: Sequence[NewDataFile]
) -> None:
    """After a rewrite whose ``outputs`` hold every live row of the table (no live file or
    inlined row is left besides them, so no deletion either): its statistics are exact, as
    ``recompute_if_delete_free`` makes them; ``type_names`` are the columns' types after it."""
    _set_counters(ctx, table_id, sum(f.record_count for f in outputs), sum(f.file_size_bytes for f in outputs))
    _column_stats_now(ctx, table_id, type_names, {}, None, outputs, ())


def add_inserted_files(
    ctx: CommitContext, table_id: int, type_names: dict[int, str], outputs: Sequence[NewDataFile]
) -> int:
    """The table's statistics after an insert of ``outputs`` (docs/ducklake-format.md §4.5), as
    DuckDB keeps them: counters grow (created with the table's first data, with a column row
    per leaf column the files have statistics for), column statistics widen (columns added
    after the first data have none). Returns the first row id of the inserted rows."""
    ts, tcs = CATALOG_TABLES["ducklake_table_stats"], CATALOG_TABLES["ducklake_table_column_stats"]
    rows, size = sum(f.record_count for f in outputs), sum(f.file_size_bytes for f in outputs)
    current = ctx.conn.execute(sa.select(ts.c.next_row_id).where(ts.c.table_id == table_id)).one_or_none()
    if current is not None:
        ctx.emit(
            ts.update()
            .where(ts.c.table_id == table_id)
            .values(
                record_count=ts.c.record_count + rows,
                next_row_id=ts.c.next_row_id + rows,
                file_size_bytes=ts.c.file_size_bytes + size,
            )
        )
        widen_table_stats(ctx, table_id, type_names, [f.column_stats for f in outputs])
        return int(current.next_row_id or 0)
    ctx.emit(ts.insert().values(table_id=table_id, record_count=rows, next_row_id=rows, file_size_bytes=size))
    leaves = sorted({s.column_id for f in outputs for s in f.column_stats if s.column_id in type_names})
    if leaves:
        from ..duckdb_session import open_session  # lazily, as in widen_table_stats

        con = open_session()
        try:
            values = [
                dict(
                    table_id=table_id,
                    column_id=column_id,
                    extra_stats=None,
                    **_over_files(
                        con,
                        type_names[column_id],
                        [s for f in outputs for s in f.column_stats if s.column_id == column_id],
                    ),
                )
                for column_id in leaves
            ]
        finally:
            con.close()
        ctx.emit(tcs.insert().values(values))
    return 0
