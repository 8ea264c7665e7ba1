"""repartition: rewrite the files written under an earlier partition spec into the table's
current one (DuckLake, like Iceberg, partitions new data only: docs/ducklake-format.md §6.3).

plan (pure, ``maintenance.repartition``: the live files whose spec's keys are not the
current spec's, in batches of up to ``maxBytesPerCommit``) -> per batch, a ``shuffle``:

* map tasks read runs of source files of one schema version with their deletions (rows
  deleted at or before the oldest snapshot dropped), compute each row's partition values
  with DuckDB's own expressions (``model.partitioning``, on the column as the current
  layout reads it) and write one chunk per partition;
* the driver routes each partition's chunks into output files of up to ``targetFileSize``,
  named in the partition's hive directory (unless ``hive_file_pattern`` is false);
* reduce tasks write each output file in the schema version's layout, in the table's sort
  order (else as read: the row ids are embedded, their order buys nothing), with both
  lineage columns (row ids and each row's begin snapshot kept) and DuckDB's exact
  statistics, and a delete file for the rows deleted later, with their snapshots;

-> one snapshot per batch (``RepartitionFiles``): the outputs replace the sources as DuckDB's
merge does (token ``merge_adjacent``), so every snapshot still readable reads the same rows,
from the outputs' lineage columns. The commit refuses if an input got a deletion, or the
table another partitioning, since the batch was planned; the job then plans the rest again
(``REPLANS`` times), and the batches already committed stay.

Values of ``year``/``month``/``day``/``hour`` on a TIMESTAMPTZ column are computed in UTC;
DuckDB computes them in the writing session's time zone (the same in a UTC session).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import duckdb

from ducklake_operator import storage
from ducklake_operator.catalog import Catalog
from ducklake_operator.catalog.commit import DEFAULT_AUTHOR
from ducklake_operator.catalog.job_inputs import TableInputs, read_layouts, read_partition_specs
from ducklake_operator.errors import CommitConflict, DuckLakeError
from ducklake_operator.maintenance.repartition import Batch, RepartitionPlan, plan_repartition
from ducklake_operator.model.file_changes import RepartitionFiles
from ducklake_operator.model.job_params import REPARTITION, RepartitionArgs
from ducklake_operator.model.maintenance_params import DRY_RUN, TARGET_FILE_SIZE
from ducklake_operator.model.partitioning import (
    hive_directory,
    key_fields,
    key_names,
    needs_ducklake_functions,
    transform_sql,
)
from ducklake_operator.model.state import ColumnState, DataFile, TableState

from .fault_points import fault_point
from .file_rewrite import OrderedOutput, SourceFile, scan_sources, source_file, write_ordered
from .inputs import planned_inputs, read_inputs
from .job_steps import Report, produce_and_commit
from .lake_paths import TablePaths, new_file_name, option, option_on, options_in_force, sort_sql, table_paths
from .layout_projection import projection
from .operation_plugin import JobContext, OperationPlugin
from .parquet_writer import (
    SNAPSHOT_ID,
    WrittenFile,
    copy_options,
    literal,
    quote,
    scratch_session,
    write_delete_file,
)
from .run_context import PLAIN_RUN, REPLANS, JobRun  # a batch refused by a concurrent writer plans again as often
from .shuffle import Chunk, ChunkAccount, Routes, shuffle
from .task_runners import Runner, run_in_process
from .written_files import data_file_row, kept_deletes_row, written_counts

# Source bytes per map task (a run of files of one schema version). On Spark map tasks are
# the unit of parallelism; in-process they run one after another, each DuckDB using every
# core, so fewer and larger ones split faster (bench/rewrite.py's 953 MB: 64 MB per task
# 12.3-13.3 s for the whole job, 512 MB 9.2-9.3 s; 1 GB no better).
MAP_INPUT_BYTES = 64 * 1024 * 1024
IN_PROCESS_MAP_INPUT_BYTES = 512 * 1024 * 1024


@dataclass(frozen=True)
class SplitTask:
    """A map task: read ``sources`` (of one schema version) in its layout ``columns`` and
    split their rows by their values of the current spec's ``keys``."""

    sources: tuple[SourceFile, ...]
    columns: tuple[ColumnState, ...]
    schema_version: int
    keys: tuple[tuple[ColumnState, str], ...]  # (key column as the current layout has it, transform)
    drop_deleted_until: int  # the oldest snapshot: rows deleted at or before it are dropped
    input_bytes: int  # of the sources, for estimates
    input_rows: int
    s3: storage.S3Config | None = None
    chunk_compression: str = "uncompressed"  # cheapest to write and read on local disk; lz4 to ship


@dataclass(frozen=True)
class MergeTask:
    """A reduce task: the chunks of one partition (and schema version) into one data file."""

    columns: tuple[ColumnState, ...]
    schema_version: int
    values: tuple[str | None, ...]  # the partition values, in key order
    output: str  # full path or URI chosen by the driver
    output_deletes: str
    order_by: str
    options: tuple[tuple[str, str], ...]
    drop_deleted_until: int
    s3: storage.S3Config | None = None


@dataclass(frozen=True)
class Merged:
    task: MergeTask
    written: WrittenFile
    sorted: bool  # False if the sort key does not bind to this layout's columns
    deletes: tuple[tuple[int, int], ...]  # (position in the output, snapshot) of rows deleted later
    delete_file: WrittenFile | None
    snapshots: tuple[int, int]  # the oldest and newest begin snapshot of its rows


def _parts(n: int) -> tuple[str, ...]:
    return tuple(f"__p{i}" for i in range(n))


@contextmanager
def _keyed_rows(task: SplitTask) -> Iterator[tuple[duckdb.DuckDBPyConnection, str, dict[str, Any], tuple[str, ...]]]:
    """A connection and a query of the task's rows (deleted ones too unless dropped) with
    their lineage, ``__deleted_at``, partition values ``__p<i>`` (DuckDB's own expressions on
    the key columns as the current layout reads them) and ``__key``, a hash of the values."""
    bucketed = needs_ducklake_functions(t for _, t in task.keys)
    with scratch_session(task.s3, "ducklake-split-", ducklake_functions=bucketed) as (con, scratch):
        keyed = [replace(column, name=f"__k{i}") for i, (column, _) in enumerate(task.keys)]
        scan = scan_sources(con, task.sources, task.columns, scratch, extra=lambda found: projection(found, keyed))
        parts = _parts(len(task.keys))
        values = "".join(
            f", {transform_sql(transform, f'__k{i}')} AS {p}"
            for i, ((_, transform), p) in enumerate(zip(task.keys, parts, strict=True))
        )
        key = f"hash({', '.join(parts)})" if parts else "0"  # checked: one partition per key
        internal = ", ".join(["__file", "__row", *(f"__k{i}" for i in range(len(keyed)))])
        yield (
            con,
            f"SELECT * EXCLUDE ({internal}), {key}::VARCHAR AS __key FROM (SELECT *{values} FROM ({scan.sql}) "
            f"WHERE __deleted_at IS NULL OR __deleted_at > {int(task.drop_deleted_until)})",
            scan.params,
            parts,
        )


def _partitions(found: list[tuple[Any, ...]]) -> dict[str, tuple[Any, ...]]:
    """Rows of (key, partition values..., count) -> each key's (values..., count)."""
    by_key: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for key, *rest in found:
        by_key[key].append(tuple(rest))
    for rows in by_key.values():
        if len(rows) != 1:  # two partitions' values with one 64-bit hash: never seen, never mixed either
            raise DuckLakeError(f"partition values {sorted(r[:-1] for r in rows)} share a hash")
    return {key: rows[0] for key, rows in by_key.items()}


def account_files(task: SplitTask, index: int) -> list[ChunkAccount]:
    """The chunks ``split_files`` will write, from the key columns alone (bytes estimated
    from the sources' bytes per row)."""
    with _keyed_rows(task) as (con, query, params, parts):
        found = con.execute(
            f"SELECT __key, {''.join(p + ', ' for p in parts)}count(*) FROM ({query}) GROUP BY ALL", params
        ).fetchall()
    per_row = task.input_bytes / max(1, task.input_rows)
    accounts = []
    for key, (*values, count) in sorted(_partitions(found).items()):
        accounts.append(ChunkAccount(index, key, count, int(count * per_row), (task.schema_version, tuple(values))))
    return accounts


def split_files(task: SplitTask, index: int, out_dir: str) -> list[Chunk]:
    """Write the task's rows into ``out_dir/__key=<key>/``, one chunk per partition."""
    with _keyed_rows(task) as (con, query, params, parts):
        con.execute(
            f"COPY ({query}) TO {literal(out_dir)} "
            f"(FORMAT parquet, PARTITION_BY (__key), COMPRESSION {task.chunk_compression})",
            params,
        )
        files: dict[str, tuple[str, ...]] = {}  # key -> its chunk's files
        for entry in sorted(os.listdir(out_dir)) if os.path.isdir(out_dir) else []:  # none: every row dropped
            directory = os.path.join(out_dir, entry)
            files[entry.split("=", 1)[1]] = tuple(sorted(os.path.join(directory, f) for f in os.listdir(directory)))
        if not files:
            return []
        found = _partitions(  # every chunk at once, its key from its directory
            con.execute(
                f"SELECT __key, {''.join(p + ', ' for p in parts)}count(*) "
                "FROM read_parquet(?, hive_partitioning = true, hive_types_autocast = false) GROUP BY ALL",
                [[f for chunk in files.values() for f in chunk]],
            ).fetchall()
        )
        chunks = []
        for key, chunk in files.items():
            *values, count = found[key]
            account = ChunkAccount(
                index, key, count, sum(os.path.getsize(f) for f in chunk), (task.schema_version, tuple(values))
            )
            chunks.append(Chunk(account, chunk))
        return chunks


def merge_chunks(task: MergeTask, files: list[str]) -> Merged:
    with scratch_session(task.s3) as (con, scratch):
        params = {"chunks": files}
        source = "read_parquet($chunks, hive_partitioning = false, union_by_name = true)"
        row = con.execute(
            f"SELECT count(__deleted_at), min({quote(SNAPSHOT_ID)}), max({quote(SNAPSHOT_ID)}) FROM {source}",
            params,
        ).fetchone()
        assert row is not None
        deleted, oldest, newest = row
        out = write_ordered(
            con,
            f"SELECT * FROM {source}",
            params,
            OrderedOutput(
                columns=task.columns,
                embed_row_ids=True,  # rows of many files: never contiguous
                keep_snapshot_ids=True,
                order_by=task.order_by,
                tiebreak="",  # rows of many files: row-id order is no better than chunk order
                drop_deleted_until=task.drop_deleted_until,
                with_deletes=deleted > 0,
                options=task.options,
                internal=_parts(len(task.values)),
            ),
            scratch,
        )
        delete_file = None
        if out.deletes:
            delete_file = write_delete_file(con, task.output, out.deletes, os.path.join(scratch, "out-delete.parquet"))
            storage.store(delete_file.local_path, task.output_deletes)
        storage.store(out.written.local_path, task.output)
        return Merged(task, out.written, out.sorted, tuple(out.deletes), delete_file, (oldest, newest))


def repartition(
    catalog: Catalog,
    schema: str,
    table: str,
    *,
    max_bytes_per_commit: int | None = None,
    target_file_size: int | None = None,
    author: str = DEFAULT_AUTHOR,
    dry_run: bool = DRY_RUN.default,
    runner: Runner = run_in_process,
    run: JobRun = PLAIN_RUN,
) -> dict[str, Any]:
    """Plan, then run and commit the batches one by one, each planned from the latest
    snapshot (the files of committed batches are no longer candidates)."""
    report = Report("repartition", table=f"{schema}.{table}", dryRun=dry_run)
    inputs, plan = _plan(catalog, schema, table, max_bytes_per_commit)
    report.fields.update(
        baseSnapshot=plan.base_snapshot,
        partitionedBy=_describe(inputs.table),
        batches=len(plan.batches),
        filesLeftAlone=plan.left_alone,
    )
    if dry_run or not plan.batches:
        report.fields.update(
            filesRead=plan.input_files if dry_run else 0,
            bytesRead=plan.input_bytes if dry_run else 0,
            rowsRead=plan.input_rows if dry_run else 0,
        )
        return report.nothing_written(
            **({"plan": plan.to_json()["batches"]} if dry_run else {"nothingToDo": _nothing_to_do(inputs, plan)})
        )
    runner = report.runner(run, runner, plan.input_bytes)
    totals: dict[str, Any] = {}
    committed: list[int] = []
    replanned = 0
    for _ in range(len(plan.batches) + REPLANS):  # a concurrent partitioning change can make more work: stop there
        try:
            done, snapshot = _run_batch(catalog, inputs, plan, report, totals, target_file_size, author, runner, run)
        except CommitConflict:
            if replanned == REPLANS:
                raise
            replanned += 1
        else:
            committed.append(snapshot)
            totals = _plus(totals, done)
        inputs, plan = _plan(catalog, schema, table, max_bytes_per_commit)
        if not plan.batches:
            break
    return report.done(
        **totals,
        committedSnapshot=committed[-1] if committed else None,
        committedSnapshots=committed,
        filesLeft=plan.input_files,
        **({"replanned": replanned} if replanned else {}),
    )


def _plan(catalog: Catalog, schema: str, table: str, max_bytes: int | None) -> tuple[TableInputs, RepartitionPlan]:
    inputs = read_inputs(catalog, schema, table)
    specs = read_partition_specs(catalog, inputs.table.table_id)
    return inputs, plan_repartition(inputs.table, inputs.base, inputs.schema_versions, specs, max_bytes)


def _describe(t: TableState) -> str:
    """The current partitioning as DuckDB's SET PARTITIONED BY says it ('' when none)."""
    fields = key_fields(t.partition)
    names = [c.name for f in fields if (c := t.column_by_id(f.column_id)) is not None]
    return ", ".join(_key_sql(f.transform, n) for f, n in zip(fields, names, strict=True))


def _key_sql(transform: str, name: str) -> str:
    if transform == "identity":
        return name
    if transform.startswith("bucket("):  # stored as bucket(N), written bucket(N, column)
        return f"bucket({transform[len('bucket(') : -1]}, {name})"
    return f"{transform}({name})"


def _nothing_to_do(inputs: TableInputs, plan: RepartitionPlan) -> str:
    spec = _describe(inputs.table) or "unpartitioned"
    left = f"; {plan.left_alone} name-mapped or encrypted files are left alone" if plan.left_alone else ""
    return f"every live data file is written under the table's current partitioning ({spec}){left}"


def _run_batch(
    catalog: Catalog,
    inputs: TableInputs,
    plan: RepartitionPlan,
    report: Report,
    totals: dict[str, Any],
    target_file_size: int | None,
    author: str,
    runner: Runner,
    run: JobRun,
) -> tuple[dict[str, Any], int]:
    """Run and commit the plan's first batch; its report and its snapshot."""
    state, t, batch = inputs.state, inputs.table, plan.batches[0]
    paths = table_paths(state, t)
    target = TARGET_FILE_SIZE.resolve(target_file_size, lambda key: option(state, t, key))
    layouts = read_layouts(catalog, inputs, (g.schema_version for g in batch.groups))
    fields = key_fields(t.partition)
    keys = tuple((_column(t, f.column_id), f.transform) for f in fields)
    s3 = storage.s3_config(paths.directory)
    in_process = runner is run_in_process
    splits = _split_tasks(inputs, batch, paths, layouts, keys, in_process)
    planned: list[str] = []  # every output path, known once the chunks are routed
    names = key_names(t.partition, t.columns) if option_on(state, t, "hive_file_pattern") else []
    parquet, order_by = copy_options(options_in_force(state, t)), sort_sql(t)

    merge = _MergeSetting(target, names, paths, run.file_marker, layouts, order_by, parquet, inputs.oldest_snapshot, s3)

    outputs, commit = produce_and_commit(
        lambda: planned,
        lambda: shuffle(
            runner,
            account_files,
            split_files,
            splits,
            lambda chunks: _route(chunks, merge, planned),
            merge_chunks,
            lambda done, total: run.phase("writing", done, total),
        )[1],
        lambda outs: catalog.commit(
            [_change(t, plan, batch, outs, paths, inputs)],
            author=author,
            base_snapshot=plan.base_snapshot,
            message=f"repartition {t.qualified_name}: {len(batch.files)} files into {len(outs)} ({_describe(t)})",
            # the plan's last batch ends the run (a rerun of a run killed before it does the rest)
            extra_info=run.extra_info(
                report.done(**_plus(totals, _written(batch, outs)), batch=batch.index, final=len(plan.batches) == 1)
            ),  # fmt: skip
            before_commit=lambda: fault_point("in_commit"),
        ),
        committing=lambda: run.committing(len(planned) // 2),
    )
    assert commit.snapshot_id is not None
    return _written(batch, outputs), commit.snapshot_id


@dataclass(frozen=True)
class _MergeSetting:
    """What every output of a batch shares."""

    target: int  # bytes per output file
    names: list[str]  # the partition key names of hive-style directories; empty: none
    paths: TablePaths
    marker: str
    layouts: dict[int, tuple[ColumnState, ...]]
    order_by: str
    parquet: tuple[tuple[str, str], ...]
    oldest_snapshot: int
    s3: storage.S3Config | None


def _route(chunks: list[ChunkAccount], merge: _MergeSetting, planned: list[str]) -> Routes[MergeTask]:
    """The reduce side of a batch: each partition's chunks into outputs of about the target
    size; every output path (and its delete file's) added to ``planned``."""
    by_partition: dict[Any, list[ChunkAccount]] = defaultdict(list)
    for c in chunks:
        by_partition[c.info].append(c)
    tasks: list[MergeTask] = []
    of_chunk: dict[tuple[int, str], int] = {}
    for version, values in sorted(by_partition, key=repr):
        outputs: list[list[ChunkAccount]] = []
        size = 0
        for c in sorted(by_partition[(version, values)], key=lambda c: c.map_index):
            if not outputs or size + c.bytes > merge.target:
                outputs.append([])
                size = 0
            outputs[-1].append(c)
            size += c.bytes
        for members in outputs:
            relative = new_file_name(hive_directory(merge.names, values) if merge.names else "", marker=merge.marker)
            output = merge.paths.full(relative, True)
            deletes = output[: -len(".parquet")] + "-delete.parquet"
            planned.extend((output, deletes))
            tasks.append(
                MergeTask(
                    merge.layouts[version],
                    version,
                    values,
                    output,
                    deletes,
                    merge.order_by,
                    merge.parquet,
                    merge.oldest_snapshot,
                    merge.s3,
                )
            )
            of_chunk.update({(c.map_index, c.key): len(tasks) - 1 for c in members})
    return Routes(tasks, of_chunk)


def _split_tasks(
    inputs: TableInputs,
    batch: Batch,
    paths: TablePaths,
    layouts: dict[int, Any],
    keys: tuple[tuple[ColumnState, str], ...],
    in_process: bool,
) -> list[SplitTask]:
    """The map side of a batch: its groups' files in runs of about a map task's input."""
    t = inputs.table
    files = {f.data_file_id: f for f in t.data_files}
    delete_files = {d.data_file_id: d for d in t.delete_files if d.end_snapshot is None}
    s3 = storage.s3_config(paths.directory)
    map_bytes = IN_PROCESS_MAP_INPUT_BYTES if in_process else MAP_INPUT_BYTES
    splits = []
    for g in batch.groups:
        run_of: list[DataFile] = []
        run_bytes = 0
        for i in g.files:
            run_of.append(files[i])
            run_bytes += files[i].file_size_bytes
            if run_bytes >= map_bytes or i == g.files[-1]:
                splits.append(
                    SplitTask(
                        tuple(
                            source_file(
                                paths,
                                f,
                                delete_files.get(f.data_file_id),
                                tuple(inputs.inlined_deletions.get(f.data_file_id, ())),
                            )
                            for f in run_of
                        ),
                        layouts[g.schema_version],
                        g.schema_version,
                        keys,
                        inputs.oldest_snapshot,
                        run_bytes,
                        sum(f.record_count for f in run_of),
                        s3,
                        "uncompressed" if in_process else "lz4_raw",  # Spark ships the chunks
                    )
                )
                run_of, run_bytes = [], 0
    return splits


def _column(t: TableState, column_id: int) -> ColumnState:
    column = t.column_by_id(column_id)
    if column is None:  # DuckDB refuses to drop a partition key; a catalog written otherwise may hold one
        raise DuckLakeError(f"{t.qualified_name} is partitioned by column id {column_id}, which it does not have")
    return column


def _plus(totals: dict[str, Any], batch: dict[str, Any]) -> dict[str, Any]:
    return {k: totals.get(k, 0) + v for k, v in batch.items()}


def _written(batch: Batch, outputs: list[Merged]) -> dict[str, Any]:
    """The report's account of one batch."""
    return {
        "filesRead": len(batch.files),
        "bytesRead": batch.input_bytes,
        "rowsRead": batch.input_rows,
        **written_counts(o.written for o in outputs),
        "deletedRowsDropped": batch.input_rows - sum(o.written.record_count for o in outputs),
        "deleteFilesWritten": sum(1 for o in outputs if o.delete_file),
        "unsortedFiles": sum(1 for o in outputs if o.task.order_by and not o.sorted),
    }


def _change(
    t: TableState, plan: RepartitionPlan, batch: Batch, outputs: list[Merged], paths: TablePaths, inputs: TableInputs
) -> RepartitionFiles:
    fields = key_fields(t.partition)
    new_files = []
    for out in outputs:
        new_files.append(
            data_file_row(
                paths.relative(out.task.output),
                out.written,
                begin_snapshot=out.snapshots[0],
                partial_max=out.snapshots[1],
                partition_id=plan.spec_id if fields else None,
                partition_values=tuple((f.key_index, v) for f, v in zip(fields, out.task.values, strict=True)),
                delete_file=kept_deletes_row(paths, out.task.output_deletes, out.delete_file, out.deletes),
            )
        )
    return RepartitionFiles(
        t.table_id,
        t.qualified_name,
        plan.base_snapshot,
        planned_inputs(t, list(batch.files), inputs.inlined_deletions),
        tuple(new_files),
        plan.spec_id,
    )


def run_repartition(job: JobContext, args: RepartitionArgs) -> dict[str, Any]:
    return repartition(
        job.catalog,
        job.table_schema,
        job.table_name,
        max_bytes_per_commit=args.max_bytes_per_commit,
        target_file_size=args.target_file_size,
        dry_run=args.dry_run,
        author=job.author,
        runner=job.runner,
        run=job.run,
    )


PLUGIN = OperationPlugin(REPARTITION, run_repartition)
