"""ingest: append files (JSON lines, CSV, Parquet; local or ``s3://``) to a table, evolving its
schema from what the records hold (``evolution.mode: auto``; the rules: ``evolution.auto_schema``).

list the files (``ingest_sources``; files an earlier ingest of the table took in are refused
unless ``reingest``) -> in groups of about ``GROUP_BYTES``, one task each, in-process or as
Spark tasks:

1. read every record and note each field's shapes (``evolution.observed``); bad records fail
   the job naming file and line, or are skipped and counted (``onBadRecord``). JSON-lines
   files DuckDB reads exactly as the Python reader does are observed in DuckDB, a task's
   files in one query (``ingest_json``: the same notes, but for the extents no plan for the
   table reads, ``auto_schema.extents_read``; no record through Python); a CSV or Parquet
   file's columns are its types, with the ranges of the long columns whose extents a plan
   reads (none: a Parquet file is not scanned, its footer counts its rows);
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

import contextlib
import itertools
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from ducklake_operator import storage
from ducklake_operator.catalog import Catalog
from ducklake_operator.catalog.commit import DEFAULT_AUTHOR, CommitResult
from ducklake_operator.catalog.ingested import ingested_files
from ducklake_operator.duckdb_session import open_session
from ducklake_operator.errors import NOTHING_COMMITTED, CommitConflict, DuckLakeError, JobFailed
from ducklake_operator.evolution.auto_schema import IngestPlan, Level, extents_read, marker_field, plan_ingest
from ducklake_operator.evolution.observed import (
    BadRecord,
    Fields,
    MissingValue,
    merge_fields,
    merged,
    observe_record,
    observe_typed,
)
from ducklake_operator.evolution.routing import convert_record
from ducklake_operator.maintenance.task_balance import balanced_runs
from ducklake_operator.model.file_changes import AppendFiles, NewDataFile
from ducklake_operator.model.ingested_files import ingest_extra_info
from ducklake_operator.model.job_params import INGEST, IngestArgs
from ducklake_operator.model.maintenance_params import DRY_RUN, INGEST_EVOLVE, INGEST_FORMAT, ON_BAD_RECORD, REINGEST
from ducklake_operator.model.names import fold
from ducklake_operator.model.partitioning import (
    hive_directory,
    key_fields,
    key_names,
    needs_ducklake_functions,
    transform_sql,
)
from ducklake_operator.model.state import ColumnState, TableState
from ducklake_operator.model.types import Decimal, DuckLakeType, ListOf, MapOf, Primitive, Struct, to_duckdb_sql
from ducklake_operator.model.value_kinds import DUCKLAKE_TYPE

from .fault_points import fault_point
from .ingest_json import SAMPLE_RECORDS, JsonLinesFile, JsonLoad, create_macros, json_lines_load, observe_json_lines
from .ingest_sources import Skipped, Source, SourceReader, TypedRead, list_sources, read_local
from .inputs import read_inputs
from .job_steps import Report, produce_and_commit, reason
from .lake_paths import TablePaths, new_file_name, option_on, options_in_force, sort_sql, table_paths
from .operation_plugin import JobContext, OperationPlugin
from .parquet_writer import (
    WrittenFile,
    copy_options,
    field_ids_from_columns,
    literal,
    quote,
    scratch_connection,
    scratch_session,
    write_parquet,
)
from .run_context import PLAIN_RUN, JobRun
from .task_runners import Runner, run_in_process, run_largest_first
from .written_files import data_file_row, written_counts

GROUP_BYTES = 64 * 1024 * 1024  # input per task (files are never split)
BATCH = 8192  # converted rows handed to DuckDB at a time
REBASES = 5  # commits refused by a concurrent commit that left the layout alone, tried again


@dataclass(frozen=True)
class ReadTask:
    sources: tuple[Source, ...]
    on_bad_record: str
    s3: storage.S3Config | None = None
    extents: frozenset[tuple[str, str]] | None = None  # noted by DuckDB's readers (None: all)


@dataclass(frozen=True)
class Observation:
    fields: Fields
    records: int
    skipped: Skipped
    json_files: tuple[JsonLinesFile | None, ...] = ()  # per source: what DuckDB read of it (None: Python did)
    typed: tuple[TypedRead | None, ...] = ()  # per source: what DuckDB read of a CSV or Parquet file


def observe_files(task: ReadTask) -> Observation:
    """Pass 1: what the fields of the task's records hold. JSON-lines files DuckDB reads
    exactly as Python does are observed in DuckDB (``ingest_json``), together; any other
    file in Python, in order (the first bad one fails the job)."""
    if task.s3 is not None:
        storage.configure(task.s3)
    fields: Fields = {}
    records, skipped = 0, Skipped()
    json_files: list[JsonLinesFile | None] = [None] * len(task.sources)
    typed: list[TypedRead | None] = [None] * len(task.sources)
    parquet: duckdb.DuckDBPyConnection | None = None  # one DuckDB describes and counts every Parquet file
    with tempfile.TemporaryDirectory(prefix="ducklake-ingest-") as scratch, contextlib.ExitStack() as closing:
        local: dict[int, str] = {}
        found = _observe_in_duckdb(task, scratch, local)
        for k, source in enumerate(task.sources):
            if k in found:
                merge_fields(fields, found[k][0])
                records += found[k][1].records
                json_files[k] = found[k][1]
                continue
            local_copy = local.get(k) or read_local(source, scratch)
            if source.format == "parquet" and parquet is None:
                parquet = scratch_connection()
                closing.callback(parquet.close)
            con = parquet if source.format == "parquet" else None
            reader = SourceReader(source, local_copy, task.on_bad_record, skipped, extents=task.extents, con=con)
            try:
                if reader.typed is not None:
                    rows = reader.count()
                    typed[k] = TypedRead(rows, reader.dialect)
                    if rows:
                        observe_typed(fields, reader.columns, reader.ranges)
                    records += rows
                    continue
                for record in reader.records():
                    try:
                        observe_record(fields, record.values)
                    except BadRecord as exc:
                        reader.bad(record.where, str(exc))
                        continue
                    records += 1
            finally:
                reader.close()
    return Observation(fields, records, skipped, tuple(json_files), tuple(typed))


def _observe_in_duckdb(task: ReadTask, scratch: str, local: dict[int, str]) -> dict[int, tuple[Fields, JsonLinesFile]]:
    """What DuckDB observes of the task's JSON-lines files it reads as Python does, by their
    index (``local``: the local copy of each file fetched). A file that cannot be fetched or
    is not JSON lines is left to the Python reader, which fails on it in its turn."""
    candidates: list[tuple[int, str, list[dict[str, Any]]]] = []
    for k, source in enumerate(task.sources):
        if source.format != "json":
            continue
        try:
            local[k] = read_local(source, scratch)
            if not SourceReader(source, local[k], task.on_bad_record, None).plain_json():
                continue
        except DuckLakeError:
            continue
        first = _first_records(source, local[k])
        if first is not None:
            candidates.append((k, local[k], first))
    if not candidates:
        return {}
    con = scratch_connection()
    try:
        found = observe_json_lines(con, [(path, first) for _, path, first in candidates], task.extents)
    finally:
        con.close()
    return {k: f for (k, _, _), f in zip(candidates, found, strict=True) if f is not None}


def _first_records(source: Source, local: str) -> list[dict[str, Any]] | None:
    """The first records of a JSON-lines file as the Python reader reads them (None: one of
    them is bad, and the file is read in Python)."""
    skipped = Skipped()
    records = SourceReader(source, local, "skip", skipped).records()
    try:
        first = [r.values for r in itertools.islice(records, SAMPLE_RECORDS)]
    finally:
        records.close()
    return None if skipped.count else first


@dataclass(frozen=True)
class WriteTask:
    sources: tuple[Source, ...]
    on_bad_record: str
    level: Level
    layout: tuple[ColumnState, ...]  # the table's columns once the plan is committed
    partition: tuple[tuple[str, str], ...]  # (column, transform) of the current spec's keys, in order
    hive_names: tuple[str, ...]  # their hive directory names (none: no hive directories)
    order_by: str
    options: tuple[tuple[str, str], ...]
    paths: TablePaths
    marker: str
    s3: storage.S3Config | None = None
    json_files: tuple[JsonLinesFile | None, ...] = ()  # per source: what pass 1 read of it in DuckDB
    typed: tuple[TypedRead | None, ...] = ()  # per source: what pass 1 read of a CSV or Parquet file


@dataclass(frozen=True)
class Output:
    path: str  # relative to the table's directory
    written: WrittenFile
    values: tuple[str | None, ...]  # partition values, in key order


@dataclass(frozen=True)
class WriteResult:
    outputs: tuple[Output, ...] = ()
    rows: int = 0
    skipped: Skipped = field(default_factory=Skipped)
    stored: tuple[str, ...] = ()  # full paths of every file written, to delete on failure
    error: str | None = None


def write_files(task: WriteTask) -> WriteResult:
    """Pass 2: the task's records as rows of the evolved table, in Parquet. Never raises: a
    failure is returned with the files already stored, for the driver to delete."""
    stored: list[str] = []
    bucketed = needs_ducklake_functions(t for _, t in task.partition)
    try:
        with scratch_session(task.s3, "ducklake-ingest-", ducklake_functions=bucketed) as (con, scratch):
            rows, skipped = _load_rows(con, task, scratch)
            outputs = _write_partitions(con, task, scratch, stored) if rows else ()
        return WriteResult(outputs, rows, skipped, tuple(stored))
    except Exception as exc:  # noqa: BLE001  (reported to the driver, which deletes what was stored)
        message = str(exc) if isinstance(exc, DuckLakeError) else reason(exc)
        return WriteResult(stored=tuple(stored), error=message)


def _load_rows(con: duckdb.DuckDBPyConnection, task: WriteTask, scratch: str) -> tuple[int, Skipped]:
    """Convert every record into ``__rows`` (a DuckDB temp table in the layout's types; a view
    of the files when DuckDB reads all of them alike, ``_json_view``)."""
    columns = task.layout
    if _json_view(con, task, scratch):
        return sum(f.records for f in task.json_files if f is not None), Skipped()
    if _typed_view(con, task, scratch):
        return sum(r.rows for r in task.typed if r is not None), Skipped()
    con.execute(
        "CREATE TEMP TABLE __rows (" + ", ".join(f"{quote(c.name)} {to_duckdb_sql(c.type)}" for c in columns) + ")"
    )
    types = [arrow_type(c.type) for c in columns]
    adapt = [_needs_adapting(c.type) for c in columns]
    insert = (
        "INSERT INTO __rows SELECT "
        + ", ".join(f"CAST(c{i} AS {to_duckdb_sql(c.type)})" for i, c in enumerate(columns))
        + " FROM __batch"
    )
    batch: list[list[Any]] = []
    rows, skipped = 0, Skipped()

    def flush() -> None:
        arrays = [
            pa.array([_adapted(v, c.type) for v in values] if adapt[i] else list(values), type=types[i])
            for i, (c, values) in enumerate(zip(columns, zip(*batch, strict=True), strict=True))
        ]
        con.register("__batch", pa.RecordBatch.from_arrays(arrays, names=[f"c{i}" for i in range(len(columns))]))
        try:
            con.execute(insert)
        finally:
            con.unregister("__batch")
        batch.clear()

    pending: list[str] = []  # JSON-lines files read alike by DuckDB, one after the other
    loads: list[JsonLoad] = []

    def load() -> None:
        nonlocal rows
        if pending:
            row = con.execute(f"INSERT INTO __rows {loads[-1].sql(pending)}").fetchone()
            rows += int(row[0]) if row else 0
            pending.clear()

    for k, source in enumerate(task.sources):
        local = read_local(source, scratch)
        found = task.json_files[k] if k < len(task.json_files) else None
        if found is not None and not found.records:
            continue
        json_load = json_lines_load(found, task.level, columns) if found is not None else None
        if json_load is not None:
            if batch:
                flush()  # the rows keep the files' order
            if not loads:
                create_macros(con)
            if pending and json_load != loads[-1]:
                load()
            loads.append(json_load)
            pending.append(local)
            continue
        load()
        reader = _typed_reader(task, k, local)
        try:
            direct = _direct_select(reader, task.level, columns)
            if direct is not None:
                if batch:
                    flush()  # the rows keep the files' order
                row = con.execute(f"INSERT INTO __rows {direct}").fetchone()
                rows += int(row[0]) if row else 0
                continue
            typed = reader.typed
            for record in reader.records():
                try:
                    batch.append(convert_record(record.values, task.level, typed))
                except MissingValue as exc:
                    reader.bad(record.where, str(exc))
                    skipped.add(record.where, str(exc))
                    continue
                except BadRecord:
                    continue  # skipped, and counted, when observed
                rows += 1
                if len(batch) >= BATCH:
                    flush()
        finally:
            reader.close()
    load()
    if batch:
        flush()
    return rows, skipped


def _json_view(con: duckdb.DuckDBPyConnection, task: WriteTask, scratch: str) -> bool:
    """``__rows`` as a view reading the task's files, when each is a JSON-lines file DuckDB
    reads straight into the rows and all of them alike (one ``JsonLoad``): the rows are read
    once, by the write of the Parquet file(s), with no table between."""
    found = task.json_files
    if len(found) != len(task.sources) or any(f is None for f in found):
        return False
    loads = {json_lines_load(f, task.level, task.layout) for f in found if f is not None and f.records}
    if len(loads) != 1 or None in loads:
        return False
    (load,) = loads
    assert load is not None
    files = [read_local(s, scratch) for s, f in zip(task.sources, found, strict=True) if f is not None and f.records]
    create_macros(con)
    con.execute(f"CREATE TEMP VIEW __rows AS {load.sql(files)}")
    return True


def _typed_reader(task: WriteTask, k: int, local: str, con: duckdb.DuckDBPyConnection | None = None) -> SourceReader:
    """A reader of the task's ``k``-th source, in the dialect pass 1 found for it (``con``:
    with the task's DuckDB, only to describe the file)."""
    read = task.typed[k] if k < len(task.typed) else None
    return SourceReader(task.sources[k], local, task.on_bad_record, None, read.dialect if read else None, con=con)


def _typed_view(con: duckdb.DuckDBPyConnection, task: WriteTask, scratch: str) -> bool:
    """``__rows`` as a view reading the task's files, when each is a CSV or Parquet file
    DuckDB reads straight into the rows (``_direct_select``): the rows are read once, by the
    write of the Parquet file(s), in the files' order (DuckDB's UNION ALL keeps it)."""
    if len(task.typed) != len(task.sources) or any(r is None for r in task.typed):
        return False
    selects: list[str] = []
    for k, (source, read) in enumerate(zip(task.sources, task.typed, strict=True)):
        if read is None or not read.rows:
            continue
        reader = _typed_reader(task, k, read_local(source, scratch), con)
        try:
            direct = _direct_select(reader, task.level, task.layout)
        finally:
            reader.close()
        if direct is None:
            return False
        selects.append(direct)
    if not selects:
        return False
    names = ", ".join(quote(c.name) for c in task.layout)
    con.execute(f"CREATE TEMP VIEW __rows ({names}) AS " + " UNION ALL ".join(selects))
    return True


def _direct_select(reader: SourceReader, level: Level, layout: tuple[ColumnState, ...]) -> str | None:
    """The rows of a CSV or Parquet file as ``__rows`` takes them, read by DuckDB without a
    record passing through Python, when routing would hand every value over unchanged: each
    of the file's columns (of a type of a base kind: int32, float32 and timestamp_s too) goes
    into one column only, of its kind's own type (int64, float64, timestamp: DuckDB's CAST
    gives the value routing would); the file has a column for every column with a default and
    every NOT NULL column, and no row without a value for one. None otherwise (or a JSON
    file): the records are converted one by one (``evolution.routing``), which fails or skips
    a record naming it."""
    if reader.typed is None:
        return None
    fed: dict[int, str] = {}
    for column, source_type in zip(reader.columns, reader.types, strict=True):
        shape = column.shape
        if column.name == "" or shape.dims != 0 or shape.kind not in DUCKLAKE_TYPE:
            return None
        targets = level.taking(fold(column.name), shape)
        if len(targets) != 1 or not isinstance(source_type, Primitive):
            return None
        (target,) = targets
        own_type = Primitive(DUCKLAKE_TYPE[shape.kind])
        if target.dims != 0 or target.kind != shape.kind or layout[target.index].type != own_type:
            return None
        fed[target.index] = column.name
    keys = {fold(c.name) for c in reader.columns}
    if any(key not in keys for _, key, _ in level.defaults) or any(i not in fed for i, _ in level.required):
        return None
    if level.required:
        lacking = " OR ".join(f"{quote(fed[i])} IS NULL" for i, _ in level.required)
        row = reader.query(f"SELECT count(*) FROM {reader.scan()} WHERE {lacking}")
        if row[0]:
            return None
    items = (f"CAST({quote(fed[i]) if i in fed else 'NULL'} AS {to_duckdb_sql(c.type)})" for i, c in enumerate(layout))
    return f"SELECT {', '.join(items)} FROM {reader.scan()}"


def _write_partitions(
    con: duckdb.DuckDBPyConnection, task: WriteTask, scratch: str, stored: list[str]
) -> tuple[Output, ...]:
    """One file per partition of ``__rows`` (one file when the table has no partitioning)."""
    fields = field_ids_from_columns(task.layout)
    order = f" ORDER BY {task.order_by}" if task.order_by else ""
    keys = [f"__p{i}" for i in range(len(task.partition))]
    groups: list[tuple[str | None, ...]] = [()]
    source = "__rows"
    if keys:
        items = ", ".join(
            f"{transform_sql(t, quote(c))} AS {k}" for (c, t), k in zip(task.partition, keys, strict=True)
        )
        con.execute(f"CREATE TEMP TABLE __keyed AS SELECT *, {items} FROM __rows")
        source = "__keyed"
        groups = [tuple(r) for r in con.execute(f"SELECT DISTINCT {', '.join(keys)} FROM __keyed").fetchall()]
        groups.sort(key=lambda g: tuple((v is None, v or "") for v in g))
    outputs: list[Output] = []
    for values in groups:
        where = " AND ".join(f"{k} IS NOT DISTINCT FROM ${k}" for k in keys)
        select = (
            f"SELECT * EXCLUDE ({', '.join(keys)}) FROM {source} WHERE {where}{order}"
            if keys
            else f"SELECT * FROM {source}{order}"
        )
        written = write_parquet(
            con,
            select,
            fields,
            os.path.join(scratch, f"out-{len(outputs)}.parquet"),
            task.options,
            dict(zip(keys, values, strict=True)),
        )
        relative = new_file_name(
            hive_directory(list(task.hive_names), values) if task.hive_names else "", marker=task.marker
        )
        full = task.paths.full(relative, True)
        stored.append(full)
        storage.store(written.local_path, full)
        outputs.append(Output(relative, written, values))
    return tuple(outputs)


# --------------------------------------------------------------------------- Arrow


_ARROW: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    **{f"int{b}": getattr(pa, f"int{b}")() for b in (8, 16, 32, 64)},
    **{f"uint{b}": getattr(pa, f"uint{b}")() for b in (8, 16, 32, 64)},
    "float32": pa.float32(),
    "float64": pa.float64(),
    "varchar": pa.string(),
    "blob": pa.binary(),
    "date": pa.date32(),
    "time": pa.time64("us"),
    "timestamp": pa.timestamp("us"),
    "timestamp_s": pa.timestamp("s"),
    "timestamp_ms": pa.timestamp("ms"),
    "timestamptz": pa.timestamp("us", tz="UTC"),
}
_AS_TEXT = ("uuid", "int128", "uint128")  # handed to DuckDB as text, cast there


def arrow_type(t: DuckLakeType) -> pa.DataType:
    """The Arrow type a converted value of ``t`` is handed over in (DuckDB casts it to ``t``;
    types no ingested value has, NULL only, as text)."""
    if isinstance(t, Decimal):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, ListOf):
        return pa.list_(arrow_type(t.element))
    if isinstance(t, Struct):
        return pa.struct([pa.field(f.name, arrow_type(f.type)) for f in t.fields])
    if isinstance(t, MapOf):
        return pa.map_(arrow_type(t.key), arrow_type(t.value))
    return _ARROW.get(t.name, pa.string())


def _needs_adapting(t: DuckLakeType) -> bool:
    if isinstance(t, ListOf):
        return _needs_adapting(t.element)
    if isinstance(t, Struct):
        return any(_needs_adapting(f.type) for f in t.fields)
    return isinstance(t, Primitive) and t.name in _AS_TEXT


def _adapted(value: Any, t: DuckLakeType) -> Any:
    if value is None:
        return None
    if isinstance(t, ListOf):
        return [_adapted(v, t.element) for v in value]
    if isinstance(t, Struct):
        return {f.name: _adapted(value.get(f.name), f.type) for f in t.fields}
    return str(value) if isinstance(t, Primitive) and t.name in _AS_TEXT else value


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
    reads = [ReadTask(g, on_bad_record, s3, extents_read(t)) for g in groups]
    observations, skipped = _observe(runner, run, reads, _group_bytes(groups))
    plan = plan_ingest(t, merged(o.fields for o in observations), column_defaults(t))
    records = sum(o.records for o in observations)
    report.fields.update(
        records=records,
        recordsSkipped=skipped.count,
        **({"firstSkipped": skipped.first} if skipped.first else {}),
        columnsAdded=plan.describe(),
    )
    if plan.changes and not evolve:
        raise DuckLakeError(_not_evolving(t, plan))
    if dry_run or not records:
        return report.done(filesWritten=0, rowsWritten=0, committedSnapshot=None)
    paths = table_paths(state, t)
    tasks = [
        _write_task(state, t, plan, g, on_bad_record, paths, run.file_marker, s3, o)
        for g, o in zip(groups, observations, strict=True)
    ]
    stored: list[str] = []

    def produce() -> list[WriteResult]:
        results = run.run_file_groups(runner, write_files, tasks, _group_bytes(groups))
        for r in results:
            stored.extend(r.stored)
        failed = next((r.error for r in results if r.error), None)
        if failed is not None:
            raise JobFailed(f"{failed}; {NOTHING_COMMITTED}")
        return results

    def commit(results: list[WriteResult]) -> CommitResult:
        for r in results:
            skipped.merge(r.skipped)
        done = _written(results, skipped)
        change = _append_change(t, inputs.base, plan, results, sources, reingest)
        extra = ingest_extra_info(t.table_id, change.sources, run.extra_info(report.done(**done)))
        message = f"ingest {t.qualified_name}: {len(sources)} files, {done['rowsWritten']} rows" + (
            f", {len(plan.changes)} columns added" if plan.changes else ""
        )
        return _commit(catalog, t, plan, change, author, message, extra, rebased)

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
    group: tuple[Source, ...],
    on_bad_record: str,
    paths: TablePaths,
    marker: str,
    s3: storage.S3Config | None,
    read: Observation,
) -> WriteTask:
    fields = key_fields(t.partition)
    by_id = {c.column_id: c.name for c in plan.layout}
    return WriteTask(
        sources=group,
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
        json_files=read.json_files,
        typed=read.typed,
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
