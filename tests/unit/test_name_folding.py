"""Names match as DuckDB 1.5.5 matches them: case-insensitively in ASCII only. Each pair is
put to DuckDB with a DuckLake catalog attached (a table created under one name, looked up
by the other; two columns with the two names in one table), and ``same_name`` must answer
as DuckDB does."""

from __future__ import annotations

import duckdb
import pytest

from ducklake_operator.model.duckdb_keywords import KEYWORDS
from ducklake_operator.model.names import column_reference_sql, find_named, fold, same_name
from ducklake_operator.model.state import CatalogState, SchemaState, SnapshotInfo, TableState
from support import duck

PAIRS = [
    ("orders", "ORDERS"),
    ("Orders", "oRdErS"),
    ("Straße", "STRASSE"),  # Unicode case folding would make these one name
    ("Straße", "strasse"),
    ("Straße", "STRAßE"),  # only the ASCII letters differ
    ("Ä", "ä"),
    ("Émile", "émile"),
    ("K", "\u212a"),  # KELVIN SIGN: lower-cases to k in Unicode
    ("ǅ", "ǆ"),
    ("Σ", "σ"),
    ("İ", "i"),
    ("ﬁ", "FI"),
    ("a_1", "A_1"),
]


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    root = tmp_path_factory.mktemp("names")
    con = duck.connect()
    con.execute(f"ATTACH 'ducklake:sqlite:{root}/catalog.sqlite' AS lk (DATA_PATH '{root}/data/')")
    return con


@pytest.mark.parametrize("created, asked", PAIRS)
def test_same_name_answers_as_duckdb(lake: duckdb.DuckDBPyConnection, created: str, asked: str) -> None:
    schema = f"s{PAIRS.index((created, asked))}"
    lake.execute(f"CREATE SCHEMA lk.{schema}")
    lake.execute(f"CREATE TABLE lk.{schema}.{quoted(created)} (x INTEGER)")
    try:
        lake.execute(f"SELECT * FROM lk.{schema}.{quoted(asked)}")
        table_found = True
    except duckdb.CatalogException:
        table_found = False
    try:
        lake.execute(f"CREATE TABLE lk.{schema}.columns ({quoted(created)} INTEGER, {quoted(asked)} INTEGER)")
        columns_distinct = True
    except duckdb.CatalogException:
        columns_distinct = False
    assert table_found == same_name(created, asked) == (not columns_distinct)


def test_lookups_fold_the_same_way() -> None:
    assert fold("Straße") == "straße" and fold("ÄBC") == "Äbc"
    assert find_named({"Orders": 1, "Ä": 2}, "ORDERS") == 1 and find_named({"Ä": 2}, "ä") is None
    s = SchemaState(1, "u", "Sales", "Sales/", True, 1)
    t = TableState(1, "u", 1, "Sales", "Orders", "Orders/", True, 1, (), 1)
    state = CatalogState(SnapshotInfo(1, None, 1, 1, 1), "1.0", "/d/", {}, {"Sales": s}, {("Sales", "Orders"): t})
    assert state.schema("SALES") is s and state.table("sales", "ORDERS") is t
    assert state.schema("Säles") is None and state.table("Sales", "Ördersß") is None


REFERENCES = ["x1", "_x", "Mixed", "UPPER", "aB9_", "my col", "1abc", 'a"b', "ä", "select", "Order", "name", "year"]


def test_sort_expressions_name_columns_as_duckdb_renders_them(lake: duckdb.DuckDBPyConnection) -> None:
    lake.execute("CREATE SCHEMA lk.refs")
    for i, name in enumerate(REFERENCES):
        lake.execute(f"CREATE TABLE lk.refs.t{i} (c INTEGER, {quoted(name)} INTEGER)")
        lake.execute(f"ALTER TABLE lk.refs.t{i} SET SORTED BY ({quoted(name)})")
    rendered = dict(
        lake.execute(
            "SELECT t.table_name, e.expression FROM __ducklake_metadata_lk.ducklake_sort_expression e "
            "JOIN __ducklake_metadata_lk.ducklake_table t USING (table_id) WHERE t.end_snapshot IS NULL"
        ).fetchall()
    )
    assert [rendered[f"t{i}"] for i in range(len(REFERENCES))] == [column_reference_sql(n) for n in REFERENCES]


def test_the_keyword_list_is_duckdbs() -> None:
    assert KEYWORDS == {r[0] for r in duckdb.connect().execute("SELECT keyword_name FROM duckdb_keywords()").fetchall()}
