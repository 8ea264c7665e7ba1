"""Changes a commit can carry: frozen values, keyed by ids once the object exists.

A commit is a list of these; ``catalog.writers`` turns each into catalog rows. Objects
created in the same commit are referred to by name (their ids are allocated at commit).
"""

from __future__ import annotations

from dataclasses import dataclass

from .types import Default, DuckLakeType, Field


@dataclass(frozen=True)
class CreateSchema:
    name: str
    tags: tuple[tuple[str, str], ...] = ()  # 'comment' is DuckDB's COMMENT ON

    def describe(self) -> str:
        return f"+ create schema {self.name}"


@dataclass(frozen=True)
class DropSchema:
    schema_id: int
    name: str
    cascade: bool = False

    def describe(self) -> str:
        return f"- drop schema {self.name}" + (" cascade" if self.cascade else "")


@dataclass(frozen=True)
class PartitionColumn:
    column: str  # top-level column name (resolved to its id at commit)
    transform: str = "identity"


@dataclass(frozen=True)
class SortExpression:
    column: str
    direction: str = "ASC"  # ASC | DESC
    null_order: str = "NULLS_LAST"  # NULLS_FIRST | NULLS_LAST


@dataclass(frozen=True)
class CreateTable:
    schema: str
    name: str
    columns: tuple[Field, ...]
    tags: tuple[tuple[str, str], ...] = ()
    partition_by: tuple[PartitionColumn, ...] = ()
    sort_by: tuple[SortExpression, ...] = ()

    def describe(self) -> str:
        columns = ", ".join(describe_field(f) for f in self.columns)
        extra = ""
        if self.partition_by:
            extra += (
                " partitioned by ("
                + ", ".join(
                    k.column if k.transform == "identity" else f"{k.transform}({k.column})" for k in self.partition_by
                )
                + ")"
            )
        if self.sort_by:
            extra += " sorted by (" + ", ".join(f"{k.column} {k.direction.lower()}" for k in self.sort_by) + ")"
        return f"+ create table {self.schema}.{self.name} ({columns}){extra}"


def describe_field(f: Field) -> str:
    text = f"{f.name} {f.type}"
    if not f.nullable:
        text += " not null"
    if f.default is not None:
        text += f" default {f.default.value}"
    return text


@dataclass(frozen=True)
class DropTable:
    table_id: int
    name: str  # qualified, for messages

    def describe(self) -> str:
        return f"- drop table {self.name}"


@dataclass(frozen=True)
class RenameTable:
    table_id: int
    old_name: str
    new_name: str

    def describe(self) -> str:
        return f"~ rename table {self.old_name} → {self.new_name}"


@dataclass(frozen=True)
class SetTags:
    """Set (value) or remove (None) tags of a table or schema; 'comment' is the comment."""

    object_id: int
    object_name: str
    tags: tuple[tuple[str, str | None], ...]
    is_table: bool = True

    def describe(self) -> str:
        parts = ", ".join(f"{k}={v!r}" if v is not None else f"-{k}" for k, v in self.tags)
        return f"~ set tags of {self.object_name}: {parts}"


@dataclass(frozen=True)
class SetOption:
    """A DuckLake option (``ducklake_metadata``); scope 'global', 'schema' or 'table'.

    Not versioned and not a snapshot of its own, as DuckDB's ``set_option``; in a commit
    with other changes it is written in the same database transaction.
    """

    key: str
    value: str | int | float | bool | None  # as a manifest writes it (the writer normalises it); None unsets
    scope: str = "global"
    scope_id: int | None = None
    scope_name: str | None = None

    def describe(self) -> str:
        where = f" on {self.scope} {self.scope_name}" if self.scope != "global" else ""
        return (
            f"~ set option {self.key} = {self.value!r}{where}"
            if self.value is not None
            else f"- unset option {self.key}{where}"
        )


# ---------------------------------------------------------------- changes to one table
# ``table_id`` is None when the table is created in the same commit; ``table`` is its
# qualified name (for messages, and to find a table created in the same commit).
# ``path`` names a column or nested field: ("customer", "email"); list elements and map
# keys/values appear as "element", "key", "value".


def _path(path: tuple[str, ...]) -> str:
    return ".".join(path)


@dataclass(frozen=True)
class AddColumn:
    table_id: int | None
    table: str
    parent_path: tuple[str, ...]  # () for a top-level column; a struct's path otherwise
    field: Field

    @property
    def path(self) -> tuple[str, ...]:
        return self.parent_path + (self.field.name,)

    def describe(self) -> str:
        kind = "field" if self.parent_path else "column"
        return f"+ add {kind} {_path(self.parent_path + (describe_field(self.field),))}"


@dataclass(frozen=True)
class OnColumn:
    """A change to an existing column or nested field (by id; ``path`` for messages and
    to find it at commit)."""

    table_id: int
    table: str
    column_id: int
    path: tuple[str, ...]


@dataclass(frozen=True)
class DropColumn(OnColumn):
    def describe(self) -> str:
        return f"- drop {'field' if len(self.path) > 1 else 'column'} {_path(self.path)}"


@dataclass(frozen=True)
class RenameColumn(OnColumn):
    new_name: str

    def describe(self) -> str:
        return f"~ rename {_path(self.path)} → {self.new_name}"


@dataclass(frozen=True)
class _TypeChange(OnColumn):
    old_type: DuckLakeType
    new_type: DuckLakeType


@dataclass(frozen=True)
class PromoteColumn(_TypeChange):
    def describe(self) -> str:
        return f"~ promote {_path(self.path)} {self.old_type} → {self.new_type}"


@dataclass(frozen=True)
class RewriteColumnType(_TypeChange):
    """A type change that is not a lossless promotion: needs the data rewritten (heavy)."""

    def describe(self) -> str:
        return f"~ rewrite {_path(self.path)} {self.old_type} → {self.new_type}"


@dataclass(frozen=True)
class SetDefault(OnColumn):
    default: Default | None

    def describe(self) -> str:
        if self.default is None:
            return f"~ drop default of {_path(self.path)}"
        return f"~ set default of {_path(self.path)} to {self.default.value}"


@dataclass(frozen=True)
class SetNullable(OnColumn):
    nullable: bool

    def describe(self) -> str:
        return f"~ {'drop not null on' if self.nullable else 'set not null on'} {_path(self.path)}"


@dataclass(frozen=True)
class SetColumnTags(OnColumn):
    tags: tuple[tuple[str, str | None], ...]

    def describe(self) -> str:
        parts = ", ".join(f"{k}={v!r}" if v is not None else f"-{k}" for k, v in self.tags)
        return f"~ set tags of {_path(self.path)}: {parts}"


@dataclass(frozen=True)
class SetPartitioning:
    table_id: int
    table: str
    keys: tuple[PartitionColumn, ...]  # () resets partitioning

    def describe(self) -> str:
        keys = ", ".join(k.column if k.transform == "identity" else f"{k.transform}({k.column})" for k in self.keys)
        return f"~ partition {self.table} by ({keys})" if self.keys else f"~ reset partitioning of {self.table}"


@dataclass(frozen=True)
class SetSortOrder:
    table_id: int
    table: str
    keys: tuple[SortExpression, ...]  # () resets the sort order

    def describe(self) -> str:
        keys = ", ".join(f"{k.column} {k.direction} {k.null_order.replace('_', ' ')}" for k in self.keys)
        return f"~ sort {self.table} by ({keys})" if self.keys else f"~ reset sort order of {self.table}"


ColumnChange = (
    AddColumn | DropColumn | RenameColumn | PromoteColumn | RewriteColumnType | SetDefault | SetNullable | SetColumnTags
)
Change = (
    CreateSchema
    | DropSchema
    | CreateTable
    | DropTable
    | RenameTable
    | SetTags
    | SetOption
    | AddColumn
    | DropColumn
    | RenameColumn
    | PromoteColumn
    | RewriteColumnType
    | SetDefault
    | SetNullable
    | SetColumnTags
    | SetPartitioning
    | SetSortOrder
)
