"""A table's statistics after a maintenance commit, as DuckDB keeps them.

Adding files (flush) widens the column statistics with the files': ``contains_null`` if a
file has NULLs, ``contains_nan`` where it is tracked, min/max by typed comparison (an
in-process DuckDB compares, as the values are DuckDB's text forms); a file with values but
no min/max (types DuckDB keeps no statistics for) makes the table's unknown. Statistics only
ever widen. A rewrite makes the gross counters exact once no delete is left."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ..model.file_changes import FileColumnStats, NewDataFile
from ..model.types import from_catalog_name, to_duckdb_sql
from .files import inlined_file_deletions
from .tables import T
from .write import CommitContext

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
    ts = T["ducklake_table_column_stats"]
    current: dict[int, dict[str, Any]] = {
        r.column_id: dict(r._mapping) for r in ctx.conn.execute(sa.select(ts).where(ts.c.table_id == table_id))
    }
    before = {k: dict(v) for k, v in current.items()}
    import duckdb  # lazily: only a commit that widens column stats needs it

    con = duckdb.connect()
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
    ts = T["ducklake_table_stats"]
    ctx.emit(
        ts.update()
        .where(ts.c.table_id == table_id)
        .values(file_size_bytes=ts.c.file_size_bytes + sum(f.file_size_bytes for f in outputs))
    )


def recompute_if_delete_free(
    ctx: CommitContext, table_id: int, sources: Sequence[int], outputs: Sequence[NewDataFile]
) -> None:
    """DuckDB's RecomputeGlobalStatsAfterRewrite: once the table has no live delete file and
    no inlined file deletion left (those of ended files count, as in DuckDB 1.5.5), its gross
    counters become exact: rows in live files and live inlined rows, bytes of live files."""
    df, dl, it = T["ducklake_data_file"], T["ducklake_delete_file"], T["ducklake_inlined_data_tables"]
    remaining = set(
        ctx.conn.execute(
            sa.select(df.c.data_file_id).where(df.c.table_id == table_id, df.c.end_snapshot.is_(None))
        ).scalars()
    ) - set(sources)
    if (
        remaining
        and ctx.conn.execute(
            sa.select(sa.func.count())
            .select_from(dl)
            .where(dl.c.data_file_id.in_(remaining), dl.c.end_snapshot.is_(None))
        ).scalar()
    ) or inlined_file_deletions(ctx.conn, ctx.pg_schema, table_id):
        return
    rows, size = (
        ctx.conn.execute(
            sa.select(
                sa.func.coalesce(sa.func.sum(df.c.record_count), 0),
                sa.func.coalesce(sa.func.sum(df.c.file_size_bytes), 0),
            ).where(df.c.data_file_id.in_(remaining))
        ).one()
        if remaining
        else (0, 0)
    )
    for name in ctx.conn.execute(sa.select(it.c.table_name).where(it.c.table_id == table_id)).scalars():
        t = sa.Table(name, sa.MetaData(), sa.Column("end_snapshot", sa.BigInteger), schema=ctx.pg_schema)
        rows += (
            ctx.conn.execute(sa.select(sa.func.count()).select_from(t).where(t.c.end_snapshot.is_(None))).scalar() or 0
        )
    _set_counters(
        ctx,
        table_id,
        int(rows) + sum(f.record_count for f in outputs),
        int(size) + sum(f.file_size_bytes for f in outputs),
    )


def _set_counters(ctx: CommitContext, table_id: int, rows: int, size: int) -> None:
    ts = T["ducklake_table_stats"]
    ctx.emit(ts.update().where(ts.c.table_id == table_id).values(record_count=rows, file_size_bytes=size))


def _over_files(con: duckdb.DuckDBPyConnection, type_name: str, stats: Sequence[FileColumnStats]) -> dict[str, Any]:
    """A leaf column's table statistics over files that hold every row of the table."""
    minimum: str | None = None
    maximum: str | None = None
    known = True
    for s in stats:
        if s.value_count == 0:
            continue  # only NULLs
        if s.min_value is None or s.max_value is None:
            known = False
            continue
        if minimum is None or _compare(con, type_name, minimum, s.min_value) == 1:
            minimum = s.min_value
        if maximum is None or _compare(con, type_name, maximum, s.max_value) == -1:
            maximum = s.max_value
    return {
        "contains_null": any(s.null_count is None or s.null_count > 0 for s in stats),
        "contains_nan": any(bool(s.contains_nan) for s in stats) if type_name in ("float32", "float64") else None,
        "min_value": minimum if known else None,
        "max_value": maximum if known else None,
    }


def stats_after_full_rewrite(
    ctx: CommitContext, table_id: int, type_names: dict[int, str], changed: int, outputs: Sequence[NewDataFile]
) -> None:
    """After a rewrite whose ``outputs`` hold every live row of the table: column ``changed``
    (retyped) takes the outputs' statistics; once no deletion is left (none of the table's
    delete files is live any more), the gross counters and every column's statistics become
    exact, as ``recompute_if_delete_free`` makes them after a rewrite of some files."""
    exact = not inlined_file_deletions(ctx.conn, ctx.pg_schema, table_id)
    if exact:
        _set_counters(ctx, table_id, sum(f.record_count for f in outputs), sum(f.file_size_bytes for f in outputs))
    ts = T["ducklake_table_column_stats"]
    present = set(ctx.conn.execute(sa.select(ts.c.column_id).where(ts.c.table_id == table_id)).scalars())
    import duckdb  # lazily, as in widen_table_stats

    con = duckdb.connect()
    try:
        for column_id in sorted(present if exact else present & {changed}):
            if column_id not in type_names:
                continue  # a dropped column's row
            stats = [s for f in outputs for s in f.column_stats if s.column_id == column_id]
            ctx.emit(
                ts.update()
                .where(ts.c.table_id == table_id, ts.c.column_id == column_id)
                .values(**_over_files(con, type_names[column_id], stats))
            )
    finally:
        con.close()


def add_inserted_files(
    ctx: CommitContext, table_id: int, type_names: dict[int, str], outputs: Sequence[NewDataFile]
) -> int:
    """The table's statistics after an insert of ``outputs`` (docs/ducklake-format.md §4.5), as
    DuckDB keeps them: counters grow (created with the table's first data, with a column row
    per leaf column the files have statistics for), column statistics widen (columns added
    after the first data have none). Returns the first row id of the inserted rows."""
    ts, tcs = T["ducklake_table_stats"], T["ducklake_table_column_stats"]
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
        import duckdb  # lazily, as in widen_table_stats

        con = duckdb.connect()
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
