"""compact: merge small files as DuckDB's ``ducklake_merge_adjacent_files`` does.

plan (pure, ``maintenance.compaction``) -> one ``RewriteTask`` per file group, run
in-process or as Spark tasks -> commit one snapshot ``merge_adjacent:<table>`` -> JSON
report. The commit refuses concurrent work by DuckDB's rules (a delete on the table,
another compaction, a drop) and re-checks every input is still live and delete-free
(DuckDB's own merge would lose a concurrent inlined delete here); on any failure known not
to have committed, the output files are deleted.

Output rows carry ``_ducklake_internal_snapshot_id`` (each row's original begin snapshot)
and, when the inputs are not contiguous in row-id space or the table has a sort key,
``_ducklake_internal_row_id``, so time travel and row ids survive. (DuckDB 1.5.5 sorts a
merge of contiguous files without embedding row ids, which renumbers the rows; we keep
them.) Rows are written in the table's latest sort order, as DuckDB does, unless the job
says ``sort: false``.
"""

from __future__ import annotations

from typing import Any

from ducklake_operator import storage
from ducklake_operator.catalog import Catalog
from ducklake_operator.catalog.commit import DEFAULT_AUTHOR
from ducklake_operator.catalog.job_inputs import TableInputs, read_layouts
from ducklake_operator.maintenance.compaction import CompactionOptions, FileGroup, plan_compaction
from ducklake_operator.model.file_changes import MergeFiles
from ducklake_operator.model.job_params import COMPACT, CompactArgs
from ducklake_operator.model.maintenance_params import DRY_RUN, SORT, TARGET_FILE_SIZE
from ducklake_operator.model.state import TableState

from .file_rewrite import RewriteOutput, RewriteTask, rewrite_files, source_file
from .inputs import planned_inputs, read_inputs
from .job_steps import Report, write_and_commit
from .lake_paths import TablePaths, new_file_beside, option, options_in_force, sort_sql, table_paths
from .operation_plugin import JobContext, OperationPlugin
from .parquet_writer import copy_options
from .run_context import PLAIN_RUN, JobRun
from .task_runners import Runner, run_in_process
from .written_files import data_file_row, kept_deletes_row, written_counts


def compaction_options(state: Any, table: TableState, **overrides: Any) -> CompactionOptions:
    """The job's options; the target size when not given from the table's option in force."""
    values = {k: v for k, v in overrides.items() if v is not None}
    target = TARGET_FILE_SIZE.resolve(values.pop("target_file_size", None), lambda key: option(state, table, key))
    return CompactionOptions(target_file_size=target, **values)


def compact(
    catalog: Catalog,
    schema: str,
    table: str,
    options: CompactionOptions | None = None,
    *,
    author: str = DEFAULT_AUTHOR,
    dry_run: bool = DRY_RUN.default,
    runner: Runner = run_in_process,
    sort: bool = SORT.default,
    run: JobRun = PLAIN_RUN,
    **overrides: Any,
) -> dict[str, Any]:
    """``overrides``: target_file_size, small_file_threshold, min_input_files, max_groups,
    apply_deletes. ``sort=False`` merges in row-id order even when the table has a sort key."""
    inputs = read_inputs(catalog, schema, table)
    state, t, base, inlined_deletes = inputs.state, inputs.table, inputs.base, inputs.inlined_deletions
    plan = plan_compaction(
        t,
        base,
        inputs.schema_versions,
        options or compaction_options(state, t, **overrides),
        files_with_inlined_deletes=inlined_deletes,
    )
    report = Report(
        "compact",
        table=f"{schema}.{table}",
        baseSnapshot=plan.base_snapshot,
        groups=len(plan.groups),
        filesRead=plan.input_files,
        bytesRead=sum(g.input_bytes for g in plan.groups),
        rowsRead=sum(g.input_rows for g in plan.groups),
        dryRun=dry_run,
    )
    if dry_run or not plan.groups:  # a dry run shows the file groups it would write
        return report.nothing_written(**({"plan": plan.to_json()["groups"]} if dry_run else {}))
    runner = report.runner(run, runner, report.fields["bytesRead"])
    paths = table_paths(state, t)
    order_by = sort_sql(t) if sort else ""
    tasks = merge_tasks(catalog, inputs, plan.groups, paths, order_by, run.file_marker)
    return write_and_commit(
        catalog,
        run,
        report,
        runner,
        tasks,
        rewrite_files,
        planned_outputs=lambda: [task.output for task in tasks] + [task.output_deletes for task in tasks],
        change=lambda outs: merge_change(t, plan.groups, outs, paths, base, inlined_deletes),
        message=lambda outs: f"compact {schema}.{table}: {plan.input_files} files into {len(outs)}",
        written=lambda outs: written(outs, order_by),
        author=author,
        base_snapshot=plan.base_snapshot,
    )


def merge_tasks(
    catalog: Catalog,
    inputs: TableInputs,
    groups: tuple[FileGroup, ...],
    paths: TablePaths,
    order_by: str,
    marker: str,
) -> list[RewriteTask]:
    """One ``RewriteTask`` per file group: its live rows in one file beside its first file's."""
    state, t, inlined_deletes = inputs.state, inputs.table, inputs.inlined_deletions
    files = {f.data_file_id: f for f in t.data_files}
    delete_files = {d.data_file_id: d for d in t.delete_files if d.end_snapshot is None}
    parquet = copy_options(options_in_force(state, t))
    layouts = read_layouts(catalog, inputs, (g.schema_version for g in groups))
    tasks = []
    for g in groups:
        first = files[g.files[0]]
        output = new_file_beside(first.path, first.path_is_relative, marker=marker)
        tasks.append(
            RewriteTask(
                sources=tuple(
                    source_file(paths, files[i], delete_files.get(i), tuple(inlined_deletes.get(i, ())))
                    for i in g.files
                ),
                output=paths.full(output, True),
                columns=layouts[g.schema_version],
                keep_snapshot_ids=True,
                # row ids are positional only in a merge of contiguous files that keeps every row in order
                embed_row_ids=g.row_id_start is None or bool(order_by) or bool(g.with_deletes),
                order_by=order_by,
                options=parquet,
                s3=storage.s3_config(paths.directory),
                drop_deleted_until=inputs.oldest_snapshot,
                output_deletes=paths.full(output[: -len(".parquet")] + "-delete.parquet", True),
            )
        )
    return tasks


def written(outputs: list[RewriteOutput], order_by: str) -> dict[str, Any]:
    """The report's account of what the file groups wrote."""
    return {
        **written_counts(o.written for o in outputs if o.written),
        "deletedRowsDropped": sum(o.rows_read - (o.written.record_count if o.written else 0) for o in outputs),
        "deleteFilesWritten": sum(1 for o in outputs if o.delete_file),
        "sorted": all(o.sorted for o in outputs) if order_by else None,
    }


def merge_change(
    table: TableState,
    groups: tuple[FileGroup, ...],
    outputs: list[RewriteOutput],
    paths: TablePaths,
    base: int,
    inlined: dict[int, list[tuple[int, int]]],
) -> MergeFiles:
    """The merged files replace their sources, as WriteMergeAdjacent does; the commit refuses
    if any delete reached an input since the plan (a file or an inlined one), which the
    merge would lose."""
    sources = [i for g in groups for i in g.files]
    new_files = []
    for g, out in zip(groups, outputs, strict=False):
        if out.written is None:
            continue  # every row of the group was deleted before the oldest snapshot
        new_files.append(
            data_file_row(
                paths.relative(out.task.output),
                out.written,
                begin_snapshot=g.begin_snapshot,
                row_id_start=None if out.row_ids_embedded else g.row_id_start,
                partial_max=g.partial_max,
                partition_id=g.partition_id,
                partition_values=g.partition_values,
                delete_file=kept_deletes_row(paths, out.task.output_deletes, out.delete_file, out.deletes),
            )
        )
    return MergeFiles(
        table.table_id,
        table.qualified_name,
        base,
        planned_inputs(table, sources, inlined),
        tuple(new_files),
    )


def run_compact(job: JobContext, args: CompactArgs) -> dict[str, Any]:
    return compact(
        job.catalog,
        job.table_schema,
        job.table_name,
        author=job.author,
        runner=job.runner,
        run=job.run,
        target_file_size=args.target_file_size,
        small_file_threshold=args.small_file_threshold,
        min_input_files=args.min_input_files,
        max_groups=args.max_groups,
        apply_deletes=args.apply_deletes,
        sort=args.sort,
        dry_run=args.dry_run,
    )


PLUGIN = OperationPlugin(COMPACT, run_compact)
