"""ingest: append files (JSON lines, CSV, Parquet; local or ``s3://``) to a table, evolving its
schema from what the records hold (``evolution.mode: auto``; the rules: ``evolution.auto_schema``).

list the files (``ingest_sources``; files an earlier ingest of the table took in are refused
unless ``reingest``) -> two passes of tasks, in-process or on Spark (pass 1 in groups of about
``GROUP_BYTES``, pass 2 of about the table's target file size: ``_write_groups``):

1. read every record and note each field's shapes (``evolution.observed``); bad records fail
   the job naming file and line, or are skipped and counted (``onBadRecord``). JSON-lines
   files DuckDB reads exactly as the Python reader does are observed in DuckDB, a task's
   files in one query (``ingest_json``: the same notes, but for the extents no plan for the
   table reads, ``auto_schema.extents_read``; no record through Python); a CSV or Parquet
   file's columns are its types, with the ranges of the long columns whose extents a plan
   reads (none: a Parquet file is not scanned, its footer counts its rows). A CSV file's
   types are first its default sample's, where pass 2 can prove them value by value as it
   writes (``csv_checks``; no long column's range wanted): such a file is not scanned in
   pass 1 at all, and a value or row that refutes them (or any failure of a task writing
   such a file) deletes what was written and reads every file again, the CSV files' types
   sniffed over every row (``csvSampleRefuted`` in the report);
2. the driver merges the notes and plans the columns to add and where each value goes
   (``evolution.auto_schema.plan_ingest``, pure), with the ids the commit will give them;
3. read every record again, convert it into a row of the evolved table
   (``evolution.routing``; a CSV or Parquet file whose columns all go unconverted into
   columns of their own kind is read by DuckDB straight into the rows, and so is a JSON-lines
   file pass 1 read in DuckDB whose keys' values do, ``ingest_json.json_lines_load``:
   ``bench/ingest.py`` over 200 MB of JSON lines, 2026-12-01, 0.02x of DuckDB's insert
   before, 0.19-0.25x with it) and write Parquet
   with the other jobs' writer (field ids of the evolved layout, DuckDB's statistics), as
   DuckDB's INSERT writes it: no lineage columns
   (row ids are positional from the ``row_id_start`` the commit gives), sorted by the
   table's sort key (unless ``sort_on_insert`` is false), one file per partition of the
   current spec in its hive directory;

-> one snapshot: the new columns (``AddColumn``, with their ``evolved_from`` tags) and the
files (``AppendFiles``) together, so no reader sees one without the other; the files ingested
are noted in the ingest ledger (``catalog.ingested``, which snapshot expiry leaves alone) and
in its ``commit_extra_info`` (``model.ingested_files``). A commit
refused because of a concurrent commit that left the table's columns and partitioning alone
(DuckDB refuses an insert after a concurrent delete) is tried again on the new snapshot;
otherwise the files are deleted and the job plans again (``run_operation``). Any failure
before the commit deletes every file the job wrote.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import duckdb

from ducklake_operator import storage
from ducklake_operator.catalog import Catalog
from ducklake_operator.catalog.commit import DEFAULT_AUTHOR, CommitResult
from ducklake_operator.catalog.ingested import ingested_files
from ducklake_operator.duckdb_session import open_session
from ducklake_operator.errors import NOTHING_COMMITTED, CommitConflict, DuckLakeError, JobFailed
from ducklake_operator.evolution.auto_schema import IngestPlan, extents_read, marker_field, plan_ingest
from ducklake_operator.evolution.observed import (
    merged,
)
from ducklake_operator.maintenance.task_balance import balanced_runs
from ducklake_operator.model.file_changes import AppendFiles, NewDataFile
from ducklake_operator.model.ingested_files import ingest_extra_info
from ducklake_operator.model.job_params import INGEST, IngestArgs
from ducklake_operator.model.maintenance_params import (
    DRY_RUN,
    INGEST_EVOLVE,
    INGEST_FORMAT,
    ON_BAD_RECORD,
    REINGEST,
    TARGET_FILE_SIZE,
)
from ducklake_operator.model.partitioning import (
    key_fields,
    key_names,
)
from ducklake_operator.model.state import TableState
from ducklake_operator.model.types import to_duckdb_sql

from .fault_points import fault_point
from .ingest_json import JsonLinesFile
from .ingest_sources import Skipped, Source, TypedRead, list_sources
from .ingest_tasks import Observation, ReadTask, WriteResult, WriteTask, observe_files, write_files
from .inputs import read_inputs
from .job_steps import Report, produce_and_commit, reason
from .lake_paths import TablePaths, option, option_on, options_in_force, sort_sql, table_paths
from .operation_plugin import JobContext, OperationPlugin
from .parquet_writer import (
    copy_options,
    literal,
)
from .run_context import PLAIN_RUN, JobRun
from .task_runners import Runner, run_in_process, run_largest_first
from .written_files import data_file_row, written_counts

GROUP_BYTES = 64 * 1024 * 1024  # input per task of pass 1 (files are never split)
SHARE_BYTES = 64 * 1024 * 1024  # pass 2: a task per core while each has at least this much input
REBASES = 5  # commits refused by a concurrent commit that left the layout alone, tried again


# --------------------------------------------------------------------------- the driver


def ingest(
    catalog: Catalog,
    schema: str,
    table: str,
    *,
    path: str,
    file_format: str = INGEST_FORMAT.default,
    on_bad_record: str = ON_BAD_RECORD.default,
    reingest: bool = REINGEST.default,
    evolve: bool = INGEST_EVOLVE.default,
    dry_run: bool = DRY_RUN.default,
    author: str = DEFAULT_AUTHOR,
    runner: Runner = run_in_process,
    run: JobRun = PLAIN_RUN,
) -> dict[str, Any]:
    inputs = read_inputs(catalog, schema, table)
    state, t = inputs.state, inputs.table
    sources, ignored = list_sources(path, file_format)
    report = Report(
        "ingest",
        table=t.qualified_name,
        path=path,
        format=file_format,
        onBadRecord=on_bad_record,
        baseSnapshot=inputs.base,
        filesRead=len(sources),
        bytesRead=sum(s.file.size for s in sources),
        filesIgnored=ignored,
        dryRun=dry_run,
    )
    if not reingest:
        _refuse_ingested(catalog, t, sources)
    groups = _groups(sources)
    runner = report.runner(run, runner, report.fields["bytesRead"])
    s3 = storage.s3_config(path)
    job = _Ingest(catalog, inputs.base, t, state, groups, sources, on_bad_record, evolve, reingest, author, runner, run)
    # CSV files in their default sample's types, proven as pass 2 writes them (``csv_checks``):
    # a value or row they do not hold for, and every file is read again sniffed over every row
    if not dry_run and any(s.format == "csv" for s in sources):
        try:
            return job.attempt(report, s3, sample_types=True)
        except _SampleRefuted as exc:
            report.fields.update(csvTypesFromSample=0, csvSampleRefuted=str(exc))
    return job.attempt(report, s3, sample_types=False, dry_run=dry_run)


class _SampleRefuted(DuckLakeError):
    """A CSV file's rows do not all hold in its sample's types (nothing was committed)."""

    cleanable = True


@dataclass(frozen=True)
class _Ingest:
    """One ingest's inputs, for ``attempt``."""

    catalog: Catalog
    base: int
    t: TableState
    state: Any
    groups: list[tuple[Source, ...]]
    sources: list[Source]
    on_bad_record: str
    evolve: bool
    reingest: bool
    author: str
    runner: Runner
    run: JobRun

    def attempt(
        self, report: Report, s3: storage.S3Config | None, *, sample_types: bool, dry_run: bool = False
    ) -> dict[str, Any]:
        """Both passes and the commit; ``sample_types``: CSV files read in their default
        sample's types where ``SourceReader`` can prove them as pass 2 writes them (raises
        ``_SampleRefuted`` when they do not hold)."""
        t, run, groups, sources = self.t, self.run, self.groups, self.sources
        reads = [ReadTask(g, self.on_bad_record, s3, extents_read(t), sample_types) for g in groups]
        observations, skipped = _observe(self.runner, run, reads, _group_bytes(groups))
        plan = plan_ingest(t, merged(o.fields for o in observations), column_defaults(t))
        records = sum(o.records for o in observations)
        uncounted = sum(1 for o in observations for r in o.typed if r is not None and r.uncounted)
        report.fields.update(
            records=records,
            recordsSkipped=skipped.count,
            **({"firstSkipped": skipped.first} if skipped.first else {}),
            columnsAdded=plan.describe(),
            **({"csvTypesFromSample": uncounted} if sample_types else {}),
        )
        if plan.changes and not self.evolve:
            raise DuckLakeError(_not_evolving(t, plan))
        if dry_run or not (records or uncounted):
            return report.done(filesWritten=0, rowsWritten=0, committedSnapshot=None)
        paths = table_paths(self.state, t)
        target = TARGET_FILE_SIZE.resolve(None, lambda key: option(self.state, t, key))
        writes = _write_groups(groups, observations, target)
        tasks = [_write_task(self.state, t, plan, w, self.on_bad_record, paths, run.file_marker, s3) for w in writes]
        stored: list[str] = []

        def produce() -> list[WriteResult]:
            results = run.run_file_groups(self.runner, write_files, tasks, _group_bytes([w.sources for w in writes]))
            for r in results:
                stored.extend(r.stored)
            refuted = next((r.error for r in results if r.refuted), None)
            if refuted is not None:
                raise _SampleRefuted(refuted)
            failed = next((r.error for r in results if r.error), None)
            if failed is not None:
                raise JobFailed(f"{failed}; {NOTHING_COMMITTED}")
            if uncounted:  # the rows of the files pass 1 did not count, as written
                report.fields["records"] = records + sum(r.uncounted for r in results)
            return results

        def commit(results: list[WriteResult]) -> CommitResult:
            for r in results:
                skipped.merge(r.skipped)
            done = _written(results, skipped)
            change = _append_change(t, self.base, plan, results, sources, self.reingest)
            extra = ingest_extra_info(t.table_id, change.sources, run.extra_info(report.done(**done)))
            message = f"ingest {t.qualified_name}: {len(sources)} files, {done['rowsWritten']} rows" + (
                f", {len(plan.changes)} columns added" if plan.changes else ""
            )
            return _commit(self.catalog, t, plan, change, self.author, message, extra, rebased)

        rebased: list[int] = []  # snapshots the commit was tried again on
        results, committed = produce_and_commit(lambda: stored, produce, commit, committing=run.committing)
        return report.done(
            **_written(results, skipped),
            committedSnapshot=committed.snapshot_id,
            **({"rebased": len(rebased)} if rebased else {}),
        )


def _observe(runner: Runner, run: JobRun, tasks: list[ReadTask], sizes: list[int]) -> tuple[list[Observation], Skipped]:
    """Read every group of input files once for its fields and records (the plan's input)."""
    run.phase("reading", 0, len(tasks))
    observations = run_largest_first(
        runner, observe_files, tasks, sizes, on_done=lambda done: run.phase("reading", done, len(tasks))
    )
    skipped = Skipped()
    for o in observations:
        skipped.merge(o.skipped)
    return observations, skipped


def _append_change(
    t: TableState, base: int, plan: IngestPlan, results: list[WriteResult], sources: list[Source], reingest: bool
) -> AppendFiles:
    """The written files appended to the table, with the columns the plan adds."""
    return AppendFiles(
        t.table_id,
        t.qualified_name,
        base,
        _new_files(t, results),
        tuple((c.column_id, c.parent_id, c.name, c.type_name) for top in plan.layout for c in top.walk()),
        t.partition.partition_id if t.partition else None,
        tuple(s.file for s in sources),
        reingest,
    )


def _groups(sources: list[Source]) -> list[tuple[Source, ...]]:
    """Consecutive files of about equal size, about ``GROUP_BYTES`` each and a whole number
    of waves on this machine's cores (``task_balance``; a larger file alone)."""
    runs = balanced_runs([s.file.size for s in sources], GROUP_BYTES, os.cpu_count() or 1)
    return [tuple(sources[i] for i in run) for run in runs]


def _group_bytes(groups: list[tuple[Source, ...]]) -> list[int]:
    return [sum(s.file.size for s in g) for g in groups]


@dataclass(frozen=True)
class _WriteGroup:
    """Consecutive sources written by one task, with what pass 1 read of each."""

    sources: tuple[Source, ...]
    json_files: tuple[JsonLinesFile | None, ...]
    typed: tuple[TypedRead | None, ...]


def _write_groups(groups: list[tuple[Source, ...]], observations: list[Observation], target: int) -> list[_WriteGroup]:
    """Pass 2's tasks: the sources again, not in pass 1's groups, in runs of about ``target``
    bytes of input (the table's target file size) but no fewer than the cores while each has
    ``SHARE_BYTES`` (a whole number of waves; ``task_balance``). Each task writes a file per
    partition: pass 1's groups made many small files (1 GB into ``month(ts)``: 16 tasks, 192
    files, where DuckDB's insert writes 12), and one task of two threads for the whole input
    leaves a core idle in its serial parts (300 MB of Parquet: 1.9 s, in two tasks 1.65 s)."""
    flat = [
        per_source
        for g, o in zip(groups, observations, strict=True)
        for per_source in zip(g, o.json_files, o.typed, strict=True)
    ]
    sizes = [s.file.size for s, _, _ in flat]
    cores = os.cpu_count() or 1
    runs = balanced_runs(sizes, min(target, max(SHARE_BYTES, math.ceil(sum(sizes) / cores))), cores)
    return [
        _WriteGroup(tuple(flat[i][0] for i in run), tuple(flat[i][1] for i in run), tuple(flat[i][2] for i in run))
        for run in runs
    ]


def _not_evolving(t: TableState, plan: IngestPlan) -> str:
    """Why a run that may not add columns fails: the fields that need them (a suffixed
    column's by its marker), and what would be added."""
    fields = dict.fromkeys(
        ".".join(c.parent_path + (marker_field(c.field.comment) or c.field.name,)) for c in plan.changes
    )
    return (
        f"ingest into {t.qualified_name}: values of {', '.join(fields)} fit none of the table's columns (they "
        f"need: {'; '.join(d.removeprefix('+ ') for d in plan.describe())}), and evolve is false (the operator "
        "sets it so when the table's DuckLakeTable does not have spec.evolution.mode: auto); nothing was "
        "committed. Set spec.evolution.mode: auto on that DuckLakeTable to let ingest add columns, or declare "
        "the columns there"
    )


def _refuse_ingested(catalog: Catalog, t: TableState, sources: list[Source]) -> None:
    done = ingested_files(catalog, t.table_id, [s.file for s in sources])
    again = [(s.file.path, done[s.file]) for s in sources if s.file in done]
    if again:
        listed = ", ".join(f"{p} (snapshot {snap})" for p, snap in again[:3]) + (
            f" and {len(again) - 3} more" if len(again) > 3 else ""
        )
        raise DuckLakeError(
            f"ingest into {t.qualified_name}: already ingested: {listed}; nothing was committed "
            "(reingest: true ingests them again)"
        )


def column_defaults(t: TableState) -> dict[int, Any]:
    """The value of each top-level column's default (by column id), evaluated as DuckDB's
    INSERT evaluates it for a column it is not given."""
    out: dict[int, Any] = {}
    con = open_session()
    try:
        for c in t.columns:
            if not c.has_default or c.children:
                continue
            sql_type = to_duckdb_sql(c.type)
            text = c.default_value or ""
            value_sql = literal(text) if c.default_value_type != "expression" else f"({text})"
            try:
                row = con.execute(f"SELECT CAST({value_sql} AS {sql_type})").fetchone()
            except duckdb.Error as exc:
                raise DuckLakeError(
                    f"ingest into {t.qualified_name}: the default of {c.name} ({text}) cannot be evaluated: "
                    f"{reason(exc)}"
                ) from None
            out[c.column_id] = row[0] if row else None
    finally:
        con.close()
    return out


def _write_task(
    state: Any,
    t: TableState,
    plan: IngestPlan,
    group: _WriteGroup,
    on_bad_record: str,
    paths: TablePaths,
    marker: str,
    s3: storage.S3Config | None,
) -> WriteTask:
    fields = key_fields(t.partition)
    by_id = {c.column_id: c.name for c in plan.layout}
    return WriteTask(
        sources=group.sources,
        on_bad_record=on_bad_record,
        level=plan.level,
        layout=plan.layout,
        partition=tuple((by_id[f.column_id], f.transform) for f in fields),
        hive_names=tuple(key_names(t.partition, plan.layout)) if option_on(state, t, "hive_file_pattern") else (),
        order_by=sort_sql(t) if option_on(state, t, "sort_on_insert") else "",
        options=copy_options(options_in_force(state, t)),
        paths=paths,
        marker=marker,
        s3=s3 or storage.s3_config(paths.directory),
        json_files=group.json_files,
        typed=group.typed,
    )


def _new_files(t: TableState, results: list[WriteResult]) -> tuple[NewDataFile, ...]:
    fields = key_fields(t.partition)
    return tuple(
        data_file_row(  # row ids: the commit's, from next_row_id
            o.path,
            o.written,
            partition_id=t.partition.partition_id if fields and t.partition else None,
            partition_values=tuple((f.key_index, v) for f, v in zip(fields, o.values, strict=True)),
        )
        for r in results
        for o in r.outputs
    )


def _written(results: list[WriteResult], skipped: Skipped) -> dict[str, Any]:
    return {
        **written_counts(o.written for r in results for o in r.outputs),
        "recordsSkipped": skipped.count,
        **({"firstSkipped": skipped.first} if skipped.first else {}),
    }


def _commit(
    catalog: Catalog,
    t: TableState,
    plan: IngestPlan,
    change: AppendFiles,
    author: str,
    message: str,
    extra: str,
    rebased: list[int],
) -> CommitResult:
    """Commit the plan's columns and the files; a refusal by a concurrent commit that left the
    table's columns and partitioning as planned is tried again on the latest snapshot (the
    files are still right for it; ``rebased`` hears of each)."""
    base = change.base_snapshot
    for attempt in range(REBASES + 1):
        try:
            return catalog.commit(
                [*plan.changes, change],
                author=author,
                base_snapshot=base,
                message=message,
                extra_info=extra,
                before_commit=lambda: fault_point("in_commit"),  # the transaction is open, nothing is visible yet
            )
        except CommitConflict:
            if attempt == REBASES:
                raise
            now = read_inputs(catalog, t.schema_name, t.name).table
            if (now.table_id, now.columns, now.next_column_id, now.partition) != (
                t.table_id,
                t.columns,
                t.next_column_id,
                t.partition,
            ):
                raise
            base = catalog.snapshot().snapshot_id
            rebased.append(base)
    raise AssertionError("unreachable")


def run_ingest(job: JobContext, args: IngestArgs) -> dict[str, Any]:
    return ingest(
        job.catalog,
        job.table_schema,
        job.table_name,
        path=args.path,
        file_format=args.file_format,
        on_bad_record=args.on_bad_record,
        reingest=args.reingest,
        evolve=args.evolve,
        dry_run=args.dry_run,
        author=job.author,
        runner=job.runner,
        run=job.run,
    )


PLUGIN = OperationPlugin(INGEST, run_ingest)
