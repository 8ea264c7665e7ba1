"""What a rewriteColumnType job rewrites (pure): the columns it retypes (one or several, in one
pass over the files and one snapshot), and every live data file of the table in file groups,
one output file per group.

A group holds files of one partition (files of the current spec keep their partition
values; files of an earlier spec are written without partition values, which readers never
prune: an earlier spec may have keyed the retyped column, whose old values' text would
mislead them), in file id order, in as few groups as the target file size allows, of about
equal size (``task_balance.balanced_runs``: groups packed up to the target left a last,
smaller one, and its core idle at the end). When the commit also
changes the table's partitioning (a manifest's plan), the current spec is an earlier one
from the commit on: every file is written without partition values (``repartition`` moves
them into the new spec later), and a column only the old spec keys may be retyped. Files of
any layout may share a group: each is read in the table's current layout
(``layout_projection``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import DuckLakeError
from ..model.conversions import column_rewrite_problem
from ..model.names import find_named
from ..model.state import ColumnState, DataFile, TableState
from ..model.types import DuckLakeType
from .task_balance import balanced_runs


@dataclass(frozen=True)
class RetypeGroup:
    files: tuple[int, ...]  # data file ids
    input_bytes: int
    input_rows: int
    partition_id: int | None
    partition_values: tuple[tuple[int, str | None], ...]


@dataclass(frozen=True)
class Retyped:
    """One column (or struct field) and its new type."""

    chain: tuple[ColumnState, ...]  # the top-level column down to the retyped one
    new_type: DuckLakeType

    @property
    def column(self) -> ColumnState:
        return self.chain[-1]

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.chain)

    @property
    def name(self) -> str:
        return ".".join(self.path)

    def to_json(self) -> dict[str, str]:
        return {"column": self.name, "from": str(self.column.type), "to": str(self.new_type)}


@dataclass(frozen=True)
class ColumnRewritePlan:
    base_snapshot: int
    columns: tuple[Retyped, ...]  # those not of their new type yet, in the order asked
    groups: tuple[RetypeGroup, ...]
    unchanged: tuple[Retyped, ...] = ()  # asked for, but of the type already

    @property
    def done(self) -> bool:
        """Every column has its type already."""
        return not self.columns

    @property
    def input_files(self) -> int:
        return sum(len(g.files) for g in self.groups)

    @property
    def input_bytes(self) -> int:
        return sum(g.input_bytes for g in self.groups)

    def describe(self) -> str:
        """``code varchar → int64, s.day varchar → date``."""
        return ", ".join(f"{c.name} {c.column.type} → {c.new_type}" for c in self.columns)

    def to_json(self) -> dict[str, Any]:
        return {
            "columns": [c.to_json() for c in self.columns],
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


def retyped_layout(columns: tuple[ColumnState, ...], types: dict[int, str]) -> tuple[ColumnState, ...]:
    """The table's columns with some columns' (or fields') types replaced (by column id)."""
    return tuple(
        replace(c, type_name=types[c.column_id])
        if c.column_id in types
        else replace(c, children=retyped_layout(c.children, types))
        for c in columns
    )


def plan_column_rewrite(
    table: TableState,
    base_snapshot: int,
    changes: Sequence[tuple[tuple[str, ...], DuckLakeType]],
    target_file_size: int,
    *,
    repartitioned: bool = False,
) -> ColumnRewritePlan:
    """``changes``: (path, new type) of each column. Refuses (``DuckLakeError``, one sentence)
    what no rewrite can do; columns of their type already are left out (none left: a plan
    with no groups). ``repartitioned``: the commit also changes the table's partitioning."""
    resolved = [Retyped(resolve_column(table, path), new_type) for path, new_type in changes]
    for i, r in enumerate(resolved):
        ids = {c.column_id for c in r.chain}
        for other in resolved[:i]:
            if other.column.column_id in ids or r.column.column_id in {c.column_id for c in other.chain}:
                raise DuckLakeError(
                    f"cannot rewrite {table.qualified_name}: {other.name} and {r.name} are one column, or one "
                    "holds the other; give each column once"
                )
    todo = tuple(r for r in resolved if r.column.type != r.new_type)
    unchanged = tuple(r for r in resolved if r.column.type == r.new_type)
    if not todo:  # nothing to do
        return ColumnRewritePlan(base_snapshot, (), (), unchanged)
    spec = table.partition
    for r in todo:
        keyed = not repartitioned and spec is not None and any(f.column_id == r.chain[0].column_id for f in spec.fields)
        problem = column_rewrite_problem(
            r.path, tuple(c.type_name for c in r.chain[:-1]), r.column.type, r.new_type, keyed
        )
        if problem is not None:
            raise DuckLakeError(f"cannot rewrite {table.qualified_name}.{problem}")
    mapped = [f.data_file_id for f in table.data_files if f.end_snapshot is None and f.mapping_id is not None]
    if mapped:  # their columns are matched by name, and our reader matches field ids
        raise DuckLakeError(
            f"cannot rewrite {table.qualified_name}: {len(mapped)} of its files were registered by "
            "ducklake_add_data_files and carry no field ids; rewrite them with DuckDB first (ducklake_rewrite_data_files)"
        )
    groups = file_groups(table, table.data_files, target_file_size, keep_partitions=not repartitioned)
    return ColumnRewritePlan(base_snapshot, todo, groups, unchanged)


def file_groups(
    table: TableState, files: Iterable[DataFile], target_file_size: int, *, keep_partitions: bool = True
) -> tuple[RetypeGroup, ...]:
    """The live ones of ``files`` (of ``table``) in groups, one output file each; files of the
    current spec keep its partition values unless ``keep_partitions`` is false."""
    spec = table.partition
    current = spec.partition_id if keep_partitions and spec is not None and spec.fields else None

    def key(f: DataFile) -> tuple[int | None, tuple[tuple[int, str | None], ...]]:
        return (f.partition_id, f.partition_values) if current is not None and f.partition_id == current else (None, ())

    by_key: dict[tuple[int | None, tuple[tuple[int, str | None], ...]], list[DataFile]] = {}
    for f in sorted(files, key=lambda f: f.data_file_id):
        if f.end_snapshot is None:
            by_key.setdefault(key(f), []).append(f)
    groups: list[RetypeGroup] = []
    for (partition_id, values), members in by_key.items():
        for run in balanced_runs([f.file_size_bytes for f in members], target_file_size):
            groups.append(_group(members[run.start : run.stop], partition_id, values))
    return tuple(groups)


def _group(files: list[DataFile], partition_id: int | None, values: tuple[tuple[int, str | None], ...]) -> RetypeGroup:
    return RetypeGroup(
        tuple(f.data_file_id for f in files),
        sum(f.file_size_bytes for f in files),
        sum(f.record_count for f in files),
        partition_id,
        values,
    )
