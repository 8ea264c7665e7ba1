"""Each of Doris's conversions (model/conversions.py) as a whole rewriteColumnType job, checked
through DuckDB 1.5.5: a column of the old type in two files (one with deletions) and in
inlined rows, the job, then the new type and converted values now with the same rowids,
the old type and values at every earlier snapshot, answers from statistics equal to a full
scan's, each output's column statistics those DuckDB writes for the same rows in the new
type, and DuckDB inserting rows of the new type and merging the files afterwards.

tests/unit/test_conversions.py checks the SQL of each conversion value by value; here the
job's plumbing around it (physical widths, inlined rows, statistics, defaults) is."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from ducklake_jobs.job_template import run_operation
from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.errors import JobFailed
from ducklake_operator.model.types import parse_type, to_duckdb_sql
from support import duck
from support.dump import dump
from support.job_lakes import Lake, new_lake
from support.stats_oracle import assert_answers_exact, file_stats

FILE_ROWS = 40  # rows of each of the two files; the inlined rows follow them, one per value
DELETED = (5, 47)  # a deletion in each file


@dataclass(frozen=True)
class Conversion:
    old: str  # DuckDB type of the column
    new: str  # DuckLake type the job gives it
    values: tuple[tuple[str, Any], ...]  # (SQL of an old value, what DuckDB reads after the job)
    params: dict[str, str] = field(default_factory=dict)


def dates_in(fmt: str) -> Conversion:
    days = (datetime.date(2024, 1, 5), datetime.date(1999, 12, 31), datetime.date(2068, 2, 29), None)
    return Conversion(
        "VARCHAR",
        "date",
        tuple((f"'{d.strftime(fmt)}'" if d else "NULL", d) for d in days) + (("' '", None),),
        {"onCastError": "null"},  # ' ' is no date
    )


CONVERSIONS: dict[str, Conversion] = {
    # decimal precision changes, some changing the Parquet physical type (int32, int64, int128 inside)
    "decimal(9,2)-decimal(20,4)": Conversion(
        "DECIMAL(9,2)",
        "decimal(20,4)",
        (
            ("1.50", Decimal("1.5000")),
            ("-9999999.99", Decimal("-9999999.9900")),
            ("NULL", None),
            ("0", Decimal("0.0000")),
        ),
    ),
    "decimal(4,1)-decimal(18,6)": Conversion(
        "DECIMAL(4,1)",
        "decimal(18,6)",
        (("-999.9", Decimal("-999.900000")), ("0.5", Decimal("0.500000")), ("NULL", None)),
    ),
    "decimal(18,4)-decimal(9,2)": Conversion(
        "DECIMAL(18,4)",
        "decimal(9,2)",
        (("1.5555", Decimal("1.56")), ("-1234567.8949", Decimal("-1234567.89")), ("NULL", None)),
    ),
    "decimal(38,10)-decimal(10,3)": Conversion(
        "DECIMAL(38,10)",
        "decimal(10,3)",
        (("1234567.0123456789", Decimal("1234567.012")), ("-0.0005", Decimal("-0.001"))),
    ),
    "decimal-overflow-null": Conversion(
        "DECIMAL(10,2)",
        "decimal(4,1)",
        (("1.25", Decimal("1.3")), ("12345.60", None), ("-999.94", Decimal("-999.9")), ("NULL", None)),
        {"onCastError": "null"},
    ),
    # DATETIME -> DATE, DATE -> DATETIME
    **{
        f"{ts.lower()}-date": Conversion(
            ts,
            "date",
            (
                ("'2019-12-09 21:47:05'", datetime.date(2019, 12, 9)),
                ("'1969-12-31 23:59:59'", datetime.date(1969, 12, 31)),
                ("'2024-02-29 00:00:00'", datetime.date(2024, 2, 29)),
                ("NULL", None),
            ),
        )
        for ts in ("TIMESTAMP", "TIMESTAMP_MS", "TIMESTAMP_NS", "TIMESTAMP_S")
    },
    **{
        f"date-{ts}": Conversion(
            "DATE",
            ts,
            (
                ("'2019-12-09'", datetime.datetime(2019, 12, 9)),
                ("'1969-12-31'", datetime.datetime(1969, 12, 31)),
                ("NULL", None),
            ),
        )
        for ts in ("timestamp", "timestamp_s", "timestamp_ms", "timestamp_ns")
    },
    # yyyymmdd integers
    **{
        f"{t.lower()}-date": Conversion(
            t,
            "date",
            (("20191209", datetime.date(2019, 12, 9)), ("10000101", datetime.date(1000, 1, 1)), ("NULL", None)),
        )
        for t in ("INTEGER", "BIGINT", "UINTEGER")
    },
    "int32-date-invalid-null": Conversion(
        "INTEGER", "date", (("20240230", None), ("20240229", datetime.date(2024, 2, 29))), {"onCastError": "null"}
    ),
    # numbers to varchar, in DuckDB's text
    "float32-varchar": Conversion(
        "FLOAT",
        "varchar",
        (("0.1", "0.1"), ("-1.5", "-1.5"), ("1e20", "1e+20"), ("'nan'", "nan"), ("'-inf'", "-inf"), ("NULL", None)),
    ),
    "float64-varchar": Conversion(
        "DOUBLE", "varchar", (("0.1", "0.1"), ("'-0.0'", "-0.0"), ("123456789.125", "123456789.125"), ("NULL", None))
    ),
    "decimal-varchar": Conversion(
        "DECIMAL(10,2)",
        "varchar",
        (("1.5", "1.50"), ("-0.01", "-0.01"), ("12345678.90", "12345678.90"), ("NULL", None)),
    ),
    "decimal(38,4)-varchar": Conversion(
        "DECIMAL(38,4)", "varchar", (("12345678901234567890.1234", "12345678901234567890.1234"), ("NULL", None))
    ),
    # varchar to numbers
    "varchar-float64": Conversion(
        "VARCHAR",
        "float64",
        (("'1.5'", 1.5), ("' -2e3 '", -2000.0), ("'inf'", float("inf")), ("'nan'", float("nan")), ("NULL", None)),
    ),
    "varchar-decimal(20,4)": Conversion(
        "VARCHAR",
        "decimal(20,4)",
        (
            ("'1.5'", Decimal("1.5000")),
            ("'-12.34567'", Decimal("-12.3457")),
            ("'9999999999999999'", Decimal("9999999999999999.0000")),
            ("NULL", None),
        ),
    ),
    "varchar-decimal(8,3)-null": Conversion(
        "VARCHAR",
        "decimal(8,3)",
        (("'12.5'", Decimal("12.500")), ("'123456'", None), ("'x'", None), ("NULL", None)),
        {"onCastError": "null"},
    ),
    # unsigned to wider signed
    "uint8-int16": Conversion("UTINYINT", "int16", (("255", 255), ("0", 0), ("NULL", None))),
    "uint16-int32": Conversion("USMALLINT", "int32", (("65535", 65535), ("7", 7), ("NULL", None))),
    "uint32-int64": Conversion("UINTEGER", "int64", (("4294967295", 4294967295), ("NULL", None))),
    "uint64-int128": Conversion(  # int128 is a double in data files: 2^64-1 is not exact
        "UBIGINT",
        "int128",
        (("9007199254740992", 2**53), ("3", 3), ("NULL", None), ("18446744073709551615", None)),
        {"onCastError": "null"},
    ),
    # varchar to date, in each of Doris's formats
    **{
        f"varchar-date-{fmt.replace('%', '')}": dates_in(fmt)
        for fmt in ("%Y-%m-%d", "%y-%m-%d", "%Y%m%d", "%y%m%d", "%Y/%m/%d", "%y/%m/%d")
    },
    # Doris: everything but DATE and DATETIME to STRING
    "boolean-varchar": Conversion("BOOLEAN", "varchar", (("true", "true"), ("false", "false"), ("NULL", None))),
}
ON_POSTGRES = ("decimal(9,2)-decimal(20,4)", "decimal(18,4)-decimal(9,2)", "decimal-overflow-null", "timestamp-date")


def build(location: CatalogLocation, data_path: str, old: str, literals: list[str]) -> Lake:
    """``main.t(id, c)``: two files cycling through the values (a row of each file deleted),
    then one inlined row per value; row ids are the ids."""
    values = ", ".join(f"({k}, CAST({v} AS {old}))" for k, v in enumerate(literals))
    n = len(literals)

    def insert(lo: int, hi: int) -> str:
        return f"INSERT INTO lk.t SELECT i, c FROM range({lo}, {hi}) r(i) JOIN src ON k = i % {n} ORDER BY i"

    return new_lake(
        location,
        data_path,
        [
            f"CREATE TEMP TABLE src AS SELECT * FROM (VALUES {values}) v(k, c)",
            f"CREATE TABLE lk.t(id INTEGER, c {old})",
            insert(0, FILE_ROWS),
            insert(FILE_ROWS, 2 * FILE_ROWS),
            f"DELETE FROM lk.t WHERE id IN {DELETED}",
            insert(2 * FILE_ROWS, 2 * FILE_ROWS + n),
        ],
    )


def rows_as_text(rows: list[tuple[Any, ...]]) -> list[str]:
    """Rows compared as their reprs: NaN equals NaN, a decimal's scale counts."""
    return [repr(r) for r in rows]


def assert_same_history(after: dict[str, Any], before: dict[str, Any]) -> None:
    """Every snapshot ``before`` read (``duck.observe_typed``) reads the same rows and types."""
    for v, (rows, types) in before["history"].items():
        assert rows_as_text(after["history"][v][0]) == rows_as_text(rows), f"snapshot {v} reads other rows"
        assert after["history"][v][1] == types, f"snapshot {v} reads other types"


def duckdb_type(ducklake_type: str) -> str:
    """How DuckDB names a DuckLake type."""
    with closing(duckdb.connect()) as con:
        return str(duck.scalar(con, f"SELECT typeof(CAST(NULL AS {to_duckdb_sql(parse_type(ducklake_type))}))"))


def assert_stats_are_duckdbs(ours: CatalogLocation, twin: CatalogLocation, twin_path: str, new_sql: str) -> None:
    """DuckDB writes each of our output files' rows in a file of its own on a twin lake (a
    column of the new type, no inlining): the same file and table column statistics."""
    con = duck.attach(ours, con=duck.connect())
    try:
        outputs = [r[0] for r in con.execute("SELECT data_file FROM ducklake_list_files('lk', 't')").fetchall()]
    finally:
        con.close()
    new_lake(
        twin,
        twin_path,
        [
            "CALL lk.set_option('data_inlining_row_limit', 0)",
            f"CREATE TABLE lk.t(id INTEGER, c {new_sql})",
            *[f"INSERT INTO lk.t SELECT id, c FROM read_parquet('{path}')" for path in outputs],
        ],
    )
    assert file_stats(ours) == file_stats(twin)
    assert dump(ours)["ducklake_table_column_stats"] == dump(twin)["ducklake_table_column_stats"]


@pytest.mark.parametrize(
    "kind, name",
    [("sqlite", name) for name in CONVERSIONS] + [("postgres", name) for name in ON_POSTGRES],
    ids=[name for name in CONVERSIONS] + [f"postgres-{name}" for name in ON_POSTGRES],
)
def test_conversion_as_a_job(
    make_location: Callable[[str], CatalogLocation], tmp_path: Path, kind: str, name: str
) -> None:
    case = CONVERSIONS[name]
    location = make_location(kind)
    build(location, str(tmp_path / "data") + "/", case.old, [v for v, _ in case.values])
    before = duck.observe_typed(location, "count(*)", since=1)
    with closing(Catalog.open(location)) as catalog:
        report = run_operation(catalog, "rewriteColumnType", "main.t", {"column": "c", "type": case.new, **case.params})
    n = len(case.values)
    assert report["committedSnapshot"] is not None and report["inlinedRowsRewritten"] == n
    nulled = sum(1 for rowid, id_, value in before["now"][0] if value is not None and case.values[id_ % n][1] is None)
    assert report["valuesNulled"] == nulled

    after = duck.observe_typed(location, "count(*)", since=1)
    expected = [(rowid, id_, case.values[id_ % n][1]) for rowid, id_, _ in before["now"][0]]
    assert rows_as_text(after["now"][0]) == rows_as_text(expected)  # same rowids, converted values
    new_sql = duckdb_type(case.new)
    assert after["now"][1] == [("id", "INTEGER"), ("c", new_sql)]
    assert_same_history(after, before)  # the old type and values before the job
    assert_answers_exact(location)
    assert_stats_are_duckdbs(location, make_location(kind), str(tmp_path / "twin") + "/", new_sql)

    # DuckDB goes on: rows of the new type inlined and in a file, its merge (of our outputs and
    # its file into one) and flush
    con = duck.attach(location)
    try:
        con.execute(f"INSERT INTO lk.t SELECT 1000 + id, c FROM lk.t WHERE id >= {2 * FILE_ROWS}")
        con.execute("INSERT INTO lk.t SELECT 2000 + id, c FROM lk.t WHERE id < 1000")
        con.execute("CALL ducklake_merge_adjacent_files('lk')")
        assert duck.scalar(con, "SELECT count(*) FROM ducklake_list_files('lk', 't')") == 1
        con.execute("CALL ducklake_flush_inlined_data('lk')")
    finally:
        con.close()
    final = duck.observe_typed(location, "count(*)", since=1)
    assert rows_as_text([r for r in final["now"][0] if r[1] < 1000]) == rows_as_text(after["now"][0])
    converted = {i: v for _, i, v in after["now"][0]}
    assert {i: repr(v) for _, i, v in final["now"][0] if i >= 1000} == {
        **{1000 + i: repr(v) for i, v in converted.items() if i >= 2 * FILE_ROWS},
        **{2000 + i: repr(v) for i, v in converted.items()},
    }
    assert_same_history(final, after)
    assert_answers_exact(location)


DECIMAL_OVERFLOW = ("DECIMAL(10,2)", "decimal(4,1)", ["1.25", "12345.60", "-999.94", "NULL"], "'12345.60'", "")


@pytest.mark.parametrize(
    "kind, old, new, literals, named, why",
    [
        ("sqlite", *DECIMAL_OVERFLOW),
        ("postgres", *DECIMAL_OVERFLOW),
        (
            "sqlite",
            "UBIGINT",
            "int128",
            ["3", "18446744073709551615", "0", "NULL"],
            "'18446744073709551615'",
            " (DuckLake's data files hold int128 as a double, exact for integers up to ±2^53)",
        ),
    ],
    ids=["decimal-sqlite", "decimal-postgres", "uint64-beyond-a-double"],
)
def test_values_that_do_not_convert_fail_the_job_naming_them(
    make_location: Callable[[str], CatalogLocation],
    tmp_path: Path,
    kind: str,
    old: str,
    new: str,
    literals: list[str],
    named: str,
    why: str,
) -> None:
    """The second value does not convert: in the files (one of its rows deleted) and among
    the inlined rows. The job fails naming the first five by row id; nothing changes."""
    lake = build(make_location(kind), str(tmp_path / "data") + "/", old, literals)
    snapshot, files, rows = lake.snapshot(), lake.files(), lake.rows()
    with closing(Catalog.open(lake.location)) as catalog:
        with pytest.raises(JobFailed) as failed:
            run_operation(catalog, "rewriteColumnType", "main.t", {"column": "c", "type": new})
    failing = [i for i in range(2 * FILE_ROWS + len(literals)) if i % len(literals) == 1 and i not in DELETED]
    assert (
        f"{len(failing)} value(s) of c do not convert from {parse_type(old.lower())} to {new}: "
        + ", ".join(f"{named} (row id {i})" for i in failing[:5])
        + f"{why}; nothing was committed"
    ) in str(failed.value)
    assert lake.snapshot() == snapshot and lake.files() == files and lake.rows() == rows


@pytest.mark.parametrize(
    "old, default, new, expected",
    [
        ("DECIMAL(9,2)", "1.5", "decimal(20,4)", Decimal("1.5000")),
        ("TIMESTAMP_NS", "'2019-12-09 21:47:05.123456789'", "date", datetime.date(2019, 12, 9)),
        ("INTEGER", "20191209", "date", datetime.date(2019, 12, 9)),
        ("VARCHAR", "'24/1/5'", "date", datetime.date(2024, 1, 5)),
        ("DECIMAL(10,2)", "1.5", "varchar", "1.50"),
        ("DOUBLE", "0.1", "varchar", "0.1"),
    ],
    ids=["decimal-wider", "timestamp_ns-date", "int32-date", "varchar-date", "decimal-varchar", "float64-varchar"],
)
def test_a_column_added_later_gets_its_defaults_converted(
    make_location: Callable[[str], CatalogLocation], tmp_path: Path, old: str, default: str, new: str, expected: Any
) -> None:
    """A file written before the column was added (its rows read the initial default) and
    inlined rows of the default: the job converts them, and DuckDB's next default insert
    writes the default in the new type."""
    location = make_location("sqlite")
    new_lake(
        location,
        str(tmp_path / "data") + "/",
        [
            "CREATE TABLE lk.t(id INTEGER)",
            f"INSERT INTO lk.t SELECT i FROM range({FILE_ROWS}) r(i)",
            f"ALTER TABLE lk.t ADD COLUMN c {old} DEFAULT {default}",
            f"INSERT INTO lk.t (id) VALUES ({FILE_ROWS})",
        ],
    )
    before = duck.observe_typed(location, "count(*)", since=1)
    with closing(Catalog.open(location)) as catalog:
        run_operation(catalog, "rewriteColumnType", "main.t", {"column": "c", "type": new})
    duck.run_workload(location, ["INSERT INTO lk.t (id) VALUES (1000)"])
    after = duck.observe_typed(location, "count(*)", since=1)
    assert rows_as_text(after["now"][0]) == rows_as_text(
        [(rowid, id_, expected) for rowid, id_, _ in before["now"][0]] + [(FILE_ROWS + 1, 1000, expected)]
    )
    assert_same_history(after, before)
