"""Identifier rules. Names are data (never spliced into SQL), so quotes and semicolons are
fine; what is refused is what no DuckDB user means: empty names, control characters and
surrounding whitespace.

DuckDB matches schema, table, column and struct field names case-insensitively, and only
in ASCII: ``K`` and ``k`` are one name, ``Ä`` and ``ä`` two, ``Straße`` and ``STRASSE`` two
(docs/ducklake-format.md §3.1). ``fold`` is that rule, and every name match in the operator
goes through it (``same_name``, ``find_named``, ``CatalogState.table``/``schema``).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import TypeVar

from ..errors import SpecError
from .duckdb_keywords import KEYWORDS

V = TypeVar("V")

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_NAME_LENGTH = 1024


def identifier_problem(name: object, what: str) -> str | None:
    if not isinstance(name, str) or name == "":
        return f"{what} name must be a non-empty string, got {name!r}"
    if _CONTROL.search(name):
        return f"{what} name {name!r} contains a control character"
    if name != name.strip():
        return f"{what} name {name!r} has leading or trailing whitespace"
    if len(name) > MAX_NAME_LENGTH:
        return f"{what} name is longer than {MAX_NAME_LENGTH} characters"
    return None


def check_identifier(name: object, what: str) -> str:
    problem = identifier_problem(name, what)
    if problem:
        raise SpecError(problem)
    assert isinstance(name, str)  # identifier_problem finds a problem in anything else
    return name


_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def fold(name: str) -> str:
    """The key DuckDB compares identifiers by: ASCII letters lower-cased, nothing else."""
    return name.translate(_ASCII_LOWER)


def same_name(a: str, b: str) -> bool:
    return fold(a) == fold(b)


def find_named(items: Mapping[str, V], name: str) -> V | None:
    """The value whose key DuckDB would take for ``name`` (at most one can match: DuckDB
    refuses a second name that folds to the same key)."""
    if name in items:
        return items[name]
    key = fold(name)
    return next((v for k, v in items.items() if fold(k) == key), None)


SIMPLE_PATH_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def path_for(name: str, uuid: str) -> str:
    """Directory DuckDB gives a schema or table (``GeneratePathFromName``)."""
    return (name if SIMPLE_PATH_NAME.match(name) else uuid) + "/"


def column_reference_sql(column: str) -> str:
    """A column reference as DuckDB renders it (``ducklake_sort_expression.expression``): bare
    when it is a plain identifier (ASCII letters of either case, digits, ``_``; not starting
    with a digit) and no SQL keyword, else double-quoted (docs/ducklake-format.md §6.5)."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", column) and fold(column) not in KEYWORDS:
        return column
    return '"' + column.replace('"', '""') + '"'
