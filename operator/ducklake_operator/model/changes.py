"""Changes a commit can carry: frozen values, keyed by ids once the object exists.

A commit is a list of these; ``catalog.write`` turns each into catalog rows. Objects
created in the same commit are referred to by name (their ids are allocated at commit).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from .types import Field


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
class CreateTable:
    schema: str
    name: str
    columns: tuple[Field, ...]
    tags: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        return f"+ create table {self.schema}.{self.name} ({len(self.columns)} columns)"


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
    value: str | None
    scope: str = "global"
    scope_id: int | None = None
    scope_name: str | None = None

    def describe(self) -> str:
        where = f" on {self.scope} {self.scope_name}" if self.scope != "global" else ""
        return f"~ set option {self.key} = {self.value!r}{where}" if self.value is not None else f"- unset option {self.key}{where}"


Change = Union[CreateSchema, DropSchema, CreateTable, DropTable, RenameTable, SetTags, SetOption]
