"""compact: merge small files as DuckDB's ``ducklake_merge_adjacent_files`` does.

plan (pure, ``maintenance.compaction``) -> merge each file group into one Parquet file
(``merge_group``: pyarrow, field ids kept, lineage columns added) -> commit one snapshot
``merge_adjacent:<table>`` -> JSON result. The commit refuses concurrent work by DuckDB's
rules (a delete on the table, another compaction, a drop) and re-checks every input file is
still live and delete-free; on any failure known not to have committed, the output files
are deleted.

Output rows carry ``_ducklake_internal_snapshot_id`` (each row's original begin snapshot)
and, when the inputs are not contiguous in row-id space, ``_ducklake_internal_row_id``, with
DuckDB's field ids, so time travel and row ids survive. Per-column statistics of the output
are the inputs' statistics aggregated: merging changes no value, so they are exact.

The per-group merge is the unit a Spark task runs on a cluster; ``ducklake run-job`` runs
the groups in-process by default, or as Spark tasks (``runner=run_on_spark``,
``--spark``). The output keeps the
inputs' row order: writing in the table's sort order is not done yet.
"""

from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import sqlalchemy as sa
from uuid6 import uuid7

from ducklake_operator.catalog import Catalog
from ducklake_operator.catalog.changes_made import Change as Token
from ducklake_operator.catalog.read import load_schema_versions
from ducklake_operator.catalog.tables import T, catalog_now
from ducklake_operator.catalog.write import CommitContext
from ducklake_operator.errors import CommitConflict, DuckLakeError, TableNotFound
from ducklake_operator.maintenance.compaction import CompactionOptions, FileGroup, plan_compaction
from ducklake_operator.model.state import DataFile, TableState

ROW_ID = "_ducklake_internal_row_id"
SNAPSHOT_ID = "_ducklake_internal_snapshot_id"
ROW_ID_FIELD = 2147483540
SNAPSHOT_ID_FIELD = 2147483539
_NUMERIC = ("int", "uint", "decimal")


@dataclass(frozen=True)
class MergedFile:
    group: FileGroup
    path: str  # relative to the table directory
    full_path: str
    record_count: int
    file_size_bytes: int
    footer_size: int


def _field(name: str, type_: pa.DataType, field_id: int) -> pa.Field:
    return pa.field(name, type_, metadata={b"PARQUET:field_id": str(field_id).encode()})


def footer_size(path: str) -> int:
    with open(path, "rb") as fh:
        fh.seek(-8, os.SEEK_END)
        return struct.unpack("<I", fh.read(4))[0]


def merge_group(group: FileGroup, sources: list[tuple[DataFile, str]], out_dir: str) -> MergedFile:
    """Merge one group's files (absolute paths) into one Parquet file in ``out_dir``."""
    tables = []
    need_row_ids = group.row_id_start is None
    for f, path in sources:
        t = pq.read_table(path)
        n = t.num_rows
        if SNAPSHOT_ID not in t.column_names:
            t = t.append_column(_field(SNAPSHOT_ID, pa.int64(), SNAPSHOT_ID_FIELD), pa.array([f.begin_snapshot] * n, pa.int64()))
        if need_row_ids and ROW_ID not in t.column_names:
            start = f.row_id_start or 0
            t = t.append_column(_field(ROW_ID, pa.int64(), ROW_ID_FIELD), pa.array(range(start, start + n), pa.int64()))
        if not need_row_ids and ROW_ID in t.column_names:
            t = t.drop_columns([ROW_ID])
        tables.append(t)
    columns = [c for c in tables[0].column_names if c not in (ROW_ID, SNAPSHOT_ID)]
    order = columns + ([ROW_ID] if need_row_ids else []) + [SNAPSHOT_ID]
    merged = pa.concat_tables([t.select(order) for t in tables], promote_options="none")
    name = f"ducklake-{uuid7()}.parquet"
    rel_dir = os.path.relpath(os.path.dirname(sources[0][1]), out_dir)  # same hive directory as the inputs
    rel = name if rel_dir == "." else f"{rel_dir}/{name}"
    full = os.path.join(out_dir, rel)
    pq.write_table(merged, full, compression="snappy", row_group_size=122_880)
    return MergedFile(group, rel, full, merged.num_rows, os.path.getsize(full), footer_size(full))


Work = tuple  # (FileGroup, [(DataFile, absolute path)], table directory)


def _fault_point(name: str) -> None:
    """Test seam: with DUCKLAKE_FAULT_PAUSE=<name>, announce the point in DUCKLAKE_FAULT_MARKER
    and hang, so a test can SIGKILL the job exactly here. Inert otherwise."""
    if os.environ.get("DUCKLAKE_FAULT_PAUSE") == name:
        with open(os.environ["DUCKLAKE_FAULT_MARKER"], "w") as fh:
            fh.write(name)
        time.sleep(600)


def run_in_process(work: list[Work]) -> list[MergedFile]:
    return [merge_group(*w) for w in work]


def run_on_spark(work: list[Work]) -> list[MergedFile]:
    """One Spark task per file group; each task reads and writes its files with pyarrow
    (exact control of field ids and hidden columns, and no Hadoop S3 jars needed)."""
    from .session import spark_session

    sc = spark_session().sparkContext
    return sc.parallelize(work, max(1, len(work))).map(lambda w: merge_group(*w)).collect()


def _stat_key(type_name: str, text: str) -> Any:
    if type_name.startswith(_NUMERIC):
        try:
            return Decimal(text)
        except InvalidOperation:
            return text
    if type_name.startswith("float"):
        return float(text)
    return text


def aggregate_stats(rows: list[Any], type_names: dict[int, str], data_file_id: int, table_id: int,
                    sizes: dict[int, int]) -> list[dict[str, Any]]:
    """Output statistics per column = the inputs' statistics combined (values are unchanged)."""
    by_column: dict[int, list[Any]] = {}
    for r in rows:
        by_column.setdefault(r.column_id, []).append(r)
    out = []
    for column_id, group in sorted(by_column.items()):
        type_name = type_names.get(column_id, "varchar")
        mins = [r.min_value for r in group if r.min_value is not None]
        maxs = [r.max_value for r in group if r.max_value is not None]
        complete = len(mins) == len(group) and len(maxs) == len(group)
        nan = [r.contains_nan for r in group if r.contains_nan is not None]
        out.append(dict(
            data_file_id=data_file_id, table_id=table_id, column_id=column_id,
            column_size_bytes=sizes.get(column_id, sum(r.column_size_bytes or 0 for r in group)),
            value_count=sum(r.value_count or 0 for r in group), null_count=sum(r.null_count or 0 for r in group),
            min_value=min(mins, key=lambda v: _stat_key(type_name, v)) if complete and mins else None,
            max_value=max(maxs, key=lambda v: _stat_key(type_name, v)) if complete and maxs else None,
            contains_nan=any(nan) if nan else None, extra_stats=None,
        ))
    return out


def _column_sizes(path: str) -> dict[int, int]:
    """Compressed bytes per leaf field id in a Parquet file."""
    meta = pq.ParquetFile(path)
    ids: dict[str, int] = {}

    def walk(field: pa.Field, prefix: str) -> None:
        fid = int((field.metadata or {}).get(b"PARQUET:field_id", b"-1"))
        path_ = f"{prefix}{field.name}"
        if pa.types.is_struct(field.type):
            for child in field.type:
                walk(child, path_ + ".")
        elif pa.types.is_list(field.type):
            walk(field.type.value_field, path_ + ".list.")
        elif pa.types.is_map(field.type):
            walk(field.type.key_field, path_ + ".key_value.")
            walk(field.type.item_field, path_ + ".key_value.")
        else:
            ids[path_] = fid

    for field in meta.schema_arrow:
        walk(field, "")
    sizes: dict[int, int] = {}
    md = meta.metadata
    for rg in range(md.num_row_groups):
        for c in range(md.num_columns):
            col = md.row_group(rg).column(c)
            fid = ids.get(col.path_in_schema)
            if fid is not None and fid >= 0:
                sizes[fid] = sizes.get(fid, 0) + col.total_compressed_size
    return sizes


def compact(catalog: Catalog, schema: str, table: str, options: CompactionOptions | None = None, *,
            author: str = "ducklake-operator", dry_run: bool = False,
            runner: Callable[[list[Work]], list[MergedFile]] = run_in_process) -> dict[str, Any]:
    started = time.perf_counter()
    state = catalog.state(table_names=[(schema, table)])
    t = state.table(schema, table)
    if t is None:
        raise TableNotFound(f"table {schema}.{table} does not exist")
    with catalog.engine.connect() as conn:
        versions = load_schema_versions(conn, t.table_id)
    if options is None:
        size = t.options.get("target_file_size") or state.schemas[schema].options.get("target_file_size") or state.options.get("target_file_size")
        options = CompactionOptions(**({"target_file_size": int(size)} if size else {}))
    inlined_deletes = _files_with_inlined_deletes(catalog, t.table_id)
    plan = plan_compaction(t, state.snapshot.snapshot_id, versions, options, files_with_inlined_deletes=inlined_deletes)
    result: dict[str, Any] = {"operation": "compact", "table": f"{schema}.{table}", "baseSnapshot": plan.base_snapshot,
                              "groups": len(plan.groups), "filesRead": plan.input_files,
                              "bytesRead": sum(g.input_bytes for g in plan.groups), "dryRun": dry_run}
    if dry_run or not plan.groups:
        return {**result, "filesWritten": 0, "committedSnapshot": None, "seconds": round(time.perf_counter() - started, 3)}
    table_dir = os.path.join(state.data_path, state.schemas[schema].path, t.path)
    files = {f.data_file_id: f for f in t.data_files}
    outputs: list[MergedFile] = []
    work = [(group, [(files[i], files[i].path if not files[i].path_is_relative else os.path.join(table_dir, files[i].path))
                     for i in group.files], table_dir) for group in plan.groups]
    try:
        outputs = runner(work)
        _fault_point("before_commit")
        commit = catalog.commit([], author=author, base_snapshot=plan.base_snapshot,
                                message=f"compact {schema}.{table}: {plan.input_files} files into {len(outputs)}",
                                extra_writer=lambda ctx: _write_commit(ctx, t, outputs, state.schemas[schema].path))
        _fault_point("after_commit")
    except BaseException as exc:
        if not isinstance(exc, DuckLakeError) or exc.cleanable:
            for out in outputs:  # known not committed: no orphans left behind
                if os.path.exists(out.full_path):
                    os.remove(out.full_path)
        raise
    return {**result, "filesWritten": len(outputs), "bytesWritten": sum(o.file_size_bytes for o in outputs),
            "rowsWritten": sum(o.record_count for o in outputs), "committedSnapshot": commit.snapshot_id,
            "seconds": round(time.perf_counter() - started, 3)}


def _files_with_inlined_deletes(catalog: Catalog, table_id: int) -> set[int]:
    name = f"ducklake_inlined_delete_{table_id}"
    with catalog.engine.connect() as conn:
        if not sa.inspect(conn).has_table(name, schema=catalog.location.schema):
            return set()
        table = sa.Table(name, sa.MetaData(), autoload_with=conn, schema=catalog.location.schema)
        return set(conn.execute(sa.select(table.c.file_id).distinct()).scalars())


def _write_commit(ctx: CommitContext, table: TableState, outputs: list[MergedFile], schema_path: str) -> None:
    """Inside the commit transaction: check the inputs, swap catalog rows like WriteMergeAdjacent."""
    df, dl, st, pv, vs = (T[n] for n in ("ducklake_data_file", "ducklake_delete_file", "ducklake_file_column_stats",
                                         "ducklake_file_partition_value", "ducklake_file_variant_stats"))
    sources = [i for o in outputs for i in o.group.files]
    live = set(ctx.conn.execute(sa.select(df.c.data_file_id).where(df.c.data_file_id.in_(sources), df.c.end_snapshot.is_(None))).scalars())
    with_deletes = set(ctx.conn.execute(sa.select(dl.c.data_file_id).where(dl.c.data_file_id.in_(sources))).scalars())
    # DuckDB's conflict rules let a small (inlined) delete and a merge both commit, which would
    # lose the delete: refuse if any input file got inlined deletions since the plan
    inlined = f"ducklake_inlined_delete_{table.table_id}"
    if sa.inspect(ctx.conn).has_table(inlined, schema=ctx.pg_schema):
        it = sa.Table(inlined, sa.MetaData(), autoload_with=ctx.conn, schema=ctx.pg_schema)
        with_deletes |= set(ctx.conn.execute(sa.select(it.c.file_id).where(it.c.file_id.in_(sources))).scalars())
    if live != set(sources) or with_deletes:
        raise CommitConflict(f"compaction of {table.qualified_name}: input files changed since snapshot {ctx.base.snapshot_id} "
                             "(deleted from, or compacted); nothing was committed")
    stats = list(ctx.conn.execute(sa.select(st).where(st.c.data_file_id.in_(sources))))
    type_names = {c.column_id: c.type_name for c in table.all_columns()}
    files = {f.data_file_id: f for f in table.data_files}
    now = catalog_now(ctx.dialect)
    for out in outputs:
        g = out.group
        file_id = ctx.next_file_id
        ctx.next_file_id += 1
        ctx.emit(df.insert().values(
            data_file_id=file_id, table_id=table.table_id, begin_snapshot=g.begin_snapshot, end_snapshot=None, file_order=None,
            path=out.path, path_is_relative=True, file_format="parquet", record_count=out.record_count,
            file_size_bytes=out.file_size_bytes, footer_size=out.footer_size, row_id_start=g.row_id_start,
            partition_id=g.partition_id, encryption_key=None, mapping_id=None, partial_max=g.partial_max))
        rows = aggregate_stats([r for r in stats if r.data_file_id in g.files], type_names, file_id, table.table_id,
                               _column_sizes(out.full_path))
        if rows:
            ctx.emit(st.insert().values(rows))
        if g.partition_values:
            ctx.emit(pv.insert().values([dict(data_file_id=file_id, table_id=table.table_id, partition_key_index=k,
                                              partition_value=v) for k, v in g.partition_values]))
        for src in g.files:
            f = files[src]
            full = schema_path + table.path + f.path if f.path_is_relative else f.path
            ctx.emit(T["ducklake_files_scheduled_for_deletion"].insert().values(
                data_file_id=src, path=full, path_is_relative=f.path_is_relative, schedule_start=now))
    for t in (df, st, pv, vs):
        ctx.emit(t.delete().where(t.c.data_file_id.in_(sources)))
    ctx.needs_snapshot = True
    ctx.tokens.append(Token("merge_adjacent", id=table.table_id))
    _fault_point("in_commit")  # the transaction is open, nothing is visible yet
