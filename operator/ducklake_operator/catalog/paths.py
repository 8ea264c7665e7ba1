"""Where a catalog row's path points (docs/ducklake-format.md §4.2): the one resolver every reader uses (file
listings, referenced files, orphan detection, catalog deletion, the jobs). Pure.

DuckDB 1.5.5 resolves a path as ``FromRelativePath`` does: relative to its parent
directory when ``path_is_relative``, else as stored, whatever it looks like; a missing
path is its parent's (``BuildCatalogForSnapshot``). The chain is the data path, the
schema's path, the table's path, the file's path. ``ducklake_files_scheduled_for_deletion``
is the exception: relative to the data path, and DuckDB stores there a file under the data
path relative to it even when its own row holds it absolute (``GetRelativePath``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


def resolve(parent: str, path: str | None, is_relative: bool | None) -> str:
    """``path`` of a row whose parent directory is ``parent`` (ending in ``/``). A NULL flag,
    which DuckDB 1.5.5 fails to read, counts as relative (MigrateV01's default)."""
    if path is None:
        return parent
    return parent + path if is_relative is not False else path


def table_directory(
    data_path: str,
    schema_path: str | None,
    schema_relative: bool | None,
    table_path: str | None,
    table_relative: bool | None,
) -> str:
    return resolve(resolve(data_path, schema_path, schema_relative), table_path, table_relative)


def relative_to_data_path(data_path: str, full: str) -> tuple[str, bool]:
    """How DuckDB stores a file in ``ducklake_files_scheduled_for_deletion``: (path,
    path_is_relative), relative to the data path when the file is under it."""
    return (full[len(data_path) :], True) if full.startswith(data_path) else (full, False)


@dataclass(frozen=True)
class LakePaths:
    """The directories of every table of a catalog (any version), for resolving file rows."""

    data_path: str  # where the lake is, ending in '/'
    tables: Mapping[int, str]  # table id -> its directory
    moved_from: str | None = None  # the stored data path, when the lake moved away from it

    def file(self, table_id: int, path: str, is_relative: bool | None) -> str:
        """A data or delete file row's path; a table whose rows are gone resolves under the data path."""
        return resolve(self.tables.get(table_id, self.data_path), path, is_relative)

    def scheduled(self, path: str, is_relative: bool | None) -> str:
        """A ``ducklake_files_scheduled_for_deletion`` row's path."""
        return resolve(self.data_path, path, is_relative)

    def moved(self, path: str) -> str | None:
        """Where an absolute path under the stored data path is now that the lake moved: rows
        keep the old path (DuckDB reads that), but the file that moved with the lake is still
        the row's, never an orphan."""
        if self.moved_from is None or not path.startswith(self.moved_from):
            return None
        return self.data_path + path[len(self.moved_from) :]
