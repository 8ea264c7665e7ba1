"""A table's directory (resolved by ``catalog.paths``, as every reader does), new file
names, and the options that shape a table's Parquet output."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

from uuid6 import uuid7

from ducklake_operator.catalog.paths import resolve, table_directory
from ducklake_operator.model.state import CatalogState, TableState


@dataclass(frozen=True)
class TablePaths:
    directory: str  # the table's directory (ends in /)

    def full(self, path: str, is_relative: bool) -> str:
        """Where a data or delete file row's ``path`` points."""
        return resolve(self.directory, path, is_relative)

    def relative(self, full: str) -> str:
        """The catalog's relative path of a file a job wrote at ``full`` (in this directory)."""
        assert full.startswith(self.directory), full
        return full[len(self.directory) :]


def table_paths(state: CatalogState, table: TableState) -> TablePaths:
    schema = state.schemas[table.schema_name]
    return TablePaths(
        table_directory(state.data_path, schema.path, schema.path_is_relative, table.path, table.path_is_relative)
    )


def new_file_name(directory: str = "", suffix: str = "", marker: str = "") -> str:
    """``ducklake-<uuidv7>[-<marker>][-delete].parquet``, in ``directory`` (relative, e.g. a
    hive directory); ``marker``: the run's (``model.job_marker``), which DuckDB ignores."""
    name = f"ducklake-{uuid7()}{'-' + marker if marker else ''}{suffix}.parquet"
    return posixpath.join(directory, name) if directory else name


def new_file_beside(path: str, is_relative: bool, suffix: str = "", marker: str = "") -> str:
    """A new file name (relative to the table directory) in the same hive directory as the
    file at ``path``, as DuckDB places compaction output and delete files."""
    return new_file_name(path.rsplit("/", 1)[0] if is_relative and "/" in path else "", suffix, marker)


def option(state: CatalogState, table: TableState, key: str) -> str | None:
    """An option by scope precedence: table > schema > catalog."""
    return state.options_in_force(table).get(key)


def option_on(state: CatalogState, table: TableState, key: str) -> bool:
    """A boolean option in force, on unless set to false (as DuckDB's ``hive_file_pattern`` and
    ``sort_on_insert`` are)."""
    return (option(state, table, key) or "true").lower() != "false"


def options_in_force(state: CatalogState, table: TableState) -> Mapping[str, str]:
    return state.options_in_force(table)


def sort_sql(table: TableState) -> str:
    """ORDER BY items for the table's latest sort key (DuckDB-dialect expressions only)."""
    if table.sort is None:
        return ""
    fields = sorted((f for f in table.sort.fields if f.dialect == "duckdb"), key=lambda f: f.key_index)
    return ", ".join(f"{f.expression} {f.direction} {f.null_order.replace('_', ' ')}" for f in fields)
