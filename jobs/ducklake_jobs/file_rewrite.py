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
import tempfile
from dataclasses import dataclass

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from ducklake_operator.model.state import DataFile

from . import storage
from .lake_paths import TablePaths
from .parquet_writer import (
    HIDDEN_FIELD_IDS, ROW_ID, SNAPSHOT_ID, FieldIds, WrittenFile, field_ids_from_arrow, quote, scratch_connection,
    write_parquet,
)


@dataclass(frozen=True)
class SourceFile:
    path: str  # full path or URI
    begin_snapshot: int
    row_id_start: int | None
    delete_file: str | None = None  # full path of its live delete file
    deleted_positions: tuple[int, ...] = ()  # inlined file deletions (0-based positions)


def source_file(paths: TablePaths, f: DataFile, delete_file: str | None = None, deleted_positions: tuple[int, ...] = ()) -> SourceFile:
    return SourceFile(paths.full(f.path, f.path_is_relative), f.begin_snapshot, f.row_id_start, delete_file, deleted_positions)


@dataclass(frozen=True)
class RewriteTask:
    sources: tuple[SourceFile, ...]
    output: str  # full path or URI chosen by the driver
    keep_snapshot_ids: bool  # compaction keeps each row's begin snapshot; a rewrite does not
    embed_row_ids: bool
    order_by: str = ""  # DuckDB ORDER BY items of the table's latest sort key
    options: tuple[tuple[str, str], ...] = ()
    threads: int | None = None
    s3: storage.S3Config | None = None  # the driver's S3 settings, for executors


@dataclass(frozen=True)
class RewriteOutput:
    task: RewriteTask
    written: WrittenFile | None  # None: every row was deleted, nothing written
    rows_read: int
    sorted: bool  # False if the sort key does not bind to these (older) files' columns


def _select_sql(columns: list[str], hidden: set[str], with_deletes: bool) -> str:
    """One scan of every source file (in order, so row order is kept without sorting); each
    row's id and begin snapshot come from the file's lineage columns, else from its
    file's ``row_id_start + position`` and ``begin_snapshot`` (parameters 2 and 3)."""
    per_file = "(?::BIGINT[])[file_index::BIGINT + 1]"
    row_id = f"{per_file.replace('?', '$row_id_starts')} + file_row_number"
    snapshot = per_file.replace("?", "$begin_snapshots")
    if ROW_ID in hidden:
        row_id = f"COALESCE({quote(ROW_ID)}, {row_id})"
    if SNAPSHOT_ID in hidden:
        snapshot = f"COALESCE({quote(SNAPSHOT_ID)}, {snapshot})"
    anti = " ANTI JOIN deleted d ON d.file_index = p.file_index AND d.pos = p.file_row_number" if with_deletes else ""
    return (f"SELECT {', '.join(quote(c) for c in columns)}, {row_id}::BIGINT AS {quote(ROW_ID)}, "
            f"{snapshot}::BIGINT AS {quote(SNAPSHOT_ID)} "
            f"FROM read_parquet($files, file_row_number = true, union_by_name = true) p{anti}")


def rewrite_files(task: RewriteTask) -> RewriteOutput:
    if task.s3 is not None:
        storage.configure(task.s3)
    with tempfile.TemporaryDirectory(prefix="ducklake-") as scratch:
        con = scratch_connection(task.threads)
        try:
            locals_: list[str] = []
            fields: tuple[FieldIds, ...] = ()
            hidden: set[str] = set()
            deleted: list[tuple[int, int]] = []
            rows_read = 0
            for i, src in enumerate(task.sources):
                local = storage.fetch(src.path, scratch)
                locals_.append(local)
                meta = pq.ParquetFile(local)
                file_fields = field_ids_from_arrow(meta.schema_arrow)
                visible = tuple(f for f in file_fields if f.name not in HIDDEN_FIELD_IDS)
                if not fields:
                    fields = visible
                elif visible != fields:
                    raise ValueError(f"{src.path}: columns differ from {task.sources[0].path}")
                hidden |= {f.name for f in file_fields if f.name in HIDDEN_FIELD_IDS}
                if ROW_ID not in {f.name for f in file_fields} and src.row_id_start is None:
                    raise ValueError(f"{src.path}: no row id column and no row_id_start")
                rows_read += meta.metadata.num_rows
                positions = list(src.deleted_positions)
                if src.delete_file:
                    positions += pq.read_table(storage.fetch(src.delete_file, scratch), columns=["pos"]).column("pos").to_pylist()
                deleted += [(i, p) for p in positions]
            if deleted:
                con.register("deleted", pa.table({"file_index": pa.array([i for i, _ in deleted], pa.int64()),
                                                  "pos": pa.array([p for _, p in deleted], pa.int64())}))
            params = {"files": locals_, "row_id_starts": [s.row_id_start or 0 for s in task.sources],
                      "begin_snapshots": [s.begin_snapshot for s in task.sources]}
            keep = ((ROW_ID, task.embed_row_ids), (SNAPSHOT_ID, task.keep_snapshot_ids))
            exclude = ", ".join(quote(n) for n, kept in keep if not kept)
            out_fields = fields + tuple(FieldIds(n, HIDDEN_FIELD_IDS[n]) for n, kept in keep if kept)
            scan = _select_sql([f.name for f in fields], hidden, bool(deleted))

            def write(order_by: str) -> WrittenFile:
                # ties, and a join that may reorder rows, fall back to row id order
                order = ", ".join(x for x in (order_by, quote(ROW_ID) if order_by or deleted else "") if x)
                select = (f"SELECT * {f'EXCLUDE ({exclude})' if exclude else ''} FROM ({scan})"
                          + (f" ORDER BY {order}" if order else ""))
                return write_parquet(con, select, out_fields, os.path.join(scratch, "out.parquet"), task.options, params)

            try:
                written, is_sorted = write(task.order_by), bool(task.order_by)
            except duckdb.BinderException:
                if not task.order_by:
                    raise
                written, is_sorted = write(""), False  # the key names columns these files do not have
            if written.record_count == 0:  # every row was deleted: no file (the scratch copy goes)
                return RewriteOutput(task, None, rows_read, is_sorted)
            storage.store(written.local_path, task.output)
            return RewriteOutput(task, written, rows_read, is_sorted)
        finally:
            con.close()
