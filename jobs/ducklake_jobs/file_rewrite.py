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
    HIDDEN_FIELD_IDS, ROW_ID, SNAPSHOT_ID, FieldIds, WrittenFile, literal, quote, read_field_ids, scratch_connection,
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


def _source_sql(i: int, src: SourceFile, local: str, columns: list[str], hidden: set[str]) -> str:
    row_id = quote(ROW_ID) if ROW_ID in hidden else f"{src.row_id_start} + file_row_number"
    if ROW_ID not in hidden and src.row_id_start is None:
        raise ValueError(f"{src.path}: no row id column and no row_id_start")
    snapshot = quote(SNAPSHOT_ID) if SNAPSHOT_ID in hidden else str(src.begin_snapshot)
    select = ", ".join(quote(c) for c in columns)
    where = f" WHERE file_row_number NOT IN (SELECT pos FROM deleted_{i})" if src.delete_file or src.deleted_positions else ""
    return (f"SELECT {select}, {row_id}::BIGINT AS {quote(ROW_ID)}, {snapshot}::BIGINT AS {quote(SNAPSHOT_ID)} "
            f"FROM read_parquet({literal(local)}, file_row_number = true){where}")


def rewrite_files(task: RewriteTask) -> RewriteOutput:
    if task.s3 is not None:
        storage.configure(task.s3)
    with tempfile.TemporaryDirectory(prefix="ducklake-") as scratch:
        con = scratch_connection(task.threads)
        try:
            parts: list[str] = []
            fields: tuple[FieldIds, ...] = ()
            rows_read = 0
            for i, src in enumerate(task.sources):
                local = storage.fetch(src.path, scratch)
                file_fields = read_field_ids(local)
                visible = tuple(f for f in file_fields if f.name not in HIDDEN_FIELD_IDS)
                if not fields:
                    fields = visible
                elif [f.field_id for f in visible] != [f.field_id for f in fields]:
                    raise ValueError(f"{src.path}: columns differ from {task.sources[0].path}")
                rows_read += pq.ParquetFile(local).metadata.num_rows
                if src.delete_file or src.deleted_positions:
                    positions = list(src.deleted_positions)
                    if src.delete_file:
                        positions += pq.read_table(storage.fetch(src.delete_file, scratch), columns=["pos"]).column("pos").to_pylist()
                    con.register(f"deleted_{i}", pa.table({"pos": pa.array(positions, pa.int64())}))
                hidden = {f.name for f in file_fields if f.name in HIDDEN_FIELD_IDS}
                parts.append(_source_sql(i, src, local, [f.name for f in fields], hidden))
            keep = ((ROW_ID, task.embed_row_ids), (SNAPSHOT_ID, task.keep_snapshot_ids))
            exclude = ", ".join(quote(n) for n, kept in keep if not kept)
            out_fields = fields + tuple(FieldIds(n, HIDDEN_FIELD_IDS[n]) for n, kept in keep if kept)
            union = " UNION ALL ".join(parts)

            def write(order_by: str) -> WrittenFile:
                order = ", ".join(x for x in (order_by, quote(ROW_ID)) if x)  # ties, and no sort key: row id order
                select = f"SELECT * {f'EXCLUDE ({exclude})' if exclude else ''} FROM ({union}) ORDER BY {order}"
                return write_parquet(con, select, out_fields, os.path.join(scratch, "out.parquet"), task.options)

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
