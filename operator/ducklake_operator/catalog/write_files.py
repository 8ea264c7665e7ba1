"""Writers for the file changes of maintenance jobs (``model.file_changes``), one per kind,
registered on ``writers.write_change`` like the schema change writers: each checks the job's
inputs against the catalog as it is now (inside the commit transaction), then buffers the
rows DuckDB 1.5.5 writes for the same operation, and its change token."""

from __future__ import annotations

import sqlalchemy as sa

from ..model.file_changes import FlushInlinedDeletions, FlushInlinedRows, MergeFiles, RepartitionFiles, RewriteFiles
from .changes_made import Change as Token
from .files import (
    add_data_files,
    add_delete_file,
    check_inputs,
    check_partitioning,
    inputs_changed,
    remove_data_files,
    remove_inlined_file_deletions,
    schedule_deletion,
    table_directory_now,
)
from .inlined import inlined_table
from .table_stats import add_file_sizes, recompute_if_delete_free, widen_table_stats
from .tables import CATALOG_TABLES
from .write_context import CommitContext


def _merge_files(change: MergeFiles, ctx: CommitContext) -> None:
    _merge(change, f"compaction of {change.table_name}", ctx)


def _repartition_files(change: RepartitionFiles, ctx: CommitContext) -> None:
    job = f"repartition of {change.table_name}"
    check_partitioning(ctx, change.table_id, job, change.base_snapshot, change.spec_id)
    _merge(change, job, ctx)


def _merge(change: MergeFiles | RepartitionFiles, job: str, ctx: CommitContext) -> None:
    """WriteMergeAdjacent: the inputs' rows are deleted, not ended, and their files scheduled."""
    check_inputs(ctx, change.table_id, job, change.base_snapshot, change.inputs)
    add_data_files(ctx, change.table_id, change.outputs)
    sources = list(change.inputs.data_files)
    directory = table_directory_now(ctx, change.table_id)
    schedule_deletion(ctx, directory, CATALOG_TABLES["ducklake_data_file"], sources)
    schedule_deletion(
        ctx, directory, CATALOG_TABLES["ducklake_delete_file"], [d for _, d in change.inputs.delete_files]
    )
    remove_data_files(ctx, sources)
    inlined = [file_id for file_id, _ in change.inputs.inlined_deletions or ()]
    if inlined:
        remove_inlined_file_deletions(ctx, change.table_id, inlined, change.base_snapshot)
    ctx.needs_snapshot = True
    ctx.tokens.append(Token("merge_adjacent", id=change.table_id))


def _rewrite_files(change: RewriteFiles, ctx: CommitContext) -> None:
    """The inputs and their delete files end (not scheduled: time travel still reads them)."""
    check_inputs(ctx, change.table_id, f"rewriteDeletes of {change.table_name}", change.base_snapshot, change.inputs)
    add_data_files(ctx, change.table_id, change.outputs)
    sources = list(change.inputs.data_files)
    df, dl = CATALOG_TABLES["ducklake_data_file"], CATALOG_TABLES["ducklake_delete_file"]
    ctx.end_live(df, df.c.data_file_id.in_(sources))
    ctx.end_live(dl, dl.c.data_file_id.in_(sources))
    ctx.needs_snapshot = True
    ctx.tokens.append(Token("rewrite_delete", id=change.table_id))
    recompute_if_delete_free(ctx, change.table_id, sources, change.outputs)


def _flush_inlined_rows(change: FlushInlinedRows, ctx: CommitContext) -> None:
    """Refused if a flushed row was deleted (or the rows changed) after the base snapshot.
    Superseded inlined tables left empty are kept (DuckDB 1.5.5's flush drops them): a
    DuckDB client caches a schema version's inlined tables, so one already open would fail
    reading the dropped table at that version; an empty table costs nothing to read."""
    base = change.base_snapshot
    for name, count, deleted in change.flushed:
        it = inlined_table(ctx.pg_schema, name)
        now = ctx.conn.execute(
            sa.select(sa.func.count(), sa.func.count(it.c.end_snapshot)).where(it.c.begin_snapshot <= base)
        ).one()
        if tuple(now) != (count, deleted):
            raise inputs_changed(ctx, change.table_id, f"flushInlinedData of {change.table_name} ({name})", base)
    add_data_files(ctx, change.table_id, change.outputs)
    for name, _, _ in change.flushed:
        it = inlined_table(ctx.pg_schema, name)
        ctx.emit(it.delete().where(it.c.begin_snapshot <= base))
    if change.outputs:
        widen_table_stats(ctx, change.table_id, dict(change.column_types), [f.column_stats for f in change.outputs])
        add_file_sizes(ctx, change.table_id, change.outputs)
        ctx.tokens.append(Token("inline_flush", id=change.table_id))
    ctx.needs_snapshot = True


def _flush_inlined_deletions(change: FlushInlinedDeletions, ctx: CommitContext) -> None:
    """Each new delete file replaces its data file's old one: the old row is deleted and its
    file scheduled; the inlined deletions it took in go."""
    check_inputs(ctx, change.table_id, f"flushInlinedData of {change.table_name}", change.base_snapshot, change.inputs)
    old = dict(change.inputs.delete_files)
    dl = CATALOG_TABLES["ducklake_delete_file"]
    directory = table_directory_now(ctx, change.table_id)
    replaced = [old[data_file_id] for data_file_id, _ in change.delete_files if data_file_id in old]
    schedule_deletion(ctx, directory, dl, replaced)
    for data_file_id, delete_file in change.delete_files:
        add_delete_file(ctx, change.table_id, data_file_id, delete_file)
    if replaced:
        ctx.emit(dl.delete().where(dl.c.delete_file_id.in_(replaced)))
    remove_inlined_file_deletions(
        ctx, change.table_id, [data_file_id for data_file_id, _ in change.delete_files], change.base_snapshot
    )
    ctx.needs_snapshot = True
    ctx.tokens.append(Token("deleted_from_table", id=change.table_id))


# registered on ``writers.write_change``
WRITERS = (_merge_files, _repartition_files, _rewrite_files, _flush_inlined_rows, _flush_inlined_deletions)
