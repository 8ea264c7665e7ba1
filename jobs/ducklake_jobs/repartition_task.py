"""repartition's task: what one Spark task (or an in-process thread) runs, apart from the
job's driver (``repartition``), so a Spark worker imports neither the catalog nor SQLAlchemy.

A task reads a run of source files of one schema version once and writes their rows straight
into the current spec's partitions: the rows, with their deletions (rows deleted at or before
the oldest snapshot dropped) and both lineage columns, get their partition keys from DuckDB's
own expressions (``model.partitioning.key_sql``), and one ``COPY ... PARTITION_BY`` writes one
file per partition, its statistics from DuckDB's writer (``RETURN_STATS``); a table with a
sort order has its rows held by DuckDB (which spills) and written partition by partition in
that order. Each file is stored in its partition's hive directory, with a delete file for the
rows deleted later."""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, replace

import duckdb

from ducklake_operator import storage
from ducklake_operator.model.partitioning import hive_directory, key_sql, key_texts, needs_ducklake_functions
from ducklake_operator.model.state import ColumnState

from .file_rewrite import OrderedOutput, SourceFile, SourceScan, scan_sources, write_ordered
from .lake_paths import TablePaths, new_file_name
from .layout_projection import projection
from .parquet_writer import (
    HIDDEN_FIELD_IDS,
    ROW_ID,
    SNAPSHOT_ID,
    FieldIds,
    PartitionFile,
    WrittenFile,
    field_ids_from_columns,
    key_match,
    quote,
    scratch_session,
    write_delete_file,
    write_partitioned,
)


@dataclass(frozen=True)
class Outputs:
    """Where and how every task of a batch writes."""

    paths: TablePaths
    names: tuple[str, ...]  # the partition key names of hive-style directories; empty: none
    marker: str
    order_by: str
    options: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class PartitionTask:
    """Read ``sources`` (of one schema version) in its layout ``columns`` and write their rows
    into one file per value of the current spec's ``keys``."""

    sources: tuple[SourceFile, ...]
    columns: tuple[ColumnState, ...]
    schema_version: int
    keys: tuple[tuple[ColumnState, str], ...]  # (key column as the current layout has it, transform)
    drop_deleted_until: int  # the oldest snapshot: rows deleted at or before it are dropped
    outputs: Outputs
    s3: storage.S3Config | None = None


@dataclass(frozen=True)
class Output:
    """One data file a task wrote and stored."""

    task: PartitionTask
    path: str  # full path or URI
    values: tuple[str | None, ...]  # the partition values, in key order
    written: WrittenFile
    sorted: bool  # False if the sort key does not bind to this layout's columns
    snapshots: tuple[int, int]  # the oldest and newest begin snapshot of its rows
    deletes: tuple[tuple[int, int], ...]  # (position in the output, snapshot) of rows deleted later
    delete_path: str
    delete_file: WrittenFile | None


@dataclass(frozen=True)
class _Local:
    """A file written in the task's scratch, before it is stored."""

    written: WrittenFile
    values: tuple[str | None, ...]
    sorted: bool
    snapshots: tuple[int, int]
    deletes: list[tuple[int, int]]


def _parts(n: int) -> tuple[str, ...]:
    return tuple(f"__p{i}" for i in range(n))


def _keyed_rows(
    con: duckdb.DuckDBPyConnection, task: PartitionTask, scratch: str
) -> tuple[str, SourceScan, tuple[str, ...]]:
    """A query of the task's rows (deleted ones too unless dropped) with their lineage,
    ``__deleted_at`` and partition keys ``__p<i>`` (``key_sql``: DuckDB's own expressions on the key
    columns as the current layout reads them; a constant one when the spec has no key)."""
    keyed = [replace(column, name=f"__k{i}") for i, (column, _) in enumerate(task.keys)]
    scan = scan_sources(con, task.sources, task.columns, scratch, extra=lambda found: projection(found, keyed))
    parts = _parts(max(1, len(task.keys)))
    values = "".join(
        f", {key_sql(transform, f'__k{i}')} AS {p}"
        for i, ((_, transform), p) in enumerate(zip(task.keys, parts, strict=False))
    )
    if not task.keys:
        values = f", ''::VARCHAR AS {parts[0]}"
    internal = ", ".join(["__file", "__row", *(f"__k{i}" for i in range(len(keyed)))])
    query = (
        f"SELECT * EXCLUDE ({internal}){values} FROM ({scan.sql}) "
        f"WHERE __deleted_at IS NULL OR __deleted_at > {int(task.drop_deleted_until)}"
    )
    return query, scan, parts


def write_partition_task(task: PartitionTask) -> list[Output]:
    """The task: its sources read once, each partition's rows written once and stored."""
    bucketed = needs_ducklake_functions(t for _, t in task.keys)
    with scratch_session(task.s3, "ducklake-repartition-", ducklake_functions=bucketed) as (con, scratch):
        query, scan, parts = _keyed_rows(con, task, scratch)
        write = _write_sorted if task.outputs.order_by else _write_unsorted
        local = [f for f in write(con, task, query, scan, parts, scratch) if f.written.record_count]
        return _store(con, task, local, scratch)


def _write_unsorted(
    con: duckdb.DuckDBPyConnection,
    task: PartitionTask,
    query: str,
    scan: SourceScan,
    parts: tuple[str, ...],
    scratch: str,
) -> list[_Local]:
    """One partitioned COPY; the positions of rows deleted later are found after, from the
    outputs' row id column, only when there are such rows."""
    fields = field_ids_from_columns(task.columns) + tuple(FieldIds(n, i) for n, i in HIDDEN_FIELD_IDS.items())
    out_dir = os.path.join(scratch, "out")
    files = write_partitioned(
        con,
        f"SELECT * EXCLUDE (__deleted_at) FROM ({query})",
        fields,
        parts,
        out_dir,
        task.outputs.options,
        scan.params,
    )
    deletes: dict[str, list[tuple[int, int]]] = defaultdict(list)
    if files and scan.with_deletes and _keeps_deleted_rows(con, task):
        row_id = quote(ROW_ID)
        found = con.execute(
            f"SELECT o.filename, o.file_row_number, d.__deleted_at FROM read_parquet($outputs, filename = true, "
            f"file_row_number = true, hive_partitioning = false) o JOIN (SELECT {row_id}, __deleted_at FROM "
            f"({query}) WHERE __deleted_at IS NOT NULL) d USING ({row_id}) ORDER BY ALL",
            {**scan.params, "outputs": [f.written.local_path for f in files]},
        ).fetchall()
        for path, position, snapshot in found:
            deletes[path].append((int(position), int(snapshot)))
    return [_unsorted(f, task, deletes[f.written.local_path]) for f in files]


def _keeps_deleted_rows(con: duckdb.DuckDBPyConnection, task: PartitionTask) -> bool:
    """Whether some row deleted after the oldest snapshot is kept (``scan_sources``' deletions)."""
    row = con.execute("SELECT count(*) FROM deleted WHERE snapshot > ?", [int(task.drop_deleted_until)]).fetchone()
    return row is not None and row[0] > 0


def _unsorted(f: PartitionFile, task: PartitionTask, deletes: list[tuple[int, int]]) -> _Local:
    assert f.snapshots is not None or not f.written.record_count  # the snapshot column is always written
    values = f.values if task.keys else ()
    return _Local(f.written, values, False, f.snapshots or (0, 0), deletes)


def _write_sorted(
    con: duckdb.DuckDBPyConnection,
    task: PartitionTask,
    query: str,
    scan: SourceScan,
    parts: tuple[str, ...],
    scratch: str,
) -> list[_Local]:
    """The rows held in DuckDB (spilling past its memory limit), then each partition's
    written in the sort order."""
    # in key order: each partition's scan below reads only the row groups of its keys
    con.execute(f"CREATE TEMP TABLE __rows AS {query} ORDER BY {', '.join(parts)}", scan.params)
    snapshot = quote(SNAPSHOT_ID)
    groups = con.execute(
        f"SELECT {', '.join(parts)}, min({snapshot}), max({snapshot}) FROM __rows GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    local = []
    for n, (*values, oldest, newest) in enumerate(groups):
        match, params = key_match(parts, values)
        out = write_ordered(
            con,
            f"SELECT * FROM __rows WHERE {match}",
            params,
            OrderedOutput(
                columns=task.columns,
                embed_row_ids=True,  # rows of many files: never contiguous
                keep_snapshot_ids=True,
                order_by=task.outputs.order_by,
                tiebreak="",  # rows of many files: row-id order is no better than scan order
                drop_deleted_until=task.drop_deleted_until,
                with_deletes=scan.with_deletes,
                options=task.outputs.options,
                internal=parts,
            ),
            os.path.join(scratch, "sorted", str(n)),
        )
        text = key_texts(values) if task.keys else ()
        local.append(_Local(out.written, text, out.sorted, (oldest, newest), out.deletes))
    return local


def _store(con: duckdb.DuckDBPyConnection, task: PartitionTask, local: list[_Local], scratch: str) -> list[Output]:
    """Each file (and its delete file) stored in its partition's directory; on a failure, the
    ones already stored are deleted."""
    o = task.outputs
    stored: list[str] = []
    outputs = []
    try:
        for n, f in enumerate(local):
            relative = new_file_name(hive_directory(list(o.names), f.values) if o.names else "", marker=o.marker)
            path = o.paths.full(relative, True)
            delete_path = path[: -len(".parquet")] + "-delete.parquet"
            delete_file = None
            if f.deletes:
                delete_file = write_delete_file(con, path, f.deletes, os.path.join(scratch, f"delete-{n}.parquet"))
                stored.append(delete_path)
                storage.store(delete_file.local_path, delete_path)
            stored.append(path)
            storage.store(f.written.local_path, path)
            outputs.append(
                Output(
                    task, path, f.values, f.written, f.sorted, f.snapshots, tuple(f.deletes), delete_path, delete_file
                )
            )
    except BaseException:
        for path in stored:
            storage.delete(path)
        raise
    return outputs
