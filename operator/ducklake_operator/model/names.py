"""Identifier rules. Names are data (never spliced into SQL), so quotes and semicolons are
fine; what is refused is what no DuckDB user means: empty names, control characters and
surrounding whitespace. DuckDB matches identifiers case-insensitively, so uniqueness is
checked on the case-folded name.
"""

from __future__ import annotations

import re

from ..errors import SpecError

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
    return name  # type: ignore[return-value]


def fold(name: str) -> str:
    """The key DuckDB compares identifiers by."""
    return name.casefold()


SIMPLE_PATH_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def path_for(name: str, uuid: str) -> str:
    """Directory DuckDB gives a schema or table (``GeneratePathFromName``)."""
    return (name if SIMPLE_PATH_NAME.match(name) else uuid) + "/"


def column_reference_sql(column: str) -> str:
    """A column reference as DuckDB renders it (``ducklake_sort_expression.expression``)."""
    return column if re.fullmatch(r"[a-z_][a-z0-9_]*", column) else '"' + column.replace('"', '""') + '"'
