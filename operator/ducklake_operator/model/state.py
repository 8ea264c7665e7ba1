"""Observed catalog state at one snapshot: immutable values read once, never mutated."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING

from .names import find_named, fold

if TYPE_CHECKING:
    from .types import DuckLakeType


@dataclass(frozen=True)
class SnapshotInfo:
    snapshot_id: int
    snapshot_time: datetime | str | None
    schema_version: int
    next_catalog_id: int
    next_file_id: int


@dataclass(frozen=True)
class SnapshotRecord:
    """A row of ``ducklake_snapshot`` joined with its ``ducklake_snapshot_changes``."""

    snapshot_id: int
    snapshot_time: datetime | str | None
    schema_version: int
    changes_made: str | None
    author: str | None
    commit_message: str | None
    commit_extra_info: str | None


@dataclass(frozen=True)
class ColumnState:
    column_id: int
    name: str
    type_name: str  # ducklake_column.column_type: 'int32', 'decimal(10,2)', 'struct', ...
    nullable: bool
    initial_default: str | None
    default_value: str | None
    default_value_type: str | None
    parent_id: int | None
    order: int
    begin_snapshot: int
    children: tuple[ColumnState, ...] = ()
    tags: Mapping[str, str] = field(default_factory=dict)

    @property
    def comment(self) -> str | None:
        return self.tags.get("comment")

    @property
    def has_default(self) -> bool:
        return self.default_value not in (None, "NULL")

    @property
    def type(self) -> DuckLakeType:
        """The full type of this column, nested types rebuilt from the children."""
        from .types import Field, ListOf, MapOf, Struct, from_catalog_name

        if self.type_name == "struct":
            return Struct(tuple(Field(c.name, c.type, c.nullable) for c in self.children))
        if self.type_name == "list":
            return ListOf(self.children[0].type)
        if self.type_name == "map":
            return MapOf(self.children[0].type, self.children[1].type)
        t = from_catalog_name(self.type_name)
        assert t is not None, self.type_name  # the nested types' names are DuckDB's, in lowercase
        return t

    def walk(self) -> Iterator[ColumnState]:
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(frozen=True)
class PartitionField:
    key_index: int
    column_id: int
    transform: str


@dataclass(frozen=True)
class PartitionSpec:
    partition_id: int
    fields: tuple[PartitionField, ...]


@dataclass(frozen=True)
class SortField:
    key_index: int
    expression: str
    dialect: str
    direction: str  # 'ASC' | 'DESC'
    null_order: str  # 'NULLS_FIRST' | 'NULLS_LAST'


@dataclass(frozen=True)
class SortSpec:
    sort_id: int
    fields: tuple[SortField, ...]


@dataclass(frozen=True)
class DataFile:
    data_file_id: int
    table_id: int
    begin_snapshot: int
    end_snapshot: int | None
    path: str
    path_is_relative: bool
    file_format: str | None
    record_count: int
    file_size_bytes: int
    footer_size: int | None
    row_id_start: int | None
    partition_id: int | None
    encryption_key: str | None
    mapping_id: int | None
    partial_max: int | None
    partition_values: tuple[tuple[int, str | None], ...] = ()


@dataclass(frozen=True)
class DeleteFile:
    delete_file_id: int
    table_id: int
    begin_snapshot: int
    end_snapshot: int | None
    data_file_id: int
    path: str
    path_is_relative: bool
    format: str | None
    delete_count: int
    file_size_bytes: int
    footer_size: int | None
    encryption_key: str | None
    partial_max: int | None


@dataclass(frozen=True)
class ColumnStats:
    column_id: int
    contains_null: bool | None
    contains_nan: bool | None
    min_value: str | None
    max_value: str | None
    extra_stats: str | None


@dataclass(frozen=True)
class TableStats:
    record_count: int
    next_row_id: int
    file_size_bytes: int
    columns: Mapping[int, ColumnStats] = field(default_factory=dict)


@dataclass(frozen=True)
class InlinedTable:
    name: str
    schema_version: int


@dataclass(frozen=True)
class TableState:
    table_id: int
    table_uuid: str
    schema_id: int
    schema_name: str
    name: str
    path: str
    path_is_relative: bool
    begin_snapshot: int
    columns: tuple[ColumnState, ...]
    next_column_id: int
    partition: PartitionSpec | None = None
    sort: SortSpec | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, str] = field(default_factory=dict)
    data_files: tuple[DataFile, ...] = ()
    delete_files: tuple[DeleteFile, ...] = ()
    stats: TableStats | None = None
    inlined_tables: tuple[InlinedTable, ...] = ()
    layout_change: tuple[int, int] | None = None  # (snapshot, schema_version) that last changed its layout

    @property
    def qualified_name(self) -> str:
        return f"{self.schema_name}.{self.name}"

    @property
    def comment(self) -> str | None:
        return self.tags.get("comment")

    def all_columns(self) -> Iterator[ColumnState]:
        for c in self.columns:
            yield from c.walk()

    def column_by_id(self, column_id: int) -> ColumnState | None:
        return next((c for c in self.all_columns() if c.column_id == column_id), None)

    def column(self, name: str) -> ColumnState | None:
        """A top-level column by name, matched as DuckDB matches names."""
        return find_named({c.name: c for c in self.columns}, name)


@dataclass(frozen=True)
class SchemaState:
    schema_id: int
    schema_uuid: str
    name: str
    path: str
    path_is_relative: bool
    begin_snapshot: int
    tags: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CatalogState:
    snapshot: SnapshotInfo
    version: str
    data_path: str
    options: Mapping[str, str]  # global scope
    schemas: Mapping[str, SchemaState]
    tables: Mapping[tuple[str, str], TableState]

    def table(self, schema: str, name: str) -> TableState | None:
        """A table by schema and name, matched as DuckDB matches names."""
        exact = self.tables.get((schema, name))
        return exact if exact is not None else self._by_folded_name.get((fold(schema), fold(name)))

    # Indexes built on first use (the state is immutable): a storm of creations asks for
    # tables that do not exist yet, each a full scan without them.
    @cached_property
    def _by_folded_name(self) -> dict[tuple[str, str], TableState]:
        index: dict[tuple[str, str], TableState] = {}
        for (s, n), t in self.tables.items():
            index.setdefault((fold(s), fold(n)), t)
        return index

    @cached_property
    def _by_id(self) -> dict[int, TableState]:
        return {t.table_id: t for t in self.tables.values()}

    def refreshed(self, replaced: Iterable[int], fresh: CatalogState) -> CatalogState:
        """``fresh`` (the tables read again at a later snapshot) with this state's other
        tables, those of ``replaced`` ids left out; the name and id indexes are carried over
        (copied, then changed by the difference) rather than built again: a catalog refreshed
        after each of many commits, each changing a few tables, would otherwise rebuild them
        from every table each time."""
        by_id, tables, folded = dict(self._by_id), dict(self.tables), dict(self._by_folded_name)
        for table_id in replaced:
            old = by_id.pop(table_id, None)
            if old is not None:
                tables.pop((old.schema_name, old.name), None)
                if folded.get(key := (fold(old.schema_name), fold(old.name))) is old:
                    del folded[key]
        for (schema, name), table in fresh.tables.items():
            tables[(schema, name)] = table
            by_id[table.table_id] = table
            folded.setdefault((fold(schema), fold(name)), table)
        state = replace(fresh, tables=tables)
        state.__dict__.update(_by_id=by_id, _by_folded_name=folded)  # as cached_property stores them
        return state

    def schema(self, name: str) -> SchemaState | None:
        """A schema by name, matched as DuckDB matches names."""
        return find_named(self.schemas, name)

    def options_in_force(self, table: TableState) -> dict[str, str]:
        """The table's options as DuckDB reads them: table over schema over catalog."""
        schema = self.schemas.get(table.schema_name)
        return {**self.options, **(schema.options if schema else {}), **table.options}

    def table_by_id(self, table_id: int) -> TableState | None:
        return self._by_id.get(table_id)

    def tables_in(self, schema: str) -> list[TableState]:
        key = fold(schema)
        return [t for (s, _), t in self.tables.items() if fold(s) == key]
