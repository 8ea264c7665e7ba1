"""rewriteDeletes: rewrite files whose deleted fraction reached the threshold, as DuckDB's
``ducklake_rewrite_data_files`` does (memo §5.2).

plan (pure, ``maintenance.delete_rewrite``) -> one ``RewriteTask`` per group (live rows
only, row ids embedded, latest sort order) -> commit one snapshot ``rewrite_delete:<table>``:
sources and their delete files are ended (not scheduled: time travel still reads them until
expiry), outputs begin at the commit snapshot, and table stats are recomputed exactly once
the table has no deletes left. The commit refuses if an input was ended, or got a new
delete (file or inlined) since the base snapshot: the rewrite would resurrect those rows.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from ducklake_operator import storage
from ducklake_operator.catalog import Catalog
from ducklake_operator.catalog.changes_made import Change as Token
from ducklake_operator.catalog.files import (
    NewDataFile,
    add_data_file,
    inlined_file_deletions,
    inputs_changed,
    live_delete_files,
    live_inputs,
)
from ducklake_operator.catalog.tables import T
from ducklake_operator.catalog.write import CommitContext
from ducklake_operator.maintenance.delete_rewrite import DEFAULT_DELETE_THRESHOLD, RewriteGroup, plan_delete_rewrite
from ducklake_operator.model.state import TableState

from .file_rewrite import RewriteOutput, RewriteTask, rewrite_files, source_file
from .inputs import read_inputs
from .lake_paths import TablePaths, new_file_beside, option, options_in_force, sort_sql, table_paths
from .parquet_writer import copy_options
from .runtime import Report, Runner, fault_point, produce_and_commit, run_in_process


def rewrite_deletes(
    catalog: Catalog,
    schema: str,
    table: str,
    *,
    delete_threshold: float | None = None,
    author: str = "ducklake-operator",
    dry_run: bool = False,
    runner: Runner = run_in_process,
) -> dict[str, Any]:
    inputs = read_inputs(catalog, schema, table)
    state, t, base, inlined = inputs.state, inputs.table, inputs.base, inputs.inlined_deletions
    if delete_threshold is None:
        configured = option(state, t, "rewrite_delete_threshold")
        delete_threshold = float(configured) if configured else DEFAULT_DELETE_THRESHOLD
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
        return report.done(
            filesWritten=0, committedSnapshot=None, **({"plan": plan.to_json()["groups"]} if dry_run else {})
        )
    paths = table_paths(state, t)
    files = {f.data_file_id: f for f in t.data_files}
    delete_files = {d.delete_file_id: d for d in t.delete_files}
    parquet, order_by = copy_options(options_in_force(state, t)), sort_sql(t)
    layouts = inputs.layouts(catalog, (g.schema_version for g in plan.groups))
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
                output=paths.full(new_file_beside(first.path, first.path_is_relative), True),
                columns=layouts[g.schema_version],
                keep_snapshot_ids=False,
                embed_row_ids=True,
                order_by=order_by,
                options=parquet,
                s3=storage.s3_config(paths.directory),
            )
        )
    outputs, commit = produce_and_commit(
        lambda: [task.output for task in tasks],
        lambda: runner(rewrite_files, tasks),
        lambda outs: catalog.commit(
            [],
            author=author,
            base_snapshot=base,
            message=f"rewriteDeletes {schema}.{table}: {plan.input_files} files",
            extra_writer=lambda ctx: _write_commit(ctx, t, plan.groups, outs, paths, inlined, base),
        ),
    )
    written = [o.written for o in outputs if o.written]
    return report.done(
        filesWritten=len(written),
        bytesWritten=sum(w.file_size_bytes for w in written),
        rowsWritten=sum(w.record_count for w in written),
        committedSnapshot=commit.snapshot_id,
    )


def _write_commit(
    ctx: CommitContext,
    table: TableState,
    groups: tuple[RewriteGroup, ...],
    outputs: list[RewriteOutput],
    paths: TablePaths,
    inlined: dict[int, list[tuple[int, int]]],
    base: int,
) -> None:
    df, dl = T["ducklake_data_file"], T["ducklake_delete_file"]
    sources = [i for g in groups for i in g.files]
    planned_deletes = {i: d for g in groups for i, d in zip(g.files, g.delete_files, strict=False) if d is not None}
    now_inlined = inlined_file_deletions(ctx.conn, ctx.pg_schema, table.table_id, sources)
    if (
        live_inputs(ctx, sources) != set(sources)
        or live_delete_files(ctx, sources) != planned_deletes
        or {k: len(v) for k, v in now_inlined.items()} != {k: len(inlined[k]) for k in sources if k in inlined}
    ):
        raise inputs_changed(ctx, table.table_id, f"rewriteDeletes of {table.qualified_name}", base)
    for g, out in zip(groups, outputs, strict=False):
        if out.written is None:
            continue  # every row of the group was deleted
        add_data_file(
            ctx,
            NewDataFile(
                table_id=table.table_id,
                path=out.task.output[len(paths.directory) :],
                record_count=out.written.record_count,
                file_size_bytes=out.written.file_size_bytes,
                footer_size=out.written.footer_size,
                begin_snapshot=ctx.snapshot_id,
                row_id_start=None,
                partial_max=None,
                partition_id=g.partition_id,
                partition_values=g.partition_values,
                column_stats=out.written.column_stats,
            ),
        )
    ctx.end_live(df, df.c.data_file_id.in_(sources))
    ctx.end_live(dl, dl.c.data_file_id.in_(sources))
    ctx.needs_snapshot = True
    ctx.tokens.append(Token("rewrite_delete", id=table.table_id))
    _recompute_stats_if_delete_free(ctx, table, sources, [o.written for o in outputs if o.written])
    fault_point("in_commit")


def _recompute_stats_if_delete_free(
    ctx: CommitContext, table: TableState, sources: list[int], written: list[Any]
) -> None:
    """DuckDB's RecomputeGlobalStatsAfterRewrite: once the table has no live delete file and
    no inlined file deletion left (those of ended files count, as in DuckDB 1.5.5), its gross
    counters become exact: rows in live files and live inlined rows, bytes of live files."""
    df, dl = T["ducklake_data_file"], T["ducklake_delete_file"]
    remaining = set(
        ctx.conn.execute(
            sa.select(df.c.data_file_id).where(df.c.table_id == table.table_id, df.c.end_snapshot.is_(None))
        ).scalars()
    ) - set(sources)
    if (
        remaining
        and ctx.conn.execute(
            sa.select(sa.func.count())
            .select_from(dl)
            .where(dl.c.data_file_id.in_(remaining), dl.c.end_snapshot.is_(None))
        ).scalar()
    ) or inlined_file_deletions(ctx.conn, ctx.pg_schema, table.table_id):
        return
    rows, size = (
        ctx.conn.execute(
            sa.select(
                sa.func.coalesce(sa.func.sum(df.c.record_count), 0),
                sa.func.coalesce(sa.func.sum(df.c.file_size_bytes), 0),
            ).where(df.c.data_file_id.in_(remaining))
        ).one()
        if remaining
        else (0, 0)
    )
    for inlined in table.inlined_tables:
        t = sa.Table(inlined.name, sa.MetaData(), sa.Column("end_snapshot", sa.BigInteger), schema=ctx.pg_schema)
        rows += (
            ctx.conn.execute(sa.select(sa.func.count()).select_from(t).where(t.c.end_snapshot.is_(None))).scalar() or 0
        )
    ts = T["ducklake_table_stats"]
    ctx.emit(
        ts.update()
        .where(ts.c.table_id == table.table_id)
        .values(
            record_count=int(rows) + sum(w.record_count for w in written),
            file_size_bytes=int(size) + sum(w.file_size_bytes for w in written),
        )
    )
