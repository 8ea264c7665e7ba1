"""Catalog rows for data and delete files, as DuckDB 1.5.5 writes them (docs/ducklake-format.md §4), and the
check that a job's input files are still as it planned them: the building blocks of the
file change writers (``write_files``), and the reads a job plans from."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa

from ..errors import CommitConflict
from ..model.file_changes import NewDataFile, NewDeleteFile, PlannedInputs
from .changes_made import parse_changes
from .id_sets import in_ids
from .paths import relative_to_data_path, resolve, table_directory
from .read_snapshots import load_snapshots
from .tables import CATALOG_TABLES, catalog_now
from .write_context import CommitContext

# changes by another writer that can invalidate a job's input files
_FILE_CHANGES = (
    "deleted_from_table",
    "inlined_delete",
    "merge_adjacent",
    "rewrite_delete",
    "inline_flush",
    "dropped_table",
)


def inputs_changed(
    ctx: CommitContext, table_id: int, job: str, base: int, tokens: tuple[str, ...] = _FILE_CHANGES
) -> CommitConflict:
    """The error for a job whose input files changed since its base snapshot, naming the
    snapshot that changed them (DuckDB's compaction names the conflicting snapshot too);
    ``tokens``: the changes that can have done it."""
    for s in load_snapshots(ctx.conn, after=base):
        for change in parse_changes(s.changes_made):
            if change.token in tokens and change.id == table_id:
                return CommitConflict(
                    f"{job}: snapshot {s.snapshot_id} ({change.render()}) changed its input files after "
                    f"snapshot {base}; nothing was committed",
                    snapshot_id=s.snapshot_id,
                )
    return CommitConflict(f"{job}: its input files changed after snapshot {base}; nothing was committed")


def check_inputs(ctx: CommitContext, table_id: int, job: str, base: int, inputs: PlannedInputs) -> None:
    """Refuse when an input file ended or was removed, got another delete file, or (unless
    ``inputs.inlined_deletions`` is None) another inlined deletion since the base snapshot:
    the job's output would resurrect those rows. (DuckDB's conflict rules let a small
    inlined delete and its own merge both commit.)"""
    ids = list(inputs.data_files)
    changed = live_inputs(ctx, ids) != set(ids) or live_delete_files(ctx, ids) != dict(inputs.delete_files)
    if not changed and inputs.inlined_deletions is not None:
        now = inlined_file_deletions(ctx.conn, ctx.pg_schema, table_id, ids)
        changed = {k: len(v) for k, v in now.items()} != dict(inputs.inlined_deletions)
    if changed:
        raise inputs_changed(ctx, table_id, job, base)


def check_partitioning(ctx: CommitContext, table_id: int, job: str, base: int, spec_id: int | None) -> None:
    """Refuse when the table's partitioning is no longer the spec the job's files were laid
    out by (``spec_id``; None: unpartitioned)."""
    pi = CATALOG_TABLES["ducklake_partition_info"]
    now = ctx.conn.execute(
        sa.select(pi.c.partition_id).where(pi.c.table_id == table_id, pi.c.end_snapshot.is_(None))
    ).scalar_one_or_none()
    if now != spec_id:
        raise CommitConflict(f"{job}: its partitioning changed after snapshot {base}; nothing was committed")


def add_data_files(ctx: CommitContext, table_id: int, files: Sequence[NewDataFile]) -> list[int]:
    """Insert new data files with their statistics, partition values and delete files, an
    executemany per catalog table rather than a statement per file; their ids, in order."""
    data_rows, stats_rows, value_rows, delete_rows, ids = [], [], [], [], []
    for f in files:
        file_id = ctx.next_file_id
        ctx.next_file_id += 1
        ids.append(file_id)
        data_rows.append(
            dict(
                data_file_id=file_id, table_id=table_id, end_snapshot=None, file_order=None, path=f.path,
                begin_snapshot=ctx.snapshot_id if f.begin_snapshot is None else f.begin_snapshot,
                path_is_relative=True, file_format="parquet", record_count=f.record_count,
                file_size_bytes=f.file_size_bytes, footer_size=f.footer_size, row_id_start=f.row_id_start,
                partition_id=f.partition_id, encryption_key=None, mapping_id=None, partial_max=f.partial_max,
            )
        )  # fmt: skip
        stats_rows += [
            dict(data_file_id=file_id, table_id=table_id, column_id=s.column_id, column_size_bytes=s.column_size_bytes,
                 value_count=s.value_count, null_count=s.null_count, min_value=s.min_value, max_value=s.max_value,
                 contains_nan=s.contains_nan, extra_stats=None)
            for s in f.column_stats
        ]  # fmt: skip
        value_rows += [
            dict(data_file_id=file_id, table_id=table_id, partition_key_index=k, partition_value=v)
            for k, v in f.partition_values
        ]
        if f.delete_file is not None:
            delete_rows.append(_delete_file_row(ctx, table_id, file_id, f.delete_file))
    ctx.emit_rows(CATALOG_TABLES["ducklake_data_file"], data_rows)
    ctx.emit_rows(CATALOG_TABLES["ducklake_file_column_stats"], stats_rows)
    ctx.emit_rows(CATALOG_TABLES["ducklake_file_partition_value"], value_rows)
    ctx.emit_rows(CATALOG_TABLES["ducklake_delete_file"], delete_rows)
    return ids


def add_delete_file(ctx: CommitContext, table_id: int, data_file_id: int, f: NewDeleteFile) -> int:
    row = _delete_file_row(ctx, table_id, data_file_id, f)
    ctx.emit(CATALOG_TABLES["ducklake_delete_file"].insert().values(row))
    return int(row["delete_file_id"])


def _delete_file_row(ctx: CommitContext, table_id: int, data_file_id: int, f: NewDeleteFile) -> dict[str, Any]:
    file_id = ctx.next_file_id
    ctx.next_file_id += 1
    return dict(
        delete_file_id=file_id, table_id=table_id, begin_snapshot=f.begin_snapshot, end_snapshot=None,
        data_file_id=data_file_id, path=f.path, path_is_relative=True, format="parquet", delete_count=f.delete_count,
        file_size_bytes=f.file_size_bytes, footer_size=f.footer_size, encryption_key=None, partial_max=f.partial_max,
    )  # fmt: skip


def table_directory_now(ctx: CommitContext, table_id: int) -> str:
    """The live table's directory, from its row and its schema's."""
    tb, sc = CATALOG_TABLES["ducklake_table"], CATALOG_TABLES["ducklake_schema"]
    row = ctx.conn.execute(
        sa.select(tb.c.path, tb.c.path_is_relative, sc.c.path.label("schema_path"), sc.c.path_is_relative.label("sr"))
        .select_from(tb.outerjoin(sc, sa.and_(sc.c.schema_id == tb.c.schema_id, sc.c.end_snapshot.is_(None))))
        .where(tb.c.table_id == table_id, tb.c.end_snapshot.is_(None))
    ).one_or_none()
    if row is None:
        raise CommitConflict(f"table {table_id} was dropped by a concurrent commit; nothing was committed")
    return table_directory(ctx.data_path, row.schema_path, row.sr, row.path, row.path_is_relative)


def schedule_deletion(ctx: CommitContext, directory: str, table: sa.Table, ids: Sequence[int]) -> None:
    """Schedule the files of these rows of ``table`` (data or delete files of the table in
    ``directory``) for deletion, with their paths as DuckDB stores them there."""
    if not ids:
        return
    id_column = table.c.data_file_id if table.name == "ducklake_data_file" else table.c.delete_file_id
    rows = ctx.conn.execute(sa.select(id_column, table.c.path, table.c.path_is_relative).where(in_ids(id_column, ids)))
    paths = {r[0]: resolve(directory, r.path, r.path_is_relative) for r in rows}
    data_path, scheduled = ctx.data_path, []
    for file_id in ids:
        path, is_relative = relative_to_data_path(data_path, paths[file_id])
        scheduled.append(dict(data_file_id=file_id, path=path, path_is_relative=is_relative))
    ctx.emit_rows(
        CATALOG_TABLES["ducklake_files_scheduled_for_deletion"], scheduled, schedule_start=catalog_now(ctx.dialect)
    )


def remove_data_files(ctx: CommitContext, data_file_ids: Iterable[int]) -> None:
    """Delete the rows of replaced data files (a merge keeps history in the merged file)."""
    ids = list(data_file_ids)
    for name in (
        "ducklake_data_file",
        "ducklake_file_column_stats",
        "ducklake_file_partition_value",
        "ducklake_file_variant_stats",
        "ducklake_delete_file",
    ):
        t = CATALOG_TABLES[name]
        ctx.emit(t.delete().where(in_ids(t.c.data_file_id, ids)))


def live_inputs(ctx: CommitContext, data_file_ids: Sequence[int]) -> set[int]:
    """Which of these data files are still live (not ended, not removed)."""
    df = CATALOG_TABLES["ducklake_data_file"]
    return set(
        ctx.conn.execute(
            sa.select(df.c.data_file_id).where(in_ids(df.c.data_file_id, data_file_ids), df.c.end_snapshot.is_(None))
        ).scalars()
    )


def live_delete_files(ctx: CommitContext, data_file_ids: Sequence[int]) -> dict[int, int]:
    """data file id -> its live delete file id, for these data files."""
    dl = CATALOG_TABLES["ducklake_delete_file"]
    return {
        r.data_file_id: r.delete_file_id
        for r in ctx.conn.execute(
            sa.select(dl.c.data_file_id, dl.c.delete_file_id).where(
                in_ids(dl.c.data_file_id, data_file_ids), dl.c.end_snapshot.is_(None)
            )
        )
    }


def inlined_file_deletions(
    conn: sa.Connection,
    pg_schema: str | None,
    table_id: int,
    data_file_ids: Sequence[int] | None = None,
    at_most: int | None = None,
) -> dict[int, list[tuple[int, int]]]:
    """data file id -> [(position, snapshot)] from ``ducklake_inlined_delete_<table>``
    (created on demand by DuckDB, so it may not exist); ``at_most``: snapshots up to it."""
    name = f"ducklake_inlined_delete_{table_id}"
    if not sa.inspect(conn).has_table(name, schema=pg_schema):
        return {}
    t = sa.Table(name, sa.MetaData(), autoload_with=conn, schema=pg_schema)
    query = sa.select(t.c.file_id, t.c.row_id, t.c.begin_snapshot)
    if data_file_ids is not None:
        query = query.where(in_ids(t.c.file_id, data_file_ids))
    if at_most is not None:
        query = query.where(t.c.begin_snapshot <= at_most)
    out: dict[int, list[tuple[int, int]]] = {}
    for r in conn.execute(query.order_by(t.c.file_id, t.c.row_id)):
        out.setdefault(r.file_id, []).append((r.row_id, r.begin_snapshot))
    return out


def remove_inlined_file_deletions(
    ctx: CommitContext, table_id: int, data_file_ids: Sequence[int], at_most: int
) -> None:
    """Delete the inlined file deletions of these data files up to a snapshot (they moved
    into a delete file, or their file is gone)."""
    t = sa.Table(
        f"ducklake_inlined_delete_{table_id}",
        sa.MetaData(),
        sa.Column("file_id", sa.BigInteger),
        sa.Column("begin_snapshot", sa.BigInteger),
        schema=ctx.pg_schema,
    )
    ctx.emit(t.delete().where(in_ids(t.c.file_id, data_file_ids), t.c.begin_snapshot <= at_most))


def oldest_snapshot(conn: sa.Connection) -> int:
    """The oldest snapshot still in the catalog: a row deleted at or before it is invisible
    at every snapshot a reader can still ask for."""
    s = CATALOG_TABLES["ducklake_snapshot"]
    return int(conn.execute(sa.select(sa.func.min(s.c.snapshot_id))).scalar() or 0)
