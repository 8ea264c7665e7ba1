"""What the files a job wrote (``parquet_writer.WrittenFile``) become: the rows its commit adds
(``model.file_changes``, paths relative to the table's directory) and its report's counts."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ducklake_operator.model.file_changes import NewDataFile, NewDeleteFile

from .lake_paths import TablePaths
from .parquet_writer import WrittenFile


def data_file_row(
    path: str,
    written: WrittenFile,
    *,
    partition_id: int | None,
    partition_values: tuple[tuple[int, str | None], ...],
    begin_snapshot: int | None = None,
    row_id_start: int | None = None,
    partial_max: int | None = None,
    delete_file: NewDeleteFile | None = None,
) -> NewDataFile:
    """A data file written at ``path``; ``begin_snapshot`` None: it begins at the commit's
    snapshot, ``row_id_start`` None: its row ids are embedded, or given at the commit."""
    return NewDataFile(
        path=path,
        record_count=written.record_count,
        file_size_bytes=written.file_size_bytes,
        footer_size=written.footer_size,
        begin_snapshot=begin_snapshot,
        row_id_start=row_id_start,
        partial_max=partial_max,
        partition_id=partition_id,
        partition_values=partition_values,
        column_stats=written.column_stats,
        delete_file=delete_file,
    )


def delete_file_row(
    path: str, written: WrittenFile, snapshots: Sequence[int], *, flushed: bool = False
) -> NewDeleteFile:
    """A delete file with each row's snapshot begins at the oldest, with the newest as its
    partial_max; DuckDB 1.5.5 sets none on the delete file of ``flushed`` inlined rows all
    deleted by one snapshot (observed)."""
    low, high = min(snapshots), max(snapshots)
    return NewDeleteFile(
        path,
        len(snapshots),
        written.file_size_bytes,
        written.footer_size,
        low,
        None if flushed and high == low else high,
    )


def kept_deletes_row(
    paths: TablePaths, full: str, written: WrittenFile | None, deletes: Sequence[tuple[int, int]]
) -> NewDeleteFile | None:
    """The delete file a rewrite wrote at ``full`` beside its output for the rows it keeps
    deleted (``deletes``: position, snapshot), if it wrote one."""
    return None if written is None else delete_file_row(paths.relative(full), written, [s for _, s in deletes])


def written_counts(files: Iterable[WrittenFile]) -> dict[str, int]:
    """The report's ``filesWritten``, ``bytesWritten`` and ``rowsWritten``."""
    written = list(files)
    return {
        "filesWritten": len(written),
        "bytesWritten": sum(w.file_size_bytes for w in written),
        "rowsWritten": sum(w.record_count for w in written),
    }
