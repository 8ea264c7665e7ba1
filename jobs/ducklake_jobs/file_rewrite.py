"""The unit of work a Spark task runs for compact and rewriteDeletes: read some data files of
one table (same schema version and partition), drop deleted rows, attach row lineage,
order, and write one Parquet file with DuckDB's conventions.

Everything a task needs is in its ``RewriteTask`` (picklable, no catalog access): the
driver plans and commits, the task only moves bytes. Inputs are fetched to local scratch
when remote and the output is stored at the path the driver chose, so a failed job knows
every file it may have left behind.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from ducklake_operator import storage
from ducklake_operator.model.state import ColumnState, DataFile, DeleteFile

from .lake_paths import TablePaths
from .layout_projection import projection, same_layout
from .parquet_writer import (
    HIDDEN_FIELD_IDS,
    ROW_ID,
    SNAPSHOT_ID,
    FieldIds,
    WrittenFile,
    field_ids_from_arrow,
    field_ids_from_columns,
    literal,
    quote,
    scratch_session,
    write_delete_file,
    write_parquet,
)

# Most files of few rows one DuckDB scan reads: a task of more such files reads them this many
# at a time into a staging table (``_staged``). DuckDB's order-preserving COPY holds each
# file's rows as a batch of its own (tens of kB each) until a row group's worth (122,880
# rows) has come: a problem for files of a few rows only, so files of at least
# ``STAGE_BELOW_ROWS`` rows on average are read in one scan, whatever their number (staging
# 2,000 files of 11,000 rows took 16-29 s and 1.6 GB where one scan took 9.5 s and 436 MB)
FILES_PER_SCAN = 1000
STAGE_BELOW_ROWS = 2048  # DuckDB's vector size: at most 60 batches of them per row group


@dataclass(frozen=True)
class SourceFile:
    path: str  # full path or URI
    begin_snapshot: int
    row_id_start: int | None
    delete_file: str | None = None  # full path of its live delete file
    delete_file_snapshot: int = 0  # the delete file's begin snapshot (its deletions' when it has no snapshot column)
    deletions: tuple[tuple[int, int], ...] = ()  # inlined file deletions: (0-based position, snapshot)


def source_file(
    paths: TablePaths, f: DataFile, delete_file: DeleteFile | None = None, deletions: tuple[tuple[int, int], ...] = ()
) -> SourceFile:
    return SourceFile(
        paths.full(f.path, f.path_is_relative),
        f.begin_snapshot,
        f.row_id_start,
        paths.full(delete_file.path, delete_file.path_is_relative) if delete_file else None,
        delete_file.begin_snapshot if delete_file else 0,
        deletions,
    )


@dataclass(frozen=True)
class RewriteTask:
    sources: tuple[SourceFile, ...]
    output: str  # full path or URI chosen by the driver
    columns: tuple[ColumnState, ...]  # the layout written: the table's at the group's schema version
    keep_snapshot_ids: bool  # compaction keeps each row's begin snapshot; a rewrite does not
    embed_row_ids: bool  # at least: sources with an embedded row id column always embed
    order_by: str = ""  # DuckDB ORDER BY items of the table's latest sort key
    options: tuple[tuple[str, str], ...] = ()
    s3: storage.S3Config | None = None  # the driver's S3 settings, for executors
    # deleted rows: None drops them all (a rewrite); a snapshot id drops those deleted at or
    # before it (no live snapshot can see them) and keeps the others, covered by a delete
    # file written at ``output_deletes`` (a compaction that applies deletes)
    drop_deleted_until: int | None = None
    output_deletes: str = ""


@dataclass(frozen=True)
class RewriteOutput:
    task: RewriteTask
    written: WrittenFile | None  # None: every row was deleted, nothing written
    rows_read: int
    sorted: bool  # False if the sort key does not bind to these (older) files' columns
    deletes: tuple[tuple[int, int], ...] = ()  # (position in the output, snapshot) of kept deleted rows
    delete_file: WrittenFile | None = None
    row_ids_embedded: bool = True  # False: row ids are row_id_start + position


def sql_list(values: Sequence[int] | Sequence[str]) -> str:
    """A list literal: DuckDB's Python client converts a list parameter value by value (and
    tries to import pandas for each, 0.3 ms apiece when it is not installed: seconds for a
    few thousand files), so the per-file lists go into the query text."""
    if all(isinstance(v, int) for v in values):
        return f"[{', '.join(str(v) for v in values)}]::BIGINT[]"
    return f"[{', '.join(literal(str(v)) for v in values)}]"


def _scan_sql(
    columns: list[str],
    hidden: set[str],
    deletions: str,
    files: list[str],
    indexes: list[int],
    sources: tuple[SourceFile, ...],
    by_name: bool = True,
) -> str:
    """One scan of the sources ``indexes`` (among all sources, in order, so row order is kept
    without sorting), written in one layout, at the local paths ``files``: ``columns`` read
    the layout's columns; each row's id and begin snapshot come from the file's lineage
    columns, else from its file's ``row_id_start + position`` and ``begin_snapshot`` (lists of
    these files only, in a one-row relation the scan is crossed with: as list literals in the
    select items, DuckDB made each list anew for every chunk it read, 0.3 s of a 4.9 s
    compaction of 2,000 files, against 0.1 s crossed); ``__deleted_at``: the snapshot that
    deleted the row (NULL: live), or 0 for every deleted row when ``deletions`` is ``FLAGS``
    (``_deleted_bitmaps``); ``__file``, ``__row``: where it was read (index among all sources).
    ``by_name``: the files' columns differ (their lineage columns, their types): read by name
    (``union_by_name``, which costs about 5% of a compaction's CPU where they do not)."""
    position = "p.file_index::BIGINT"
    contiguous = indexes == list(range(indexes[0], indexes[0] + len(indexes)))
    lists = {
        "__starts": sql_list([sources[i].row_id_start or 0 for i in indexes]),
        "__snapshots": sql_list([sources[i].begin_snapshot for i in indexes]),
        **({} if contiguous else {"__indexes": sql_list(indexes)}),
    }
    file = f"({position} + {indexes[0]})" if contiguous else f"c.__indexes[{position} + 1]"
    row_id = f"c.__starts[{position} + 1] + p.file_row_number"
    snapshot = f"c.__snapshots[{position} + 1]"
    if ROW_ID in hidden:
        row_id = f"COALESCE(p.{quote(ROW_ID)}, {row_id})"
    if SNAPSHOT_ID in hidden:
        snapshot = f"COALESCE(p.{quote(SNAPSHOT_ID)}, {snapshot})"
    deleted_at, join = "NULL::BIGINT", ""
    if deletions == SNAPSHOTS:
        deleted_at = "d.snapshot"
        join = f" LEFT JOIN deleted d ON d.file_index = {file} AND d.pos = p.file_row_number"
    elif deletions == FLAGS:
        deleted_at = "CASE WHEN get_bit(b.bits, p.file_row_number::INTEGER) = 1 THEN 0::BIGINT END"
        join = f" LEFT JOIN deleted_bits b ON b.file_index = {file}"
    per_file = ", ".join(f"{value} AS {name}" for name, value in lists.items())
    return (
        f"SELECT {''.join(c + ', ' for c in columns)}{row_id}::BIGINT AS {quote(ROW_ID)}, "
        f"{snapshot}::BIGINT AS {quote(SNAPSHOT_ID)}, {deleted_at} AS __deleted_at, {file} AS __file, "
        f"p.file_row_number AS __row FROM read_parquet({sql_list(files)}, file_row_number = true"
        f"{', union_by_name = true' if by_name else ''}) p "
        f"CROSS JOIN (SELECT {per_file}) c{join}"
    )


NO_DELETIONS, SNAPSHOTS, FLAGS = "none", "snapshots", "flags"  # how a scan marks deleted rows


def _register_deleted(con: duckdb.DuckDBPyConnection, sources: tuple[SourceFile, ...], scratch: str) -> bool:
    """The temporary table ``deleted`` (file_index, pos, snapshot): every deleted row of the
    sources, read by DuckDB from their delete files (a file's position holds the deletion of
    the file's snapshot when it has no snapshot column), and their inlined deletions where the
    delete file does not name the position. Read into Python lists, 1.25 M deleted rows took
    about 2 s of a 300 MB rewrite's 5; False: no source has a deleted row."""
    parts = []
    with_files = [(i, storage.fetch(src.delete_file, scratch)) for i, src in enumerate(sources) if src.delete_file]
    for has_snapshots in (True, False):
        group = [(i, local) for i, local in with_files if (SNAPSHOT_ID in pq.read_schema(local).names) == has_snapshots]
        if not group:
            continue
        at = "[p.file_index::BIGINT + 1]"
        begin = f"({sql_list([sources[i].delete_file_snapshot for i, _ in group])}){at}"
        snapshot = f"COALESCE(p.{quote(SNAPSHOT_ID)}, {begin})" if has_snapshots else begin
        parts.append(
            f"SELECT ({sql_list([i for i, _ in group])}){at} AS file_index, p.pos::BIGINT AS pos, "
            f"{snapshot}::BIGINT AS snapshot FROM read_parquet({sql_list([local for _, local in group])}) p"
        )
    inlined = [(i, pos, snap) for i, src in enumerate(sources) for pos, snap in src.deletions]
    if not parts and not inlined:
        return False
    none = "SELECT NULL::BIGINT AS file_index, NULL::BIGINT AS pos, NULL::BIGINT AS snapshot LIMIT 0"
    con.execute(f"CREATE OR REPLACE TEMP TABLE deleted AS {' UNION ALL '.join(parts) or none}")
    if inlined:
        con.register("__inlined", pa.table({
            "file_index": pa.array([d[0] for d in inlined], pa.int64()),
            "pos": pa.array([d[1] for d in inlined], pa.int64()),
            "snapshot": pa.array([d[2] for d in inlined], pa.int64()),
        }))  # fmt: skip
        try:
            con.execute(
                "INSERT INTO deleted SELECT i.file_index, i.pos, i.snapshot FROM __inlined i "
                "ANTI JOIN (SELECT file_index, pos FROM deleted) d USING (file_index, pos)"
            )
        finally:
            con.unregister("__inlined")
    row = con.execute("SELECT EXISTS (SELECT 1 FROM deleted)").fetchone()
    return bool(row and row[0])


def _deleted_bitmaps(con: duckdb.DuckDBPyConnection, rows: list[int]) -> None:
    """The temporary table ``deleted_bits`` (file_index, bits), from ``deleted`` and each
    source's row count ``rows``: a file's deleted positions as
    one bitstring, whose bit ``pos`` is set. A scan that drops deleted rows then joins one row
    per file, not every deleted row (a hash table of millions), and tests a bit: 1.3 GB with a
    quarter of its rows deleted, 4.00 -> 3.24 s (both on two threads). ``bitstring_agg`` takes
    a constant length for every group, so files are aggregated by the power of two at or above
    their row count: a bitmap is at most a quarter byte a row, whatever the other files' sizes."""
    by_length: dict[int, list[int]] = {}
    for i, n in enumerate(rows):
        by_length.setdefault(1 << max(n - 1, 0).bit_length(), []).append(i)
    parts = [
        f"SELECT file_index, bitstring_agg(pos, 0, {length - 1}) AS bits FROM deleted "
        + (f"WHERE list_contains({sql_list(files)}, file_index) " if len(by_length) > 1 else "")
        + "GROUP BY file_index"
        for length, files in sorted(by_length.items())
    ]
    con.execute(f"CREATE OR REPLACE TEMP TABLE deleted_bits AS {' UNION ALL '.join(parts)}")


def rewrite_files(task: RewriteTask) -> RewriteOutput:
    with scratch_session(task.s3) as (con, scratch):
        return _rewrite(con, task, scratch)


@dataclass(frozen=True)
class SourceScan:
    """Every row of some sources (deleted ones too), read in one layout: ``sql`` selects the
    layout's columns, any extra expressions, then ``_ducklake_internal_row_id``,
    ``_ducklake_internal_snapshot_id``, ``__deleted_at`` (the snapshot that deleted the row;
    NULL: live), ``__file`` and ``__row`` (where it was read: source index, position)."""

    sql: str
    params: dict[str, Any]  # none now (the lists are in ``sql``); kept for the callers that pass them
    hidden: frozenset[str]  # the lineage columns some source carries
    with_deletes: bool  # some source has deleted rows
    layouts: int  # how many file layouts were read (several: rows are in source order only by __file, __row)
    rows_read: int


def scan_sources(
    con: duckdb.DuckDBPyConnection,
    sources: tuple[SourceFile, ...],
    columns: tuple[ColumnState, ...],
    scratch: str,
    extra: Callable[[tuple[FieldIds, ...]], list[str]] | None = None,
    *,
    deletion_snapshots: bool = True,
) -> SourceScan:
    """Fetch the sources and their deletions, and say how to read them in the layout
    ``columns``; ``extra(file's visible fields)``: more select items, per file layout.
    ``deletion_snapshots``: False for a caller that drops every deleted row and needs no
    snapshot of their deletion (``__deleted_at`` is 0 for them: a bit per row is tested)."""
    locals_: list[str] = []
    hidden_of: list[set[str]] = []  # per source: the lineage columns it carries
    layouts: dict[tuple[FieldIds, ...], tuple[list[int], set[str]]] = {}  # visible columns -> (sources, hidden columns)
    rows: list[int] = []
    schemas: list[tuple[tuple[FieldIds, ...], pa.Schema]] = []  # per source: its fields' ids and types
    for i, src in enumerate(sources):
        local = storage.fetch(src.path, scratch)
        locals_.append(local)
        meta = pq.ParquetFile(local)
        file_fields = field_ids_from_arrow(meta.schema_arrow)
        schemas.append((file_fields, meta.schema_arrow))
        names = {f.name for f in file_fields}
        if ROW_ID not in names and src.row_id_start is None:
            raise ValueError(f"{src.path}: no row id column and no row_id_start")
        found_sources, hidden_here = layouts.setdefault(
            tuple(f for f in file_fields if f.name not in HIDDEN_FIELD_IDS), ([], set())
        )
        found_sources.append(i)
        hidden_of.append(names & HIDDEN_FIELD_IDS.keys())
        hidden_here |= hidden_of[-1]
        rows.append(meta.metadata.num_rows)
    with_deletes = _register_deleted(con, sources, scratch)
    deletions = NO_DELETIONS
    if with_deletes:
        deletions = SNAPSHOTS if deletion_snapshots else FLAGS
        if not deletion_snapshots:
            _deleted_bitmaps(con, rows)
    scans = []  # per layout: its select items and sources
    for found, (found_sources, _) in layouts.items():
        # files of an older layout (a rewrite's output) are read in the group's layout
        items = (
            [f"p.{quote(c.name)}" for c in columns] if same_layout(found, columns) else projection(found, columns)
        ) + (extra(found) if extra else [])
        scans.append((items, found_sources))

    def scan(items: list[str], found_sources: list[int]) -> str:
        # the lineage columns of these files only: a scan of files none of which has one cannot name it
        hidden = set().union(*(hidden_of[i] for i in found_sources))
        fields, schema = schemas[found_sources[0]]
        alike = all(schemas[i][0] == fields and schemas[i][1].equals(schema) for i in found_sources)
        files = [locals_[i] for i in found_sources]
        return _scan_sql(items, hidden, deletions, files, found_sources, sources, by_name=not alike)

    rows_read = sum(rows)
    if len(sources) <= FILES_PER_SCAN or rows_read >= STAGE_BELOW_ROWS * len(sources):
        sql = " UNION ALL ".join(scan(*s) for s in scans)
    else:
        sql = _staged(
            con,
            scratch,
            [[(i, f[k : k + FILES_PER_SCAN]) for k in range(0, len(f), FILES_PER_SCAN)] for i, f in scans],
            scan,
        )
    return SourceScan(
        sql,
        {},
        frozenset().union(*(h for _, h in layouts.values())),
        with_deletes,
        len(layouts),
        rows_read,
    )


def _staged(
    con: duckdb.DuckDBPyConnection,
    scratch: str,
    slices: list[list[tuple[list[str], list[int]]]],
    scan: Callable[[list[str], list[int]], str],
) -> str:
    """The rows of many sources copied, ``FILES_PER_SCAN`` files at a time and in source
    order, into a table of a DuckDB database file in the scratch directory; returns the query
    of that table (its rows in insertion order). One scan of every file would hold some state
    for each file until its end: DuckDB's order-preserving writer keeps each file's few rows
    as a batch of its own until it has a row group's worth (tens of kilobytes a file)."""
    con.execute(f"ATTACH {literal(os.path.join(scratch, 'stage.duckdb'))} AS __stage")
    # the table's types: the union of every layout's first slice, as one scan would type them
    first = " UNION ALL ".join(scan(*layout[0]) for layout in slices)
    con.execute(f"CREATE TABLE __stage.scanned AS SELECT * FROM ({first}) LIMIT 0")
    for layout in slices:
        for part in layout:
            con.execute(f"INSERT INTO __stage.scanned {scan(*part)}")
    return "SELECT * FROM __stage.scanned"


def _rewrite(con: duckdb.DuckDBPyConnection, task: RewriteTask, scratch: str) -> RewriteOutput:
    scan = scan_sources(
        con, task.sources, task.columns, scratch, deletion_snapshots=task.drop_deleted_until is not None
    )
    # a source whose rows carry their ids (an UPDATE's output, a flush) is never positional,
    # whatever its row_id_start says: its ids must be carried over; nor is a file some of whose
    # rows are deleted (the survivors' ids are not contiguous, and their order below is free)
    embed_row_ids = task.embed_row_ids or ROW_ID in scan.hidden or scan.with_deletes
    # scans of several layouts are put back in source order; one layout's scan without deletes
    # is in source order already. The join with deleted rows keeps no order (DuckDB's hash
    # join emits its probe side's chunks as its threads finish them), and sorting by row id
    # after it was a third of rewriteDeletes' time (4.40 s against 2.96 s on 391 MB); where
    # rows are deleted their ids are embedded (above), so the order is clustering only, never
    # the rows' identity. (An ANTI JOIN where every deleted row goes, carrying nothing from
    # the deletions, measured the same: 4.24 s against 4.18 s on 1,304 MB.)
    tiebreak = "__file, __row" if scan.layouts > 1 else ""
    out = write_ordered(
        con,
        scan.sql,
        scan.params,
        OrderedOutput(
            columns=task.columns,
            embed_row_ids=embed_row_ids,
            keep_snapshot_ids=task.keep_snapshot_ids,
            order_by=task.order_by,
            tiebreak=tiebreak,
            drop_deleted_until=task.drop_deleted_until,
            with_deletes=scan.with_deletes,
            options=task.options,
        ),
        scratch,
    )
    if out.written.record_count == 0:  # every row was deleted: no file (the scratch copy goes)
        return RewriteOutput(task, None, scan.rows_read, out.sorted, row_ids_embedded=embed_row_ids)
    delete_file = None
    if out.deletes:
        delete_file = write_delete_file(con, task.output, out.deletes, os.path.join(scratch, "out-delete.parquet"))
        storage.store(delete_file.local_path, task.output_deletes)
    storage.store(out.written.local_path, task.output)
    return RewriteOutput(task, out.written, scan.rows_read, out.sorted, tuple(out.deletes), delete_file, embed_row_ids)


@dataclass(frozen=True)
class OrderedOutput:
    """How ``write_ordered`` writes the rows of a scan: the layout, which lineage columns, in
    which order, and what becomes of deleted rows."""

    columns: tuple[ColumnState, ...]
    embed_row_ids: bool
    keep_snapshot_ids: bool
    order_by: str = ""  # DuckDB ORDER BY items of the table's latest sort key
    tiebreak: str = ""  # ORDER BY items after it (ties; source order); none: rows in scan order
    # deleted rows: None drops them all; a snapshot id drops those deleted at or before it
    # and keeps the others, whose output positions are returned
    drop_deleted_until: int | None = None
    with_deletes: bool = False  # some rows of the scan are deleted
    options: tuple[tuple[str, str], ...] = ()
    internal: tuple[str, ...] = ("__file", "__row")  # columns of the scan that are not written


@dataclass(frozen=True)
class Ordered:
    written: WrittenFile  # at a local path
    deletes: list[tuple[int, int]]  # (position in the output, snapshot) of kept deleted rows
    sorted: bool  # False if the sort key does not bind to these (older) files' columns


def write_ordered(
    con: duckdb.DuckDBPyConnection, scan_sql: str, params: dict[str, Any], how: OrderedOutput, scratch: str
) -> Ordered:
    """Write the rows of ``scan_sql`` (a ``SourceScan``'s columns) into one local Parquet file
    with DuckDB's conventions, in the sort order (else the tiebreak) given."""
    keep = ((ROW_ID, how.embed_row_ids), (SNAPSHOT_ID, how.keep_snapshot_ids))
    exclude = ", ".join(["__deleted_at", *how.internal] + [quote(n) for n, kept in keep if not kept])
    out_fields = field_ids_from_columns(how.columns) + tuple(
        FieldIds(n, HIDDEN_FIELD_IDS[n]) for n, kept in keep if kept
    )
    kept_deleted = (
        "__deleted_at IS NULL"
        if how.drop_deleted_until is None
        else f"(__deleted_at IS NULL OR __deleted_at > {int(how.drop_deleted_until)})"
    )
    scan = f"SELECT * FROM ({scan_sql}) WHERE {kept_deleted}"
    out_local = os.path.join(scratch, "out.parquet")

    def write(order_by: str) -> tuple[WrittenFile, list[tuple[int, int]]]:
        order = ", ".join(x for x in (order_by, quote(ROW_ID) if order_by else how.tiebreak) if x)
        if how.with_deletes and how.drop_deleted_until is not None:  # the output positions of kept deleted rows
            window = f"ORDER BY {order}" if order else ""  # none: any order, the positions say which
            con.execute(
                f"CREATE OR REPLACE TEMP TABLE __out AS SELECT *, row_number() OVER ({window}) - 1 AS __pos "
                f"FROM ({scan})",
                params,
            )
            written = write_parquet(
                con,
                f"SELECT * EXCLUDE ({exclude}, __pos) FROM __out ORDER BY __pos",
                out_fields,
                out_local,
                how.options,
            )
            return written, [
                (int(p), int(s))
                for p, s in con.execute(
                    "SELECT __pos, __deleted_at FROM __out WHERE __deleted_at IS NOT NULL ORDER BY __pos"
                ).fetchall()
            ]
        select = f"SELECT * EXCLUDE ({exclude}) FROM ({scan})" + (f" ORDER BY {order}" if order else "")
        return write_parquet(con, select, out_fields, out_local, how.options, params), []

    try:
        (written, deletes), is_sorted = write(how.order_by), bool(how.order_by)
    except duckdb.BinderException:
        if not how.order_by:
            raise
        (written, deletes), is_sorted = write(""), False  # the key names columns these files do not have
    return Ordered(written, deletes, is_sorted)
