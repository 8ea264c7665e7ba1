"""Encode manifest defaults exactly as DuckDB 1.5.5 stores them in ``ducklake_column``.

Observed rules (docs/ducklake-format.md §3.6, checked against the extension):
* a constant is stored as written in ``default_value`` (``'2024-01-01'``, ``3.14159``) and,
  cast to the column type and rendered by DuckDB, in ``initial_default``
  (``'2024-01-01 00:00:00+00'``, ``'3.14'``);
* an expression is stored as DuckDB re-renders it (``1+2`` -> ``(1 + 2)``), with no
  initial default;
* a boolean constant becomes the expression ``CAST('t' AS BOOLEAN)`` at CREATE TABLE.

A manifest constant is a value, not SQL: ``default: new`` is DuckDB's ``DEFAULT 'new'``;
``default: "'new'"`` keeps the quote marks (legal, so the plan warns instead of refusing).
For a boolean column, a YAML string (``"true"``, ``"t"``) is the same default as the YAML
constant ``true``: DuckDB would store ``DEFAULT 'true'`` as a literal but ``DEFAULT true``
as the expression above, and the manifest cannot mean two different things by them.

Rendering casts and expressions by hand would drift from DuckDB, so an in-memory DuckDB
(no extensions, no files, TimeZone UTC) renders them. It evaluates nothing from the
catalog and touches no storage.
"""

from __future__ import annotations

import datetime
import threading
from functools import lru_cache
from typing import TYPE_CHECKING

from ..errors import SpecError
from .types import Default, DuckLakeType, Field, ListOf, MapOf, Primitive, Struct, is_nested, to_duckdb_sql

if TYPE_CHECKING:
    import duckdb

_lock = threading.Lock()
# DuckDB stores a boolean default as an expression at CREATE TABLE; these are its two forms
BOOLEAN_EXPRESSIONS = {"CAST('t' AS BOOLEAN)": "true", "CAST('f' AS BOOLEAN)": "false"}
BOOLEAN = Primitive("boolean")


@lru_cache(maxsize=1)
def _duckdb() -> duckdb.DuckDBPyConnection:
    from ..duckdb_session import open_session

    return open_session(external_access=False)


def encode_default(value: object, t: DuckLakeType, *, at_create: bool, where: str) -> Default | None:
    """The stored form of a manifest default (``None``: no default).

    ``value`` is a YAML scalar (a constant; YAML dates and timestamps as DuckDB writes them)
    or ``{"expression": "<DuckDB SQL>"}``.
    ``at_create``: the column is created with its table (DuckDB refuses expression and
    boolean defaults for columns added later; for booleans we store the literal instead).
    """
    if value is None:
        return None
    if is_nested(t):
        raise SpecError(f"{where}: defaults on {t.name} columns are not supported by DuckLake")
    if isinstance(value, dict):
        if set(value) != {"expression"} or not isinstance(value["expression"], str):
            raise SpecError(f"{where}: a default is a constant or {{expression: <SQL>}}")
        if not at_create:
            raise SpecError(
                f"{where}: an expression default can only be given when the column is created with its table "
                "(DuckLake stores no initial value for it); give a constant"
            )
        return Default(_render_expression(value["expression"], t, where), is_expression=True)
    if isinstance(value, datetime.date):  # YAML reads an unquoted 2024-01-01 (or a timestamp) as a date
        value = value.isoformat(sep=" ") if isinstance(value, datetime.datetime) else value.isoformat()
    if isinstance(value, str) and t == BOOLEAN:  # "true" means what the constant true means
        value = _cast(value, t, where) == "true"
    if isinstance(value, bool):
        if at_create:
            return Default(
                next(k for k, v in BOOLEAN_EXPRESSIONS.items() if v == str(value).lower()), is_expression=True
            )
        text = "true" if value else "false"
        return Default(text, initial=_cast(text, t, where))
    if isinstance(value, (int, float, str)):
        text = str(value)
        return Default(text, initial=_cast(text, t, where))
    raise SpecError(f"{where}: default {value!r} is not a constant")


def _cast(text: str, t: DuckLakeType, where: str) -> str:
    with _lock:
        try:
            row = _duckdb().execute(f"SELECT CAST(CAST(? AS {to_duckdb_sql(t)}) AS VARCHAR)", [text]).fetchone()
        except Exception as exc:  # DuckDB's conversion error says why
            unquoted = quoted_constant(text)
            hint = f"; a manifest default is a value, not SQL: did you mean `{unquoted}`?" if unquoted else ""
            raise SpecError(f"{where}: default {text!r} is not a valid {t}: {str(exc).splitlines()[0]}{hint}") from None
    assert row is not None  # a SELECT without FROM returns one row
    return row[0]


def quoted_constant(text: str) -> str | None:
    """The value inside a constant written the SQL way (``'new'`` -> ``new``), else None."""
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    return None


def default_warnings(fields: tuple[Field, ...], parent: tuple[str, ...] = ()) -> list[str]:
    """Plan warnings for legal defaults that are probably not what was meant: a constant in
    SQL quotes is stored with its quote marks."""
    out = []
    for f in fields:
        path = parent + (f.name,)
        d = f.default
        if d is not None and not d.is_expression and (unquoted := quoted_constant(d.value)) is not None:
            out.append(
                f"warning: {'.'.join(path)}: default {d.value!r} is stored with its quote marks (a manifest "
                f"default is a value, not SQL); did you mean `{unquoted}`?"
            )
        out += _nested_warnings(f.type, path)
    return out


def _nested_warnings(t: DuckLakeType, path: tuple[str, ...]) -> list[str]:
    if isinstance(t, Struct):
        return default_warnings(t.fields, path)
    if isinstance(t, ListOf):
        return _nested_warnings(t.element, path + ("element",))
    if isinstance(t, MapOf):
        return _nested_warnings(t.value, path + ("value",))
    return []


def _render_expression(sql: str, t: DuckLakeType, where: str) -> str:
    if ";" in sql:
        raise SpecError(f"{where}: a default expression is one SQL expression")
    with _lock:
        con = _duckdb()
        try:
            con.execute(f"CREATE OR REPLACE TEMP TABLE __default_probe (x {to_duckdb_sql(t)} DEFAULT ({sql}))")
            row = con.execute(
                "SELECT column_default FROM duckdb_columns() WHERE table_name = '__default_probe'"
            ).fetchone()
            assert row is not None  # the table was just created
            rendered = row[0]
        except Exception as exc:
            raise SpecError(
                f"{where}: default expression {sql!r} is not valid DuckDB SQL: {str(exc).splitlines()[0]}"
            ) from None
        finally:
            con.execute("DROP TABLE IF EXISTS __default_probe")
    return rendered


def for_added_column(d: Default, where: str) -> Default:
    """The form of a create-time default that DuckDB accepts for a column added later:
    booleans as literals; expressions are refused (DuckLake would have no value for the
    rows written before the column existed)."""
    if not d.is_expression:
        return d
    if d.value in BOOLEAN_EXPRESSIONS:
        text = BOOLEAN_EXPRESSIONS[d.value]
        return Default(text, initial=text)
    raise SpecError(
        f"{where}: an expression default can only be given when the column is created with its table "
        "(rows written before would have no value); give a constant"
    )
