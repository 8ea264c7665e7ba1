"""The writer of ``AppendFiles`` (the ingest job's commit): the rows DuckDB 1.5.5 writes for an
INSERT of Parquet files (docs/ducklake-format.md §4.3-§4.5: each file with ``row_id_start``
from ``next_row_id``, no lineage columns, its statistics; the table's statistics grown; token
``inserted_into_table``). In the same snapshot as the ``AddColumn`` changes before it, as
DuckDB commits an ``ALTER TABLE ... ADD COLUMN`` and an ``INSERT`` of one transaction
(``inserted_into_table`` and ``altered_table``, one schema version).

Checked inside the transaction: the table's columns, as this commit leaves them, are those
the files were written for, and its partition spec the one they were laid out by (a
concurrent ALTER also conflicts by DuckDB's rules, §2.5); no snapshot since the job's base
ingested one of its files, unless the job was told to ingest them again. The files are noted
in the ingest ledger (``ingested``) in the same transaction."""

from __future__ import annotations

import itertools
from dataclasses import replace

from ..errors import CommitConflict, DuckLakeError
from ..model.file_changes import AppendFiles
from .changes_made import Change as Token
from .files import add_data_files, check_partitioning, table_directory_now
from .ingested import ingested_by_snapshot, record_ingested
from .table_stats import add_inserted_files
from .write_context import CommitContext, live_columns


class AlreadyIngested(DuckLakeError):
    """A file was ingested into the table before (the ingest ledger says so); nothing was
    committed."""

    cleanable = True


def _append_files(change: AppendFiles, ctx: CommitContext) -> None:
    job = f"ingest into {change.table_name}"
    table_directory_now(ctx, change.table_id)  # refuses a dropped table
    columns = live_columns(ctx, change.table_id)
    now = tuple(sorted((r["column_id"], r["parent_column"], r["column_name"], r["column_type"]) for r in columns))
    if now != tuple(sorted(change.layout)):
        raise CommitConflict(
            f"{job}: its columns changed after snapshot {change.base_snapshot} (the files were written for "
            "the columns then); nothing was committed"
        )
    check_partitioning(ctx, change.table_id, job, change.base_snapshot, change.partition_id)
    if not change.reingest and change.sources:
        since = ingested_by_snapshot(ctx.conn, change.table_id, change.sources, change.base_snapshot)
        again = sorted((f.path, s) for f in change.sources if (s := since.get(f)) is not None)
        if again:
            path, snapshot = again[0]
            raise AlreadyIngested(
                f"{job}: {path} was ingested by snapshot {snapshot}, committed while this job ran; nothing was "
                "committed (reingest: true ingests it again)"
            )
    if not change.outputs:
        return
    types = {r["column_id"]: r["column_type"] for r in columns}
    row_id = add_inserted_files(ctx, change.table_id, types, change.outputs)
    starts = itertools.accumulate((o.record_count for o in change.outputs[:-1]), initial=row_id)
    add_data_files(
        ctx, change.table_id, [replace(o, row_id_start=s) for o, s in zip(change.outputs, starts, strict=True)]
    )
    record_ingested(ctx.conn, change.table_id, ctx.snapshot_id, change.sources)
    ctx.needs_snapshot = True
    ctx.tokens.append(Token("inserted_into_table", id=change.table_id))


# registered on ``writers.write_change``
WRITERS = (_append_files,)
