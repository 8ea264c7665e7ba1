"""rewriteDeletes: rewrite files whose deleted fraction reached the threshold, as DuckDB's
``ducklake_rewrite_data_files`` does (docs/ducklake-format.md §5.2).

plan (pure, ``maintenance.delete_rewrite``) -> one ``RewriteTask`` per group (live rows
only, row ids embedded, latest sort order) -> commit one snapshot ``rewrite_delete:<table>``:
sources and their delete files are ended (not scheduled: time travel still reads them until
expiry), outputs begin at the commit snapshot, and table stats are recomputed exactly once
the table has no deletes left. The commit refuses if an input was ended, or got a new
delete (file or inlined) since the base snapshot: the rewrite would resurrect those rows.
"""

from __future__ import annotations

from typing import Any

from ducklake_operator import storage
from ducklake_operator.catalog import Catalog
from ducklake_operator.catalog.commit import DEFAULT_AUTHOR
from ducklake_operator.catalog.job_inputs import read_layouts
from ducklake_operator.maintenance.delete_rewrite import RewriteGroup, plan_delete_rewrite
from ducklake_operator.model.file_changes import RewriteFiles
from ducklake_operator.model.job_params import REWRITE_DELETES, RewriteDeletesArgs
from ducklake_operator.model.maintenance_params import DELETE_THRESHOLD, DRY_RUN
from ducklake_operator.model.state import TableState

from .file_rewrite import RewriteOutput, RewriteTask, rewrite_files, source_file
from .inputs import planned_inputs, read_inputs
from .job_steps import Report, write_and_commit
from .lake_paths import TablePaths, new_file_beside, option, options_in_force, sort_sql, table_paths
from .operation_plugin import JobContext, OperationPlugin
from .parquet_writer import copy_options
from .run_context import PLAIN_RUN, JobRun
from .task_runners import Runner, run_in_process
from .written_files import data_file_row, written_counts


def rewrite_deletes(
    catalog: Catalog,
    schema: str,
    table: str,
    *,
    delete_threshold: float | None = None,
    author: str = DEFAULT_AUTHOR,
    dry_run: bool = DRY_RUN.default,
    runner: Runner = run_in_process,
    run: JobRun = PLAIN_RUN,
) -> dict[str, Any]:
    inputs = read_inputs(catalog, schema, table)
    state, t, base, inlined = inputs.state, inputs.table, inputs.base, inputs.inlined_deletions
    delete_threshold = DELETE_THRESHOLD.resolve(delete_threshold, lambda key: option(state, t, key))
    plan = plan_delete_rewrite(
        t, base, inputs.schema_versions, delete_threshold, inlined_deletions={k: len(v) for k, v in inlined.items()}
    )
    report = Report(
        "rewriteDeletes",
        table=f"{schema}.{table}",
        baseSnapshot=base,
        deleteThreshold=delete_threshold,
        groups=len(plan.groups),
        filesRead=plan.input_files,
        bytesRead=sum(g.input_bytes for g in plan.groups),
        rowsRead=sum(g.input_rows for g in plan.groups),
        rowsDropped=sum(g.deleted_rows for g in plan.groups),
        dryRun=dry_run,
    )
    if dry_run or not plan.groups:  # a dry run shows the file groups it would write
        return report.nothing_written(**({"plan": plan.to_json()["groups"]} if dry_run else {}))
    runner = report.runner(run, runner, report.fields["bytesRead"])
    paths = table_paths(state, t)
    files = {f.data_file_id: f for f in t.data_files}
    delete_files = {d.delete_file_id: d for d in t.delete_files}
    parquet, order_by = copy_options(options_in_force(state, t)), sort_sql(t)
    layouts = read_layouts(catalog, inputs, (g.schema_version for g in plan.groups))
    tasks = []
    for g in plan.groups:
        first = files[g.files[0]]
        tasks.append(
            RewriteTask(
                sources=tuple(
                    source_file(
                        paths, files[i], delete_files.get(d) if d is not None else None, tuple(inlined.get(i, ()))
                    )
                    for i, d in zip(g.files, g.delete_files, strict=False)
                ),
                output=paths.full(new_file_beside(first.path, first.path_is_relative, marker=run.file_marker), True),
                columns=layouts[g.schema_version],
                keep_snapshot_ids=False,
                embed_row_ids=True,
                order_by=order_by,
                options=parquet,
                s3=storage.s3_config(paths.directory),
            )
        )
    return write_and_commit(
        catalog,
        run,
        report,
        runner,
        tasks,
        rewrite_files,
        planned_outputs=lambda: [task.output for task in tasks],
        change=lambda outs: rewrite_change(t, plan.groups, outs, paths, inlined, base),
        message=lambda _: f"rewriteDeletes {schema}.{table}: {plan.input_files} files",
        written=written,
        author=author,
        base_snapshot=base,
    )


def written(outputs: list[RewriteOutput]) -> dict[str, Any]:
    """The report's account of what the file groups wrote."""
    return written_counts(o.written for o in outputs if o.written)


def rewrite_change(
    table: TableState,
    groups: tuple[RewriteGroup, ...],
    outputs: list[RewriteOutput],
    paths: TablePaths,
    inlined: dict[int, list[tuple[int, int]]],
    base: int,
) -> RewriteFiles:
    """The rewritten files replace their sources from the commit's snapshot on."""
    sources = [i for g in groups for i in g.files]
    new_files = tuple(
        data_file_row(
            paths.relative(out.task.output),
            out.written,
            partition_id=g.partition_id,
            partition_values=g.partition_values,
        )
        for g, out in zip(groups, outputs, strict=False)
        if out.written is not None  # None: every row of the group was deleted
    )
    return RewriteFiles(table.table_id, table.qualified_name, base, planned_inputs(table, sources, inlined), new_files)


def run_rewrite_deletes(job: JobContext, args: RewriteDeletesArgs) -> dict[str, Any]:
    return rewrite_deletes(
        job.catalog,
        job.table_schema,
        job.table_name,
        delete_threshold=args.delete_threshold,
        dry_run=args.dry_run,
        author=job.author,
        runner=job.runner,
        run=job.run,
    )


PLUGIN = OperationPlugin(REWRITE_DELETES, run_rewrite_deletes)
