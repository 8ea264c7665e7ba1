"""Manifest defaults at CREATE TABLE against DuckDB's own: a YAML string stores what the YAML
constant of the same meaning stores (a boolean's ``"true"`` is DuckDB's ``DEFAULT true``, not
its ``DEFAULT 'true'``), and a constant written the SQL way (``"'new'"``) is stored with its
quotes, as DuckDB does, with a warning in the plan. (Added columns and SET DEFAULT: the
cases in test_alter_vs_duckdb.py.)"""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from ducklake_operator.api.load import parse_manifest
from ducklake_operator.api.v1alpha1.table import TableSpec
from ducklake_operator.catalog import Catalog
from ducklake_operator.errors import SpecError
from ducklake_operator.use_cases import apply_plan, plan_for
from support import duck
from support.dump import dump
from support.manifests import parse_as

UTC2 = datetime.timezone(datetime.timedelta(hours=2))
# (DuckDB's column definition, the manifest's default for a column of the same name and type)
COLUMNS: list[tuple[str, str, object]] = [
    ("b1 BOOLEAN DEFAULT true", "boolean", True),
    ("b2 BOOLEAN DEFAULT true", "boolean", "true"),
    ("b3 BOOLEAN DEFAULT false", "boolean", "f"),
    ("b4 BOOLEAN DEFAULT false", "boolean", "FALSE"),
    ("i1 INTEGER DEFAULT 5", "int32", 5),
    ("i2 INTEGER DEFAULT 5", "int32", "5"),
    ("d1 DOUBLE DEFAULT 1.5", "float64", 1.5),
    ("d2 DOUBLE DEFAULT 1.5", "float64", "1.5"),
    ("s1 VARCHAR DEFAULT 'new'", "varchar", "new"),
    ("s2 VARCHAR DEFAULT '''new'''", "varchar", "'new'"),
    ("dt DATE DEFAULT '2024-01-01'", "date", datetime.date(2024, 1, 1)),  # YAML's unquoted 2024-01-01
    (
        "ts TIMESTAMPTZ DEFAULT '2024-01-01 10:00:00+02:00'",
        "timestamptz",
        datetime.datetime(2024, 1, 1, 10, tzinfo=UTC2),
    ),
    ("e INTEGER DEFAULT (1 + 2)", "int32", {"expression": "1+2"}),
]


def table_doc(columns: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "ducklake.dev/v1alpha1",
        "kind": "DuckLakeTable",
        "metadata": {"name": "t"},
        "spec": {"catalogRef": {"name": "lake"}, "name": "t", "columns": columns},
    }


def manifest_columns() -> list[dict[str, Any]]:
    return [{"name": "id", "type": "int32"}] + [
        {"name": sql.split()[0], "type": type_, "default": default} for sql, type_, default in COLUMNS
    ]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_create_table_defaults_are_stored_as_duckdb_stores_them(make_location, kind: str, tmp_path) -> None:
    theirs = Catalog.create(make_location(kind), str(tmp_path / "a") + "/")
    ours = Catalog.create(make_location(kind), str(tmp_path / "b") + "/")
    con = duck.attach(theirs.location, "lk")
    con.execute(f"CREATE TABLE lk.t(id INTEGER, {', '.join(sql for sql, _, _ in COLUMNS)})")
    result = apply_plan(ours, parse_as(TableSpec, table_doc(manifest_columns())))
    assert result.commit is not None and not result.plan.is_refused

    assert dump(ours.location, ["ducklake_column"]) == dump(theirs.location, ["ducklake_column"])
    mine = duck.attach(ours.location, "lk")
    for c in (con, mine):
        c.execute("INSERT INTO lk.t (id) VALUES (1)")
    assert mine.execute("FROM lk.t").fetchall() == con.execute("FROM lk.t").fetchall()
    (row,) = mine.execute("FROM lk.t").fetchall()
    assert row[:11] == (1, True, True, False, False, 5, 5, 1.5, 1.5, "new", "'new'")
    assert row[11:] == (datetime.date(2024, 1, 1), datetime.datetime(2024, 1, 1, 8, tzinfo=datetime.UTC), 3)
    # applied: the YAML strings compare equal to what is stored, so nothing is left to do
    assert apply_plan(ours, parse_as(TableSpec, table_doc(manifest_columns()))).plan.is_empty


def test_a_default_in_sql_quotes_is_a_warning_in_the_plan(catalog: Catalog) -> None:
    plan = plan_for(parse_as(TableSpec, table_doc(manifest_columns())), catalog.state())
    warning = (
        "warning: s2: default \"'new'\" is stored with its quote marks (a manifest default is a value, not SQL); "
        "did you mean `new`?"
    )
    assert plan.notes == (warning,) and f"# {warning}" in plan.render() and not plan.is_refused
    apply_plan(catalog, parse_as(TableSpec, table_doc(manifest_columns())))
    # still said once the column exists, when its default changes, and for nested fields
    changed = manifest_columns()
    next(c for c in changed if c["name"] == "s2")["default"] = "'newer'"
    changed.append(
        {"name": "s3", "type": "list", "element": {"type": "struct", "fields": [{"name": "a", "type": "varchar"}]}}
    )
    changed[-1]["element"]["fields"][0]["default"] = "'x'"
    notes = plan_for(parse_as(TableSpec, table_doc(changed)), catalog.state()).notes
    assert [n.split(":")[1].strip() for n in notes] == ["s2", "s3.element.a"]
    assert "did you mean `newer`?" in notes[0] and "did you mean `x`?" in notes[1]


@pytest.mark.parametrize(
    "type_, default, hint",
    [("int32", "'5'", "did you mean `5`?"), ("date", "'2024-01-01'", "did you mean `2024-01-01`?"), ("int32", "x", "")],
)
def test_a_default_in_sql_quotes_that_is_not_valid_says_what_was_meant(type_: str, default: str, hint: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_manifest(table_doc([{"name": "c", "type": type_, "default": default}]))
    (problem,) = err.value.problems
    assert problem.startswith(f"spec.columns[0].default: default {default!r} is not a valid {type_}")
    assert problem.endswith(hint) and ("did you mean" in problem) == bool(hint)
