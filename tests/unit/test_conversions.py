"""The heavy-weight conversions (model/conversions.py): Doris's list in DuckLake types, a
sentence for everything else, and the SQL the job evaluates (run here by DuckDB: NULL exactly
for the values that do not convert)."""

from __future__ import annotations

import datetime
from decimal import Decimal

import duckdb
import pytest

from ducklake_operator.model.conversions import column_rewrite_problem, conversion_problem, conversion_sql
from ducklake_operator.model.maintenance_params import parse_column_path, render_column_path
from ducklake_operator.model.types import parse_type, to_duckdb_sql

ALLOWED = [
    ("int32", "int128"),
    ("uint16", "int32"),
    ("uint32", "uint64"),
    ("int64", "float64"),
    ("int16", "float32"),
    ("int32", "decimal(10,0)"),
    ("int8", "decimal(5,2)"),
    ("decimal(10,2)", "decimal(6,1)"),
    ("decimal(10,2)", "decimal(20,4)"),
    ("int64", "varchar"),
    ("float32", "varchar"),
    ("decimal(10,2)", "varchar"),
    ("varchar", "int16"),
    ("varchar", "float64"),
    ("varchar", "decimal(8,3)"),
    ("varchar", "date"),
    ("timestamp", "date"),
    ("timestamp_ms", "date"),
    ("date", "timestamp"),
    ("date", "timestamp_ns"),
    ("int32", "date"),
    ("uint32", "date"),
    ("boolean", "varchar"),
]
REFUSED = [
    ("int64", "int32"),  # narrower
    ("int32", "uint64"),  # negative values have no place
    ("uint64", "int64"),  # not wider
    ("int32", "float32"),  # float32 holds 24 bits exactly
    ("int32", "decimal(9,0)"),  # no room for 2^31
    ("int16", "date"),  # no yyyymmdd fits
    ("uint16", "date"),
    ("float64", "int64"),
    ("float64", "decimal(10,2)"),
    ("varchar", "boolean"),
    ("boolean", "int32"),
    ("varchar", "timestamp"),
    ("date", "varchar"),
    ("timestamptz", "date"),
    ("date", "timestamptz"),
    ("uuid", "varchar"),
    ("varchar", "varchar"),
]


@pytest.mark.parametrize("old, new", ALLOWED)
def test_doris_conversions_are_allowed(old: str, new: str) -> None:
    assert conversion_problem(parse_type(old), parse_type(new)) is None


@pytest.mark.parametrize("old, new", REFUSED)
def test_other_changes_are_refused_with_both_types(old: str, new: str) -> None:
    problem = conversion_problem(parse_type(old), parse_type(new))
    assert problem is not None and f"{parse_type(old)} → {parse_type(new)}" in problem
    assert "\n" not in problem


def test_where_a_rewrite_cannot_go() -> None:
    int32, text = parse_type("int32"), parse_type("varchar")
    inside_list = column_rewrite_problem(("l", "element"), ("list",), text, int32, False)
    assert inside_list is not None and "struct fields" in inside_list and "list" in inside_list
    keyed = column_rewrite_problem(("v",), (), text, int32, True)
    assert keyed is not None and "partitioned by it" in keyed
    assert column_rewrite_problem(("s", "a"), ("struct",), text, int32, False) is None
    refused = column_rewrite_problem(("s", "a"), ("struct",), text, parse_type("boolean"), False)
    assert refused is not None and refused.startswith("s.a: varchar → boolean")


# (old type, new type, [(value, converted)]): converted None means "does not convert"
VALUES = [
    (
        "varchar",
        "int32",
        [("12", 12), (" -7 ", -7), ("+5", 5), ("1.5", None), ("0x1F", None), ("1_000", None), ("", None)],
    ),
    ("varchar", "int32", [("99999999999", None), ("abc", None)]),
    # strict: what DuckDB's own cast also reads (underscores, hex, exponents, fractions, tabs) does not convert
    (
        "varchar",
        "int64",
        [(" 12 ", 12), ("+7", 7), ("-0", 0), ("007", 7), ("-42", -42), ("1_000", None), ("0x10", None)]
        + [("1e3", None), ("1.5", None), ("\t1", None), ("", None), (" ", None), ("--1", None), (str(2**63), None)],
    ),
    ("varchar", "float64", [("1.5", 1.5), ("1e3", 1000.0), (".5", 0.5), ("-inf", float("-inf")), ("1,5", None)]),
    ("varchar", "decimal(6,2)", [("12.345", Decimal("12.35")), ("123456", None), ("x", None)]),
    (
        "varchar",
        "date",
        [
            ("2024-01-15", datetime.date(2024, 1, 15)),
            ("24-01-15", datetime.date(2024, 1, 15)),
            ("20240115", datetime.date(2024, 1, 15)),
            ("240115", datetime.date(2024, 1, 15)),
            ("2024/1/5", datetime.date(2024, 1, 5)),
            ("69/01/01", datetime.date(1969, 1, 1)),
            ("2024-02-30", None),
            ("2024.01.15", None),
            ("15/01/2024", None),
            ("1/1/24", None),
        ],
    ),
    ("int32", "date", [(20240115, datetime.date(2024, 1, 15)), (20240230, None), (240115, None), (-20240115, None)]),
    ("int64", "varchar", [(-42, "-42")]),
    ("boolean", "varchar", [(True, "true"), (False, "false")]),
    ("decimal(10,2)", "varchar", [(Decimal("1.50"), "1.50")]),
    ("decimal(10,2)", "decimal(4,1)", [(Decimal("123.45"), Decimal("123.5")), (Decimal("12345.6"), None)]),
    ("int64", "int128", [(2**62, 2**62)]),
    # int128 is a double in data files: only what a double holds exactly survives a rewrite
    ("uint64", "int128", [(2**53, 2**53), (2**64 - 2**11, 2**64 - 2**11), (2**53 + 1, None), (2**64 - 1, None)]),
    ("int64", "int128", [(-(2**53), -(2**53)), (2**63 - 1, None)]),
    ("varchar", "int128", [("9007199254740993", None), ("-9007199254740992", -(2**53)), (str(2**127 - 1), None)]),
    ("uint64", "uint128", [(2**64 - 1, None), (12, 12)]),
    ("timestamp", "date", [(datetime.datetime(2019, 12, 9, 21, 47, 5), datetime.date(2019, 12, 9))]),
    ("date", "timestamp", [(datetime.date(2019, 12, 9), datetime.datetime(2019, 12, 9))]),
    ("date", "timestamp_ns", [(datetime.date(9999, 12, 31), None)]),
]


@pytest.mark.parametrize("old, new, values", VALUES)
def test_conversion_sql_is_null_exactly_for_values_that_do_not_convert(
    old: str, new: str, values: list[tuple[object, object]]
) -> None:
    src, dst = parse_type(old), parse_type(new)
    con = duckdb.connect()
    try:
        for value, expected in values:
            got = con.execute(
                f"SELECT {conversion_sql(src, dst, f'CAST($v AS {to_duckdb_sql(src)})')}", {"v": value}
            ).fetchone()
            assert got == (expected,), (value, got)
        assert con.execute(f"SELECT {conversion_sql(src, dst, f'NULL::{to_duckdb_sql(src)}')}").fetchone() == (None,)
    finally:
        con.close()


@pytest.mark.parametrize(
    "text, path",
    [("v", ("v",)), ("s.a", ("s", "a")), ('"a.b".c', ("a.b", "c")), ('"say ""hi"""', ('say "hi"',))],
)
def test_column_paths_read_back(text: str, path: tuple[str, ...]) -> None:
    assert parse_column_path(text) == path
    assert parse_column_path(render_column_path(path)) == path
    assert parse_column_path(list(path)) == path


@pytest.mark.parametrize("bad", ["", "a..b", '"open', 3, ["a", ""]])
def test_bad_column_paths_are_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="is not a column name"):
        parse_column_path(bad)
