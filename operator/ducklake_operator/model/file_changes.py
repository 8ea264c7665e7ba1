"""File changes a maintenance job commits: frozen values like the schema changes in
``changes``, one writer per kind in ``catalog.write_files``.

Each is one DuckDB maintenance operation on one table, so it carries the change token
DuckDB writes for it and what the job read at its base snapshot (``PlannedInputs``): the
writer refuses (``CommitConflict``, the job plans again) when any of it changed since.
Paths are relative to the table's directory; ids of new files are allocated at commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .ingested_files import SourceFile


@dataclass(frozen=True)
class FileColumnStats:
    """One ``ducklake_file_column_stats`` row's values."""

    column_id: int
    column_size_bytes: int
    value_count: int | None  # non-NULL values (docs/ducklake-format.md §4.6); None: unknown
    null_count: int | None
    min_value: str | None
    max_value: str | None
    contains_nan: bool | None


@dataclass(frozen=True)
class NewDeleteFile:
    path: str  # relative to the table directory
    delete_count: int
    file_size_bytes: int
    footer_size: int
    begin_snapshot: int
    partial_max: int | None


@dataclass(frozen=True)
class NewDataFile:
    path: str  # relative to the table directory
    record_count: int
    file_size_bytes: int
    footer_size: int
    begin_snapshot: int | None  # None: the commit's snapshot
    row_id_start: int | None
    partial_max: int | None
    partition_id: int | None
    partition_values: tuple[tuple[int, str | None], ...]
    column_stats: Sequence[FileColumnStats]
    delete_file: NewDeleteFile | None = None  # deleted rows the new file still holds


@dataclass(frozen=True)
class PlannedInputs:
    """Live files a job read at its base snapshot, with their live delete files and inlined
    file deletions then; ``inlined_deletions=None``: later ones do not matter to the job."""

    data_files: tuple[int, ...]
    delete_files: tuple[tuple[int, int], ...] = ()  # (data file id, delete file id)
    inlined_deletions: tuple[tuple[int, int], ...] | None = ()  # (data file id, how many)


@dataclass(frozen=True)
class MergeFiles:
    """``ducklake_merge_adjacent_files``: ``outputs`` replace the inputs, whose rows are
    deleted (their history lives on in the outputs' lineage columns and delete files) and
    whose files, with their delete files, are scheduled for deletion."""

    table_id: int
    table_name: str  # qualified, for messages
    base_snapshot: int
    inputs: PlannedInputs
    outputs: tuple[NewDataFile, ...]


@dataclass(frozen=True)
class RewriteFiles:
    """``ducklake_rewrite_data_files``: ``outputs`` (the inputs' live rows) begin at the
    commit; the inputs and their delete files end there (time travel reads them until
    expiry); table stats become exact once the table has no delete left."""

    table_id: int
    table_name: str
    base_snapshot: int
    inputs: PlannedInputs
    outputs: tuple[NewDataFile, ...]


@dataclass(frozen=True)
class RepartitionFiles:
    """A batch of ``repartition``: ``outputs``, written under the table's partition spec
    ``spec_id`` (None: it never had one), replace the inputs as a merge does (``MergeFiles``:
    same rows, token and conflicts). Also refused when the table's spec is no longer
    ``spec_id``: the outputs would be laid out by a spec that is not the current one."""

    table_id: int
    table_name: str
    base_snapshot: int
    inputs: PlannedInputs
    outputs: tuple[NewDataFile, ...]
    spec_id: int | None


@dataclass(frozen=True)
class FlushInlinedRows:
    """``ducklake_flush_inlined_data``, rows: every row of ``flushed`` inlined tables that
    existed at the base snapshot is in ``outputs`` (deleted ones covered by the outputs'
    delete files) and leaves its inlined table; table stats widen with the outputs'."""

    table_id: int
    table_name: str
    base_snapshot: int
    flushed: tuple[tuple[str, int, int], ...]  # (inlined table, rows, of them deleted) at the base
    outputs: tuple[NewDataFile, ...]
    column_types: tuple[tuple[int, str], ...]  # (column id, type name) of the layouts flushed


@dataclass(frozen=True)
class FlushInlinedDeletions:
    """``ducklake_flush_inlined_data``, deletions: each data file's inlined deletions (up to
    the base snapshot) and its delete file become ``delete_files``; the old delete file's
    row goes and its file is scheduled for deletion."""

    table_id: int
    table_name: str
    base_snapshot: int
    inputs: PlannedInputs  # the data files and their delete files at the base
    delete_files: tuple[tuple[int, NewDeleteFile], ...]  # (data file id, its new delete file)


@dataclass(frozen=True)
class ColumnRetype:
    """One column (or struct field) of a ``RetypeColumns``: by id, ``path`` to find it at commit."""

    column_id: int
    path: tuple[str, ...]
    old_type: str  # ducklake_column.column_type
    new_type: str
    defaults: tuple[str | None, str]  # the converted (initial_default, default_value)


@dataclass(frozen=True)
class RetypeColumns:
    """rewriteColumnType: each of ``columns`` (columns or struct fields) gets its new type (a
    new column row version, as DuckDB's ALTER COLUMN TYPE writes it, with its defaults
    converted), and ``outputs``, holding every live row of the table with the converted
    values, replace the inputs from the commit on: every live data file and its delete file
    end there, as in ``RewriteFiles``, and so do the ``inlined`` rows. Earlier snapshots read
    the old types, files and rows. The table statistics become the outputs' (no deletion is
    left). The writer refuses when the table got any row, file or deletion since the base
    snapshot (the outputs would miss or resurrect it)."""

    table_id: int
    table_name: str
    base_snapshot: int
    columns: tuple[ColumnRetype, ...]
    inputs: PlannedInputs  # every live data file of the table
    inlined: tuple[tuple[str, int], ...]  # (inlined table, its live rows) at the base: all of the table's
    outputs: tuple[NewDataFile, ...]


@dataclass(frozen=True)
class AppendFiles:
    """An ingest's files, written as DuckDB's INSERT writes them (no lineage columns): they
    begin at the commit with row ids from the table's ``next_row_id`` in order, and the
    table's statistics grow with them (created with its first data). Committed after the
    ``AddColumn`` changes of the same snapshot, so the columns and the rows appear together.
    Refused (``CommitConflict``) unless the table's columns are then ``layout`` (what the
    files' field ids were written for) and its partition spec ``partition_id``; refused
    too when a snapshot since ``base_snapshot`` ingested one of ``sources`` into it, unless
    ``reingest``."""

    table_id: int
    table_name: str
    base_snapshot: int
    outputs: tuple[NewDataFile, ...]
    layout: tuple[tuple[int, int | None, str, str], ...]  # (column id, parent id, name, type) of every column
    partition_id: int | None
    sources: tuple[SourceFile, ...] = ()
    reingest: bool = False


FileChange = (
    MergeFiles
    | RewriteFiles
    | RepartitionFiles
    | FlushInlinedRows
    | FlushInlinedDeletions
    | RetypeColumns
    | AppendFiles
)
