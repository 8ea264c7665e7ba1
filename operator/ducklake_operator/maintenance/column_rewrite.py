"""What a rewriteColumnType job rewrites (pure): the column it retypes, and every live data
file of the table in file groups, one output file per group.

A group holds files of one partition (files of the current spec keep their partition
values; files of an earlier spec are written without partition values, which readers never
prune: an earlier spec may have keyed the retyped column, whose old values' text would
mislead them), packed in file id order up to the target file size. Files of any layout may
share a group: each is read in the table's current layout (``layout_projection``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from ..errors import DuckLakeError
from ..model.conversions import column_rewrite_problem
from ..model.names import find_named
from ..model.state import ColumnState, DataFile, TableState
from ..model.types import DuckLakeType


@dataclass(frozen=True)
class RetypeGroup:
    files: tuple[int, ...]  # data file ids
    input_bytes: int
    input_rows: int
    partition_id: int | None
    partition_values: tuple[tuple[int, str | None], ...]


@dataclass(frozen=True)
class ColumnRewritePlan:
    base_snapshot: int
    chain: tuple[ColumnState, ...]  # the top-level column down to the retyped one
    new_type: DuckLakeType
    groups: tuple[RetypeGroup, ...]

    @property
    def column(self) -> ColumnState:
        return self.chain[-1]

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.chain)

    @property
    def done(self) -> bool:
        """The column has the type already."""
        return self.column.type == self.new_type

    @property
    def input_files(self) -> int:
        return sum(len(g.files) for g in self.groups)

    @property
    def input_bytes(self) -> int:
        return sum(g.input_bytes for g in self.groups)

    def to_json(self) -> dict[str, Any]:
        return {
            "column": ".".join(self.path),
            "from": str(self.column.type),
            "to": str(self.new_type),
            "groups": [
                {"files": list(g.files), "bytes": g.input_bytes, "rows": g.input_rows, "partitionId": g.partition_id}
                for g in self.groups
            ],
        }


def resolve_column(table: TableState, path: tuple[str, ...]) -> tuple[ColumnState, ...]:
    """The columns from the top-level one down to ``path``'s last name (names matched as
    DuckDB matches them)."""
    chain: list[ColumnState] = []
    level = table.columns
    for name in path:
        found = find_named({c.name: c for c in level}, name)
        if found is None:
            where = ".".join(path[: len(chain) + 1])
            raise DuckLakeError(f"{table.qualified_name} has no column {where}")
        chain.append(found)
        level = found.children
    return tuple(chain)


def retyped_layout(columns: tuple[ColumnState, ...], column_id: int, type_name: str) -> tuple[ColumnState, ...]:
    """The table's columns with one column's (or field's) type replaced."""
    return tuple(
        replace(c, type_name=type_name)
        if c.column_id == column_id
        else replace(c, children=retyped_layout(c.children, column_id, type_name))
        for c in columns
    )


def plan_column_rewrite(
    table: TableState, base_snapshot: int, path: tuple[str, ...], new_type: DuckLakeType, target_file_size: int
) -> ColumnRewritePlan:
    """Refuses (``DuckLakeError``, one sentence) what no rewrite can do; a column that has the
    type already is a plan with no groups."""
    chain = resolve_column(table, path)
    column = chain[-1]
    if column.type == new_type:  # nothing to do
        return ColumnRewritePlan(base_snapshot, chain, new_type, ())
    spec = table.partition
    keyed = spec is not None and any(f.column_id == chain[0].column_id for f in spec.fields)
    problem = column_rewrite_problem(
        tuple(c.name for c in chain), tuple(c.type_name for c in chain[:-1]), column.type, new_type, keyed
    )
    if problem is not None:
        raise DuckLakeError(f"cannot rewrite {table.qualified_name}.{problem}")
    mapped = [f.data_file_id for f in table.data_files if f.end_snapshot is None and f.mapping_id is not None]
    if mapped:  # their columns are matched by name, and our reader matches field ids
        raise DuckLakeError(
            f"cannot rewrite {table.qualified_name}: {len(mapped)} of its files were registered by "
            "ducklake_add_data_files and carry no field ids; rewrite them with DuckDB first (ducklake_rewrite_data_files)"
        )
    return ColumnRewritePlan(base_snapshot, chain, new_type, file_groups(table, table.data_files, target_file_size))


def file_groups(table: TableState, files: Iterable[DataFile], target_file_size: int) -> tuple[RetypeGroup, ...]:
    """The live ones of ``files`` (of ``table``) in groups, one output file each."""
    spec = table.partition
    current = spec.partition_id if spec is not None and spec.fields else None

    def key(f: DataFile) -> tuple[int | None, tuple[tuple[int, str | None], ...]]:
        return (f.partition_id, f.partition_values) if current is not None and f.partition_id == current else (None, ())

    by_key: dict[tuple[int | None, tuple[tuple[int, str | None], ...]], list[DataFile]] = {}
    for f in sorted(files, key=lambda f: f.data_file_id):
        if f.end_snapshot is None:
            by_key.setdefault(key(f), []).append(f)
    groups: list[RetypeGroup] = []
    for (partition_id, values), members in by_key.items():
        batch: list[DataFile] = []
        size = 0
        for f in members:
            if batch and size + f.file_size_bytes > target_file_size:
                groups.append(_group(batch, partition_id, values))
                batch, size = [], 0
            batch.append(f)
            size += f.file_size_bytes
        groups.append(_group(batch, partition_id, values))
    return tuple(groups)


def _group(files: list[DataFile], partition_id: int | None, values: tuple[tuple[int, str | None], ...]) -> RetypeGroup:
    return RetypeGroup(
        tuple(f.data_file_id for f in files),
        sum(f.file_size_bytes for f in files),
        sum(f.record_count for f in files),
        partition_id,
        values,
    )
