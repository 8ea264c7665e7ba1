"""flushInlinedData: move inlined rows and inlined file deletions into Parquet, as DuckDB's
``ducklake_flush_inlined_data`` does (docs/ducklake-format.md §5.3, §6.4).

Per table, one snapshot:
* each inlined table's rows that exist at the base snapshot become Parquet files in the
  layout of that table's schema version, one per partition of the spec then in force,
  with both lineage columns (``begin_snapshot`` = the oldest row's, ``partial_max`` = the
  newest's, ``row_id_start`` = the smallest id), in the latest sort order; rows already
  deleted are written too and covered by a delete file carrying their end snapshots, so
  time travel is unchanged. The flushed rows are deleted from the inlined table; unlike
  DuckDB, superseded inlined tables left empty are kept, so open DuckDB clients, which
  cache them per schema version, keep working.
* inlined file deletions are merged with the data file's delete file into a new one (with
  per-row snapshots); the old delete file is scheduled for deletion.

The data lives in the catalog database, so the driver does this work itself (no Spark
tasks): it is bounded by the inlining limit. The commit refuses if a flushed row was
deleted, or a data file with flushed deletions was changed, after the base snapshot.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

from ducklake_operator import storage
from ducklake_operator.api.v1alpha1.table import DEFAULT_SCHEMA
from ducklake_operator.catalog import Catalog
from ducklake_operator.catalog.commit import DEFAULT_AUTHOR
from ducklake_operator.catalog.inlined import InlinedRows
from ducklake_operator.catalog.job_inputs import InlinedData, read_inlined_data
from ducklake_operator.errors import TableNotFound
from ducklake_operator.model.file_changes import (
    FileChange,
    FlushInlinedDeletions,
    FlushInlinedRows,
    NewDataFile,
    NewDeleteFile,
    PlannedInputs,
)
from ducklake_operator.model.job_params import FLUSH_INLINED_DATA, FlushArgs
from ducklake_operator.model.maintenance_params import DRY_RUN
from ducklake_operator.model.partitioning import (
    hive_directory,
    key_fields,
    key_names,
    needs_ducklake_functions,
    transform_sql,
)
from ducklake_operator.model.state import CatalogState, ColumnState, PartitionSpec, TableState

from .fault_points import fault_point
from .inlined_rows import register_decoded
from .inputs import refuse_encrypted
from .job_steps import Report, produce_and_commit
from .lake_paths import TablePaths, new_file_beside, new_file_name, option, options_in_force, sort_sql, table_paths
from .operation_plugin import JobContext, OperationPlugin
from .parquet_writer import (
    HIDDEN_FIELD_IDS,
    ROW_ID,
    SNAPSHOT_ID,
    FieldIds,
    WrittenFile,
    copy_options,
    field_ids_from_columns,
    key_match,
    load_ducklake_functions,
    quote,
    read_delete_file,
    scratch_connection,
    write_delete_file,
    write_parquet,
)
from .run_context import PLAIN_RUN, JobRun
from .task_runners import ran_on, run_in_process
from .written_files import data_file_row, delete_file_row


@dataclass
class FlushWork:
    table: TableState
    base: int
    inlined: dict[str, tuple[int, int]] = field(default_factory=dict)  # table name -> (rows, deleted rows) flushed
    files: list[NewDataFile] = field(default_factory=list)  # with delete files for their rows deleted before
    deletions: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # planned inlined file deletions
    merged: list[tuple[int, NewDeleteFile]] = field(default_factory=list)  # data file id -> its merged delete file
    replaced: dict[int, int] = field(default_factory=dict)  # data file id -> its delete file, merged into the new one
    planned: list[str] = field(default_factory=list)  # every output path, recorded before it is written
    type_names: dict[int, str] = field(default_factory=dict)  # column id -> type, of the layouts flushed
    marker: str = ""  # in the names of the files written (the run's, ``model.job_marker``)

    def output(self, paths: TablePaths, relative: str) -> str:
        full = paths.full(relative, True)
        self.planned.append(full)
        return full

    def changes(self) -> list[FileChange]:
        """The commit: the flushed rows, then the merged deletions (each when there are any)."""
        t = self.table
        out: list[FileChange] = []
        if self.inlined:
            flushed = tuple((name, n, deleted) for name, (n, deleted) in self.inlined.items())
            types = tuple(sorted(self.type_names.items()))
            out.append(FlushInlinedRows(t.table_id, t.qualified_name, self.base, flushed, tuple(self.files), types))
        if self.merged:
            ids = tuple(data_file_id for data_file_id, _ in self.merged)
            inputs = PlannedInputs(ids, tuple(self.replaced.items()), inlined_deletions=None)
            out.append(FlushInlinedDeletions(t.table_id, t.qualified_name, self.base, inputs, tuple(self.merged)))
        return out


def flush_inlined_data(
    catalog: Catalog,
    schema: str | None = None,
    table: str | None = None,
    *,
    author: str = DEFAULT_AUTHOR,
    dry_run: bool = DRY_RUN.default,
    run: JobRun = PLAIN_RUN,
) -> dict[str, Any]:
    """Flush one table, or every table of the catalog (or of ``schema``) whose
    ``auto_compact`` option is not false. The driver does the work (no Spark tasks)."""
    state = catalog.state(table_names=[(schema, table)] if schema and table else None)
    refuse_encrypted(state)
    if table is not None:
        t = state.table(schema or DEFAULT_SCHEMA, table)
        if t is None:
            raise TableNotFound(f"table {schema}.{table} does not exist")
        targets = [t]
    else:
        targets = [
            t
            for t in state.tables.values()
            if (schema is None or t.schema_name == schema)
            and (option(state, t, "auto_compact") or "true").lower() != "false"
        ]
    report = Report(
        "flushInlinedData", baseSnapshot=state.snapshot.snapshot_id, dryRun=dry_run, ranOn=ran_on(run_in_process)
    )
    pending = [p for t in sorted(targets, key=lambda t: t.table_id) if (p := _pending(catalog, state, t, run))]
    # one commit per table: each but the last says the run goes on (a rerun does the rest)
    results = [
        _flush_table(catalog, state, t, work, inlined, author, dry_run, run, report, final=i == len(pending) - 1)
        for i, (t, work, inlined) in enumerate(pending)
    ]
    return report.done(
        tables=results,
        rowsFlushed=sum(r["rowsFlushed"] for r in results),
        deletionsFlushed=sum(r["deletionsFlushed"] for r in results),
        filesWritten=sum(r["filesWritten"] for r in results),
        bytesWritten=sum(r.get("bytesWritten", 0) for r in results),
        committedSnapshots=[r["committedSnapshot"] for r in results if r.get("committedSnapshot")],
    )


def _pending(
    catalog: Catalog, state: CatalogState, t: TableState, run: JobRun
) -> tuple[TableState, FlushWork, InlinedData] | None:
    """A table's inlined rows and deletions at the base snapshot; None when it has none."""
    base = state.snapshot.snapshot_id
    work = FlushWork(t, base, marker=run.file_marker)
    inlined = read_inlined_data(catalog, t, base)
    work.inlined = {rows.table_name: (len(rows.rows), rows.deleted) for rows in inlined.batches}
    work.deletions = inlined.deletions
    if not inlined.batches and not work.deletions:
        return None
    return t, work, inlined


def _flush_table(
    catalog: Catalog, state: CatalogState, t: TableState, work: FlushWork, inlined: InlinedData, author: str,
    dry_run: bool, run: JobRun, report: Report, *, final: bool,
) -> dict[str, Any]:  # fmt: skip
    base = state.snapshot.snapshot_id
    summary = {
        "table": t.qualified_name,
        "rowsFlushed": sum(n for n, _ in work.inlined.values()),
        "deletionsFlushed": sum(len(v) for v in work.deletions.values()),
    }
    if dry_run:
        return {**summary, "filesWritten": 0}
    paths = table_paths(state, t)
    parquet = copy_options(options_in_force(state, t))

    def produce() -> FlushWork:
        with tempfile.TemporaryDirectory(prefix="ducklake-flush-") as scratch:
            bucketed = needs_ducklake_functions(
                f.transform for rows in inlined.batches for f in key_fields(rows.partition)
            )
            con = scratch_connection(extensions=bucketed)
            try:
                if bucketed:
                    load_ducklake_functions(con)
                for rows in inlined.batches:
                    _write_rows(con, work, rows, rows.partition, paths, parquet, sort_sql(t), scratch)
                _merge_deletions(con, work, paths, scratch)
            finally:
                con.close()
        return work

    _, commit = produce_and_commit(
        lambda: work.planned,
        produce,
        lambda w: catalog.commit(
            w.changes(),
            author=author,
            base_snapshot=base,
            message=f"flushInlinedData {t.qualified_name}",
            extra_info=run.extra_info(  # this table's part of the report
                report.done(**summary, **_written(w), **({} if final else {"final": False}))
            ),
            before_commit=lambda: fault_point("in_commit"),
        ),
        committing=run.committing,
    )
    return {**summary, **_written(work), "committedSnapshot": commit.snapshot_id}


def _written(work: FlushWork) -> dict[str, int]:
    sizes = [f.file_size_bytes for f in work.files] + [
        d.file_size_bytes for d in [f.delete_file for f in work.files] + [m for _, m in work.merged] if d
    ]
    return {"filesWritten": len(sizes), "bytesWritten": sum(sizes)}


def _write_rows(
    con: Any,
    work: FlushWork,
    rows: InlinedRows,
    spec: PartitionSpec | None,
    paths: TablePaths,
    parquet: tuple[tuple[str, str], ...],
    order_by: str,
    scratch: str,
) -> None:
    register_decoded(con, rows, "flushed")
    columns: tuple[ColumnState, ...] = rows.columns
    work.type_names.update({c.column_id: c.type_name for top in columns for c in top.walk()})
    by_id = {c.column_id: c for c in columns}
    fields = key_fields(spec)
    parts = [f"{transform_sql(f.transform, quote(by_id[f.column_id].name))} AS __part{i}" for i, f in enumerate(fields)]
    part_cols = [f"__part{i}" for i in range(len(fields))]
    order = ", ".join(x for x in (order_by, "row_id", "begin_snapshot") if x)
    over = f"PARTITION BY {', '.join(part_cols)} " if part_cols else ""
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE ordered AS SELECT *, row_number() OVER ({over}ORDER BY {order}) - 1 AS __pos "
        f"FROM (SELECT *{', ' if parts else ''}{', '.join(parts)} FROM flushed)"
    )
    names = key_names(spec, columns)
    select = ", ".join(
        [quote(c.name) for c in columns] + [f"row_id AS {quote(ROW_ID)}", f"begin_snapshot AS {quote(SNAPSHOT_ID)}"]
    )
    out_fields = field_ids_from_columns(columns) + (
        FieldIds(ROW_ID, HIDDEN_FIELD_IDS[ROW_ID]),
        FieldIds(SNAPSHOT_ID, HIDDEN_FIELD_IDS[SNAPSHOT_ID]),
    )
    groups = con.execute(
        f"SELECT min(row_id), min(begin_snapshot), max(begin_snapshot){''.join(', ' + c for c in part_cols)} "
        f"FROM ordered {'GROUP BY ' + ', '.join(part_cols) if part_cols else ''} ORDER BY ALL"
    ).fetchall()
    for row_id_start, first, last, *values in groups:
        where, params = key_match(part_cols, values)
        directory = hive_directory(names, tuple(values)) if names else ""
        relative = new_file_name(directory, marker=work.marker)
        full = work.output(paths, relative)
        written = write_parquet(
            con,
            f"SELECT {select} FROM ordered WHERE {where} ORDER BY __pos",
            out_fields,
            os.path.join(scratch, "data.parquet"),
            parquet,
            params,
        )
        storage.store(written.local_path, full)
        deletes = con.execute(
            f"SELECT __pos, end_snapshot FROM ordered WHERE {where} AND end_snapshot IS NOT NULL ORDER BY __pos", params
        ).fetchall()
        deleted = [(int(p), int(s)) for p, s in deletes]
        delete_file = None
        if deleted:
            delete_path = new_file_name(directory, "-delete", work.marker)
            written_deletes = _write_delete_file(con, full, deleted, work.output(paths, delete_path), scratch)
            delete_file = delete_file_row(delete_path, written_deletes, [s for _, s in deleted], flushed=True)
        work.files.append(
            data_file_row(
                relative,
                written,
                begin_snapshot=first,
                row_id_start=row_id_start,
                partial_max=last,
                partition_id=spec.partition_id if spec and fields else None,
                partition_values=tuple(enumerate(values)),
                delete_file=delete_file,
            )
        )
    con.execute("DROP TABLE flushed")
    con.execute("DROP TABLE ordered")


def _write_delete_file(
    con: Any, data_path: str, deletes: list[tuple[int, int]], destination: str, scratch: str
) -> WrittenFile:
    written = write_delete_file(con, data_path, deletes, os.path.join(scratch, "delete.parquet"))
    storage.store(written.local_path, destination)
    return written


def _merge_deletions(con: Any, work: FlushWork, paths: TablePaths, scratch: str) -> None:
    """Each data file's inlined deletions + its delete file's positions -> one new delete file."""
    t = work.table
    data_files = {f.data_file_id: f for f in t.data_files}
    live_deletes = {d.data_file_id: d for d in t.delete_files if d.end_snapshot is None}
    for data_file_id, inlined in sorted(work.deletions.items()):
        f = data_files[data_file_id]
        positions = dict(inlined)
        old = live_deletes.get(data_file_id)
        if old is not None:
            positions.update(
                read_delete_file(storage.fetch(paths.full(old.path, old.path_is_relative), scratch), old.begin_snapshot)
            )
        merged = sorted(positions.items())
        relative = new_file_beside(f.path, f.path_is_relative, "-delete", work.marker)
        written = _write_delete_file(
            con, paths.full(f.path, f.path_is_relative), merged, work.output(paths, relative), scratch
        )
        work.merged.append((data_file_id, delete_file_row(relative, written, [s for _, s in merged])))
        if old is not None:
            work.replaced[data_file_id] = old.delete_file_id


def run_flush(job: JobContext, args: FlushArgs) -> dict[str, Any]:
    """The driver does the work: no runner."""
    return flush_inlined_data(job.catalog, job.schema, job.table, author=job.author, dry_run=args.dry_run, run=job.run)


PLUGIN = OperationPlugin(FLUSH_INLINED_DATA, run_flush)
