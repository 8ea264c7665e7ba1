"""rewriteColumnType: change columns' (or struct fields') types by rewriting the data, for the
conversions DuckDB refuses in place (``model.conversions``; ``evolution.typeChanges: rewrite``).
Several columns are rewritten in one pass over the files and committed in one snapshot.

plan (pure, ``maintenance.column_rewrite``): every live data file of the table in groups, one
output file each -> one ``RetypeTask`` per group, in-process or as Spark tasks, plus one for the
live inlined rows (in this process: they come from the catalog database) -> catch up with
what DuckDB inserted meanwhile -> one snapshot (``RetypeColumns``) that gives the columns their
new types and swaps every file and inlined row for the outputs.

Each task reads its files in the table's current layout (deleted rows dropped: the outputs
begin at the commit, when they are deleted anyway), converts the columns with
``conversion_sql`` and writes the new layout with DuckDB's writer, row ids embedded (unless the
group's ids run on from file to file with none deleted: its output then takes them by position,
as a merge of adjacent files does, and need not write them). The
inputs end at the commit instead of going, so every earlier snapshot still reads the old
types and values. A value that does not convert fails the job, naming the first ones and
their row ids, before anything is committed (its files deleted); ``onCastError: null``
writes NULL instead and counts them.

Given the DuckLakeTable whose plan the rewrite does (``manifest``: ``ducklake apply`` and the
operator pass it), the job commits that plan's other changes in the same snapshot
(``manifest_plan``), so every snapshot reads the table either as it was or as the manifest
declares it.

Rows inserted while the job runs (new files, new inlined rows) are rewritten too: most of
them before the commit, the rest inside the commit's transaction once it has reserved the
next snapshot (``LateChanges``: DuckDB's writers wait for it, a fraction of a second), so a
table that never stops receiving inserts cannot keep overtaking the job. A deletion or an
update of a row already rewritten refuses the job (``CommitConflict``: ``run_operation``
plans it again), so no row is ever lost or resurrected.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ducklake_operator import storage
from ducklake_operator.api.v1alpha1.table import TableSpec
from ducklake_operator.catalog import Catalog
from ducklake_operator.catalog.commit import DEFAULT_AUTHOR
from ducklake_operator.catalog.inlined import InlinedRows
from ducklake_operator.catalog.job_inputs import InlinedData, TableInputs, read_inlined_data
from ducklake_operator.duckdb_session import open_session
from ducklake_operator.errors import NOTHING_COMMITTED, CommitConflict, DuckLakeError, JobFailed
from ducklake_operator.maintenance.column_rewrite import (
    ColumnRewritePlan,
    Retyped,
    RetypeGroup,
    file_groups,
    plan_column_rewrite,
    retyped_layout,
)
from ducklake_operator.model.conversions import conversion_sql, values_limit
from ducklake_operator.model.file_changes import ColumnRetype, PlannedInputs, RetypeColumns
from ducklake_operator.model.job_params import REWRITE_COLUMN_TYPE, RewriteColumnTypeArgs
from ducklake_operator.model.maintenance_params import DRY_RUN, ON_CAST_ERROR, TARGET_FILE_SIZE
from ducklake_operator.model.state import DataFile, TableState
from ducklake_operator.model.types import DuckLakeType, to_duckdb_sql

from .fault_points import fault_point
from .file_rewrite import SourceFile, source_file
from .inlined_rows import register_decoded
from .inputs import read_inputs
from .job_steps import Report, produce_and_commit
from .lake_paths import TablePaths, new_file_beside, new_file_name, option, options_in_force, table_paths
from .manifest_plan import ManifestPlan, manifest_plan
from .operation_plugin import JobContext, OperationPlugin
from .parquet_writer import (
    HIDDEN_FIELD_IDS,
    ROW_ID,
    FieldIds,
    copy_options,
    field_ids_from_columns,
    quote,
    scratch_connection,
    write_parquet,
)
from .retype_task import FIRST_FAILURES, RetypeOutput, RetypeTask, TaskColumn, retype_files
from .run_context import PLAIN_RUN, JobRun
from .task_runners import Runner, run_in_process
from .written_files import data_file_row, written_counts


@dataclass
class Work:
    """What the job has rewritten so far, and the catalog as it last read it."""

    inputs: TableInputs
    plan: ColumnRewritePlan
    on_cast_error: str
    marker: str
    staging: str  # a local directory for inlined rows on their way to a task
    sources: dict[int, tuple[int | None, int]] = field(default_factory=dict)  # file id -> (delete file, inlined dels)
    inlined: dict[str, set[int]] = field(default_factory=dict)  # inlined table -> row ids rewritten
    outputs: list[tuple[RetypeGroup | None, RetypeOutput]] = field(default_factory=list)  # group None: inlined rows
    planned: list[str] = field(default_factory=list)  # every output path, before it is written
    rounds: int = 0  # catch-up rounds that found rows to rewrite
    keep_partitions: bool = True  # false: the commit changes the partitioning (no partition values kept)

    @property
    def table(self) -> TableState:
        return self.inputs.table

    @property
    def base(self) -> int:
        return self.inputs.base


def _tasks(work: Work, groups: tuple[RetypeGroup, ...], paths: TablePaths, parquet: Any) -> list[RetypeTask]:
    t, inlined_deletions = work.table, work.inputs.inlined_deletions
    files = {f.data_file_id: f for f in t.data_files}
    deletes = {d.data_file_id: d for d in t.delete_files if d.end_snapshot is None}
    out = []
    for g in groups:
        for i in g.files:
            d = deletes.get(i)
            work.sources[i] = (d.delete_file_id if d else None, len(inlined_deletions.get(i, ())))
        first = files[g.files[0]]
        name = (
            new_file_beside(first.path, first.path_is_relative, marker=work.marker)
            if g.partition_id is not None
            else new_file_name(marker=work.marker)  # no hive directory: no partition values
        )
        sources = tuple(
            source_file(paths, files[i], deletes.get(i), tuple(inlined_deletions.get(i, ()))) for i in g.files
        )
        out.append(_task(work, sources, paths.full(name, True), parquet, _positional_start(sources, files, g.files)))
    return out


def _positional_start(sources: tuple[SourceFile, ...], files: dict[int, DataFile], ids: tuple[int, ...]) -> int | None:
    """The first row id of sources whose ids follow on from one file to the next with no row
    deleted, so the rows written in order keep them by position; else None."""
    if any(s.delete_file or s.deletions for s in sources):
        return None
    first = expected = files[ids[0]].row_id_start
    for i in ids:
        if expected is None or files[i].row_id_start != expected:
            return None
        expected += files[i].record_count
    return first


def _task(
    work: Work, sources: tuple[SourceFile, ...], output: str, parquet: Any, row_id_start: int | None = None
) -> RetypeTask:
    work.planned.append(output)
    columns = work.table.columns
    return RetypeTask(
        sources=sources,
        output=output,
        columns=columns,
        new_columns=retyped_layout(columns, {r.column.column_id: r.new_type.name for r in work.plan.columns}),
        retyped=tuple(
            TaskColumn(tuple(c.column_id for c in r.chain), r.column.type, r.new_type) for r in work.plan.columns
        ),
        on_cast_error=work.on_cast_error,
        options=parquet,
        s3=storage.s3_config(output),
        row_id_start=row_id_start,
    )


def _inlined_task(work: Work, batches: list[InlinedRows], paths: TablePaths, parquet: Any) -> RetypeTask | None:
    """The live inlined rows not rewritten yet, staged as Parquet files (their own layouts)
    for one task."""
    staged: list[SourceFile] = []
    con = scratch_connection()
    try:
        for rows in batches:
            done = work.inlined.setdefault(rows.table_name, set())
            todo = [r for r in rows.rows if r[2] is None and r[0] not in done]
            if not todo:
                continue
            done.update(r[0] for r in todo)
            register_decoded(con, replace(rows, rows=todo), "__inlined")
            local = os.path.join(work.staging, f"inlined-{len(os.listdir(work.staging))}.parquet")
            select = ", ".join([quote(c.name) for c in rows.columns] + [f"row_id AS {quote(ROW_ID)}"])
            write_parquet(
                con,
                f"SELECT {select} FROM __inlined ORDER BY row_id",
                field_ids_from_columns(rows.columns) + (FieldIds(ROW_ID, HIDDEN_FIELD_IDS[ROW_ID]),),
                local,
            )
            con.execute("DROP TABLE __inlined")
            staged.append(SourceFile(local, 0, None))
    finally:
        con.close()
    if not staged:
        return None
    return _task(work, tuple(staged), paths.full(new_file_name(marker=work.marker), True), parquet)


def _check_failures(work: Work, outputs: list[RetypeOutput]) -> None:
    if work.on_cast_error != "fail" or not any(sum(o.failed) for o in outputs):
        return
    said = []
    for i, r in enumerate(work.plan.columns):
        failed = sum(o.failed[i] for o in outputs)
        if failed:
            first = sorted(f for o in outputs for f in o.first_failed[i])[:FIRST_FAILURES]
            said.append(
                f"{failed} value(s) of {r.name} do not convert from {r.column.type} to {r.new_type}: "
                + ", ".join(f"{value!r} (row id {row_id})" for row_id, value in first)
                + _why(r.new_type)
            )
    raise JobFailed(
        f"rewriteColumnType {work.table.qualified_name}: {'; '.join(said)}; {NOTHING_COMMITTED} "
        "(onCastError: null writes NULL instead)"
    )


def _why(new_type: DuckLakeType) -> str:
    limit = values_limit(new_type)
    return f" ({limit})" if limit else ""


def _convert_defaults(r: Retyped, on_cast_error: str) -> tuple[str | None, str]:
    """The column's initial_default and literal default_value for the new type: kept as stored
    when DuckDB reads that text in the new type as the converted value (DuckDB's own ALTER
    keeps them: '7' of an int32 stays '7' for a float64), else DuckDB's text of it."""
    c = r.column
    old_sql, new_sql = to_duckdb_sql(c.type), to_duckdb_sql(r.new_type)
    con = open_session()
    try:

        def convert(text: str | None, what: str) -> str | None:
            if text is None:
                return None
            converted = conversion_sql(c.type, r.new_type, f"CAST($text AS {old_sql})")
            row = con.execute(
                f"SELECT CAST(v AS VARCHAR), TRY_CAST($text AS {new_sql}) IS NOT DISTINCT FROM v "
                f"FROM (SELECT {converted} AS v)",
                {"text": text},
            ).fetchone()
            if row is None or row[0] is None:
                if on_cast_error == "fail":
                    raise JobFailed(
                        f"rewriteColumnType: the {what} of {r.name}, {text!r}, does not convert to "
                        f"{r.new_type}{_why(r.new_type)}; change it first, or set onCastError: null to drop it; "
                        "nothing was committed"
                    )
                return None
            return text if row[1] else str(row[0])

        literal_default = c.default_value_type == "literal" and c.has_default
        default = convert(c.default_value, "default") if literal_default else c.default_value
        return convert(c.initial_default, "initial default"), default or "NULL"
    finally:
        con.close()


def requested(
    column: tuple[str, ...] | None,
    new_type: DuckLakeType | None,
    columns: tuple[tuple[tuple[str, ...], DuckLakeType], ...] | None,
) -> tuple[tuple[tuple[str, ...], DuckLakeType], ...]:
    """The (path, new type) pairs asked for: ``column`` and ``new_type``, or ``columns``."""
    if columns is not None and column is None and new_type is None and columns:
        return columns
    if columns is None and column is not None and new_type is not None:
        return ((column, new_type),)
    raise DuckLakeError("rewriteColumnType takes column and type, or columns (several columns and their types)")


def rewrite_column_type(
    catalog: Catalog,
    schema: str,
    table: str,
    *,
    column: tuple[str, ...] | None = None,
    new_type: DuckLakeType | None = None,
    columns: tuple[tuple[tuple[str, ...], DuckLakeType], ...] | None = None,
    on_cast_error: str = ON_CAST_ERROR.default,
    manifest: TableSpec | None = None,
    dry_run: bool = DRY_RUN.default,
    author: str = DEFAULT_AUTHOR,
    runner: Runner = run_in_process,
    run: JobRun = PLAIN_RUN,
) -> dict[str, Any]:
    """``column`` and ``new_type``, or ``columns``: what to retype. ``manifest``: the
    DuckLakeTable whose plan's heavy changes these are; its other changes commit with them."""
    asked = requested(column, new_type, columns)
    inputs = read_inputs(catalog, schema, table)
    state, t = inputs.state, inputs.table
    target = TARGET_FILE_SIZE.resolve(None, lambda key: option(state, t, key))
    planned = manifest_plan(catalog, manifest, t, inputs.base, asked) if manifest is not None else None
    repartitioned = planned is not None and planned.repartitions
    retypes = planned.retypes(t) if planned is not None else asked  # a manifest's names may be new ones
    plan = plan_column_rewrite(t, inputs.base, retypes, target, repartitioned=repartitioned)
    inlined = read_inlined_data(catalog, t, inputs.base)
    report = _report(inputs, plan, inlined, on_cast_error, dry_run, planned)
    if dry_run or plan.done:
        return report.nothing_written(**({"plan": plan.to_json()} if dry_run else {"alreadyOfType": True}))
    defaults = {r.column.column_id: _convert_defaults(r, on_cast_error) for r in plan.columns}
    runner = report.runner(run, runner, plan.input_bytes)
    paths = table_paths(state, t)
    parquet = copy_options(options_in_force(state, t))
    staging = tempfile.mkdtemp(prefix="ducklake-retype-")
    work = Work(inputs, plan, on_cast_error, run.file_marker, staging, keep_partitions=not repartitioned)

    def rewrite(groups: tuple[RetypeGroup, ...], batches: list[InlinedRows], on: Runner = runner) -> None:
        tasks = _tasks(work, groups, paths, parquet)
        outputs = run.run_file_groups(on, retype_files, tasks)
        inlined_task = _inlined_task(work, batches, paths, parquet)
        inlined_out = [retype_files(inlined_task)] if inlined_task is not None else []
        _check_failures(work, outputs + inlined_out)
        work.outputs += list(zip(groups, outputs, strict=True)) + [(None, o) for o in inlined_out]

    def produce() -> Work:
        rewrite(plan.groups, inlined.batches)
        return work

    def last_rows(latest: int) -> list[Any]:
        """Inside the commit, writers held: the rows inserted since the last look (few: in
        this process, Spark would only add its start to the hold)."""
        _catch_up(catalog, work, target, lambda groups, batches: rewrite(groups, batches, run_in_process))
        return _changes_at(catalog, latest, work, planned, lambda: _change(work, defaults, paths))

    def commit(_: Work) -> Any:
        _catch_up(catalog, work, target, rewrite)  # what was inserted while the files were rewritten
        also = f"; {planned.describe_others()}" if planned is not None and planned.plan.light_changes else ""
        return catalog.commit(
            last_rows,
            author=author,
            message=f"rewriteColumnType {t.qualified_name}: {plan.describe()}{also}",
            extra_info=lambda: (
                run.extra_info(report.done(**_written(work))) or (planned.extra_info() if planned is not None else None)
            ),
            before_commit=lambda: fault_point("in_commit"),
        )

    try:
        _, result = produce_and_commit(lambda: work.planned, produce, commit, committing=run.committing)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return report.done(**_written(work), committedSnapshot=result.snapshot_id)


def _report(
    inputs: TableInputs,
    plan: ColumnRewritePlan,
    inlined: InlinedData,
    on_cast_error: str,
    dry_run: bool,
    planned: ManifestPlan | None,
) -> Report:
    """The report's start: what the plan reads and retypes."""
    return Report(
        "rewriteColumnType",
        table=inputs.table.qualified_name,
        columns=[r.to_json() for r in plan.columns + plan.unchanged],
        onCastError=on_cast_error,
        baseSnapshot=inputs.base,
        groups=len(plan.groups),
        filesRead=plan.input_files,
        bytesRead=plan.input_bytes,
        inlinedRowsRead=sum(1 for b in inlined.batches for r in b.rows if r[2] is None),
        dryRun=dry_run,
        **(planned.report() if planned is not None else {}),
    )


def _changes_at(
    catalog: Catalog, latest: int, work: Work, planned: ManifestPlan | None, retype: Callable[[], RetypeColumns]
) -> list[Any]:
    """What the commit at ``latest`` holds: the ``retype``, and the manifest's other changes as
    planned now; refused when the last read did not see ``latest``."""
    if work.base != latest:  # the read must see the catalog the commit holds still
        raise CommitConflict(
            f"rewriteColumnType {work.table.qualified_name}: read snapshot {work.base} while committing after "
            f"{latest}; nothing was committed"
        )
    others: list[Any] = []
    if planned is not None:  # the manifest's other changes, as planned now
        planned.check_at(catalog, latest)
        planned.check_nulls(_nulled(work))
        others = list(planned.plan.light_changes)
    return [retype(), *others]


def _catch_up(catalog: Catalog, work: Work, target: int, rewrite: Any) -> None:
    """Read the table again: rewrite the files and inlined rows added since the last read;
    refuse (``CommitConflict``) when something already rewritten changed."""
    t = work.table
    now = read_inputs(catalog, t.schema_name, t.name)
    table = now.table
    if table.columns != t.columns:  # the outputs are in the layout they were planned in
        raise CommitConflict(
            f"rewriteColumnType {t.qualified_name}: its columns changed after snapshot {work.base}; "
            "nothing was committed"
        )
    live = {f.data_file_id: f for f in table.data_files if f.end_snapshot is None}
    deletes = {d.data_file_id: d.delete_file_id for d in table.delete_files if d.end_snapshot is None}
    for file_id, (delete_file, inlined_deletions) in work.sources.items():
        if file_id not in live or (deletes.get(file_id), len(now.inlined_deletions.get(file_id, ()))) != (
            delete_file,
            inlined_deletions,
        ):
            raise CommitConflict(
                f"rewriteColumnType {t.qualified_name}: rows it rewrote were deleted or updated after snapshot "
                f"{work.base}; nothing was committed"
            )
    inlined = read_inlined_data(catalog, table, now.base)
    for rows in inlined.batches:
        live_ids = {r[0] for r in rows.rows if r[2] is None}
        if work.inlined.get(rows.table_name, set()) - live_ids:
            raise CommitConflict(
                f"rewriteColumnType {t.qualified_name}: inlined rows it rewrote were deleted after snapshot "
                f"{work.base}; nothing was committed"
            )
    added = [f for i, f in live.items() if i not in work.sources]
    new_rows = any(
        r[2] is None and r[0] not in work.inlined.get(b.table_name, set()) for b in inlined.batches for r in b.rows
    )
    work.inputs = now
    if added or new_rows:
        work.rounds += 1
        rewrite(file_groups(table, added, target, keep_partitions=work.keep_partitions), inlined.batches)


def _change(work: Work, defaults: dict[int, tuple[str | None, str]], paths: TablePaths) -> RetypeColumns:
    t, plan = work.table, work.plan
    sources = tuple(sorted(work.sources))
    outputs = tuple(
        data_file_row(
            paths.relative(o.task.output),
            o.written,
            partition_id=g.partition_id if g is not None else None,
            partition_values=g.partition_values if g is not None else (),
            row_id_start=o.row_id_start,
        )
        for g, o in work.outputs
        if o.written is not None
    )
    return RetypeColumns(
        t.table_id,
        t.qualified_name,
        work.base,
        tuple(
            ColumnRetype(r.column.column_id, r.path, r.column.type_name, r.new_type.name, defaults[r.column.column_id])
            for r in plan.columns
        ),
        PlannedInputs(
            sources,
            tuple((i, d) for i in sources if (d := work.sources[i][0]) is not None),
            tuple((i, n) for i in sources if (n := work.sources[i][1])),
        ),
        tuple((name, len(ids)) for name, ids in sorted(work.inlined.items())),
        outputs,
    )


def _nulled(work: Work) -> dict[tuple[str, ...], int]:
    """Values that became NULL (onCastError: null), by column path."""
    if work.on_cast_error != "null":
        return {}
    return {r.path: sum(o.failed[i] for _, o in work.outputs) for i, r in enumerate(work.plan.columns)}


def _written(work: Work) -> dict[str, Any]:
    nulled = _nulled(work)
    return {
        **written_counts(o.written for _, o in work.outputs if o.written),
        "inlinedRowsRewritten": sum(len(ids) for ids in work.inlined.values()),
        "valuesNulled": sum(nulled.values()),
        **({"valuesNulledByColumn": {".".join(p): n for p, n in nulled.items()}} if len(nulled) > 1 else {}),
        "catchUpRounds": work.rounds,
    }


def run_rewrite_column_type(job: JobContext, args: RewriteColumnTypeArgs) -> dict[str, Any]:
    return rewrite_column_type(
        job.catalog,
        job.table_schema,
        job.table_name,
        column=args.column,
        new_type=args.new_type,
        columns=args.columns,
        on_cast_error=args.on_cast_error,
        manifest=args.manifest,
        dry_run=args.dry_run,
        author=job.author,
        runner=job.runner,
        run=job.run,
    )


PLUGIN = OperationPlugin(REWRITE_COLUMN_TYPE, run_rewrite_column_type)
