"""rewriteColumnType's task: one output file's conversion, what a Spark task (or an in-process
thread) runs, apart from the job's driver (``rewrite_column_type``), so a Spark worker imports
neither the catalog nor SQLAlchemy. It reads its files in the table's current layout (deleted
rows dropped), converts the retyped columns with ``conversion_sql`` and writes the new layout
with DuckDB's writer; a value that does not convert stops the write (DuckDB's ``error()``)
when the job fails on them, and a second look names the first of them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import duckdb

from ducklake_operator import storage
from ducklake_operator.model.conversions import conversion_sql
from ducklake_operator.model.state import ColumnState
from ducklake_operator.model.types import DuckLakeType, to_duckdb_sql

from .file_rewrite import OrderedOutput, SourceFile, scan_sources, write_ordered
from .parquet_writer import ROW_ID, WrittenFile, literal, quote, scratch_session

FIRST_FAILURES = 5  # offending values named in a failed job's message
CAST_FAILED = "ducklake: a value does not convert"  # the error() a failed value raises while writing


@dataclass(frozen=True)
class TaskColumn:
    """One column a task converts."""

    chain: tuple[int, ...]  # column ids from the top-level column down to the retyped one
    old_type: DuckLakeType
    new_type: DuckLakeType


@dataclass(frozen=True)
class RetypeTask:
    """One output file's work (picklable, no catalog access)."""

    sources: tuple[SourceFile, ...]
    output: str  # full path or URI
    columns: tuple[ColumnState, ...]  # the table's layout, read in
    new_columns: tuple[ColumnState, ...]  # the same with the columns' new types, written
    retyped: tuple[TaskColumn, ...]
    on_cast_error: str
    options: tuple[tuple[str, str], ...] = ()
    s3: storage.S3Config | None = None
    # the sources' first row id when their ids are contiguous and none is deleted: the output
    # then takes them by position (DuckDB's rule for a file without the row id column) and
    # need not carry them; None: embedded
    row_id_start: int | None = None


@dataclass(frozen=True)
class RetypeOutput:
    task: RetypeTask
    written: WrittenFile | None  # None: no live row, or values that failed (nothing written)
    rows: int  # live rows converted
    failed: tuple[int, ...]  # per retyped column: non-NULL values that did not convert
    first_failed: tuple[tuple[tuple[int, str], ...], ...]  # per column: (row id, value) of the first (fail)
    row_id_start: int | None = None  # the output's row ids are row_id_start + position; None: embedded


def _chain(columns: tuple[ColumnState, ...], ids: tuple[int, ...]) -> list[ColumnState]:
    out, level = [], columns
    for column_id in ids:
        out.append(next(c for c in level if c.column_id == column_id))
        level = out[-1].children
    return out


def _field(ref: str, name: str) -> str:
    return f"struct_extract({ref}, {literal(name)})"


def _leaf(chain: list[ColumnState], ref: str) -> str:
    """The retyped value inside the top-level column ``ref``."""
    for c in chain[1:]:
        ref = _field(ref, c.name)
    return ref


def _converted(column: ColumnState, ref: str, leaves: dict[int, Callable[[str], str]]) -> str:
    """The column ``ref`` with each value ``leaves`` names (by column id) replaced by
    ``leaves[id](value)`` (structs rebuilt around them; a NULL struct stays NULL)."""
    if column.column_id in leaves:
        return leaves[column.column_id](ref)
    if not any(c.column_id in leaves for c in column.walk()):
        return ref
    parts = ", ".join(f"{quote(c.name)} := {_converted(c, _field(ref, c.name), leaves)}" for c in column.children)
    return f"CASE WHEN {ref} IS NULL THEN NULL ELSE struct_pack({parts}) END"


def _convert(r: TaskColumn, value: str) -> str:
    return f"CAST({conversion_sql(r.old_type, r.new_type, value)} AS {to_duckdb_sql(r.new_type)})"


def converted_value(r: TaskColumn, value: str, on_cast_error: str) -> str:
    """DuckDB SQL of what the job writes for ``value`` (an expression of ``r``'s old type):
    its conversion, NULL where it does not convert, or, when the job fails on such values, an
    ``error()`` that stops the write."""
    if on_cast_error != "fail":
        return _convert(r, value)
    # coalesce evaluates its second argument only where the first is NULL
    return f"coalesce({_convert(r, value)}, CASE WHEN {value} IS NULL THEN NULL ELSE error('{CAST_FAILED}') END)"


def retype_files(task: RetypeTask) -> RetypeOutput:
    with scratch_session(task.s3) as (con, scratch):
        return _retype(con, task, scratch)


def _retype(con: duckdb.DuckDBPyConnection, task: RetypeTask, scratch: str) -> RetypeOutput:
    """One pass: read, convert every retyped column, write. A value that does not convert stops
    the write when the job fails on them (DuckDB's ``error()``); a second look at the sources
    then names the first of them, or, when they become NULL, counts them."""
    scan = scan_sources(con, task.sources, task.columns, scratch, deletion_snapshots=False)  # deleted rows go
    chains = [_chain(task.columns, r.chain) for r in task.retyped]
    values = [_leaf(chain, quote(chain[0].name)) for chain in chains]  # each retyped value, as read

    def leaf(r: TaskColumn) -> Callable[[str], str]:
        return lambda v: converted_value(r, v, task.on_cast_error)

    leaves = {r.chain[-1]: leaf(r) for r in task.retyped}
    tops = [c for c in task.columns if any(r.chain[0] == c.column_id for r in task.retyped)]
    replaced = ", ".join(f"{_converted(c, quote(c.name), leaves)} AS {quote(c.name)}" for c in tops)
    # a source carrying its row ids (a flush, an UPDATE's output) may not be positional
    row_id_start = task.row_id_start if ROW_ID not in scan.hidden and not scan.with_deletes else None
    how = OrderedOutput(
        columns=task.new_columns,
        embed_row_ids=row_id_start is None,
        keep_snapshot_ids=False,
        # the scan's order is the files' unless deletes are joined or layouts unioned
        tiebreak="__file, __row" if scan.with_deletes or scan.layouts > 1 else "",
        options=task.options,
    )
    try:
        out = write_ordered(
            con,
            f"SELECT * REPLACE ({replaced}) FROM ({scan.sql}) WHERE __deleted_at IS NULL",
            scan.params,
            how,
            scratch,
        )
    except duckdb.Error as exc:
        if CAST_FAILED not in str(exc):
            raise
        out = None
    none: tuple[tuple[tuple[int, str], ...], ...] = tuple(() for _ in task.retyped)
    if out is not None and task.on_cast_error == "fail":
        return _stored(task, out.written, tuple(0 for _ in task.retyped), none, row_id_start)
    fails = [f"{v} IS NOT NULL AND {_convert(r, v)} IS NULL" for r, v in zip(task.retyped, values, strict=True)]
    counts = con.execute(
        "SELECT "
        + ", ".join(f"count(*) FILTER (WHERE {f})" for f in fails)
        + f" FROM ({scan.sql}) WHERE __deleted_at IS NULL",
        scan.params,
    ).fetchone()
    failed = tuple(int(n) for n in counts) if counts else tuple(0 for _ in task.retyped)
    first = none
    if task.on_cast_error == "fail":  # the job's message names the first (values nulled are only counted)
        first = tuple(
            tuple(
                (int(row_id), str(value))
                for row_id, value in con.execute(
                    f"SELECT {quote(ROW_ID)}, CAST({v} AS VARCHAR) FROM ({scan.sql}) WHERE __deleted_at IS NULL "
                    f"AND {f} ORDER BY 1 LIMIT {FIRST_FAILURES}",
                    scan.params,
                ).fetchall()
            )
            if n
            else ()
            for v, f, n in zip(values, fails, failed, strict=True)
        )
    return _stored(task, out.written if out else None, failed, first, row_id_start)


def _stored(
    task: RetypeTask,
    written: WrittenFile | None,
    failed: tuple[int, ...],
    first: tuple[tuple[tuple[int, str], ...], ...],
    row_id_start: int | None,
) -> RetypeOutput:
    """The task's result, its file stored at the output path unless empty (or not written)."""
    if written is None or written.record_count == 0:
        return RetypeOutput(task, None, 0, failed, first)
    storage.store(written.local_path, task.output)
    return RetypeOutput(task, written, written.record_count, failed, first, row_id_start)
