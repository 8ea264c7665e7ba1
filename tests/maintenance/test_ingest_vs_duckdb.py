"""ingest through DuckDB 1.5.5: the four examples and the widest-type table of
docs/ingest-schema-evolution.md §4, §5 (types, columns, their evolved_from comments, rows),
each source format, partitioned and sorted tables,
and a differential check against DuckDB doing the same by hand (ALTER TABLE ADD COLUMN and
INSERT in one transaction) on SQLite and PostgreSQL catalogs: the same catalog rows, the same
rows and types now and at every earlier snapshot, DuckDB inserting and merging afterwards.
Bad input fails with one clear line, naming file and line, and commits nothing."""

from __future__ import annotations

import datetime
import decimal
import gzip
import json
from collections.abc import Callable, Iterable
from contextlib import closing
from pathlib import Path
from typing import Any

import duckdb
import pytest

from ducklake_jobs.job_template import run_operation
from ducklake_jobs.task_runners import Runner, run_in_process, run_on_spark
from ducklake_operator.api.v1alpha1.table import TableSpec
from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.errors import DuckLakeError
from ducklake_operator.use_cases import apply_plan
from support import duck, manifests
from support.dump import dump
from support.ingest_runs import ingest
from support.manifests import parse_as
from support.widest_type_table import DUCKDB, WIDEST_TABLE


def new_lake(location: CatalogLocation, data: Path, *sql: str) -> CatalogLocation:
    Catalog.create(location, str(data) + "/").close()
    duck.run_workload(location, list(sql))
    return location


def write_json(path: Path, records: Iterable[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def read(location: CatalogLocation, sql: str) -> list[tuple[Any, ...]]:
    con = duck.attach(location, con=duck.connect())
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def columns(location: CatalogLocation, table: str = "t") -> list[tuple[str, str, str | None]]:
    """(name, DuckDB type, comment) of the top-level columns, as DuckDB reads them."""
    return read(
        location,
        f"SELECT column_name, data_type, comment FROM duckdb_columns() WHERE database_name = 'lk' "
        f"AND table_name = '{table}' ORDER BY column_index",
    )


def comments(location: CatalogLocation) -> dict[str, str]:
    """Every live column comment (nested fields too), by the column's name path."""
    rows = read(
        location,
        "SELECT c.column_id, c.parent_column, c.column_name, g.value FROM __ducklake_metadata_lk.ducklake_column c "
        "LEFT JOIN __ducklake_metadata_lk.ducklake_column_tag g ON g.column_id = c.column_id AND "
        "g.table_id = c.table_id AND g.end_snapshot IS NULL AND g.key = 'comment' WHERE c.end_snapshot IS NULL",
    )
    by_id = {r[0]: r for r in rows}

    def path(cid: int) -> str:
        _, parent, name, _ = by_id[cid]
        return name if parent is None else f"{path(parent)}.{name}"

    return {path(cid): r[3] for cid, r in by_id.items() if r[3] is not None}


@pytest.fixture
def lake(tmp_path: Path) -> CatalogLocation:
    return new_lake(CatalogLocation(kind="sqlite", path=str(tmp_path / "c.sqlite")), tmp_path / "data")


# ------------------------------------------------------------------ docs/ingest-schema-evolution.md §5


def test_example_1_a_string_after_an_array_of_longs(lake: CatalogLocation, tmp_path: Path) -> None:
    duck.run_workload(lake, ["CREATE TABLE lk.t(id BIGINT)"])
    ingest(lake, write_json(tmp_path / "in" / "1.json", [{"id": 1, "a": [1, 2]}]))
    first = read(lake, "SELECT max(snapshot_id) FROM ducklake_snapshots('lk')")[0][0]
    assert columns(lake) == [("id", "BIGINT", None), ("a", "BIGINT[]", None)]
    report = ingest(lake, write_json(tmp_path / "in" / "2.json", [{"id": 2, "a": "x"}, {"id": 3, "a": 5}]))
    assert report["columnsAdded"] == ["+ add column a_array_string list<varchar>", "+ add column a_string varchar"]
    assert columns(lake) == [
        ("id", "BIGINT", None),
        ("a", "BIGINT[]", None),
        ("a_array_string", "VARCHAR[]", "evolved_from:a"),
        ("a_string", "VARCHAR", "evolved_from:a"),
    ]
    assert read(lake, "SELECT rowid, * FROM lk.t ORDER BY rowid") == [
        (0, 1, [1, 2], None, None),
        (1, 2, None, ["x"], "x"),
        (2, 3, [5], ["5"], "5"),  # convertible to long: into the original column too
    ]
    # the snapshot before reads the table as it was: no new column without its rows
    assert read(lake, f"SELECT rowid, * FROM lk.t AT (VERSION => {first})") == [(0, 1, [1, 2])]


EXAMPLES: dict[str, tuple[list[Any], str, dict[str, str]]] = {
    "2-dimensions": (
        ["s", ["s"], [["s"]], [[["s"]]]],
        "STRUCT(b VARCHAR[][][], b_string VARCHAR, b_array_string VARCHAR[], b_array2_string VARCHAR[][])",
        {f"a.b_{s}": "evolved_from:b" for s in ("string", "array_string", "array2_string")},
    ),
    "3-long-and-double": ([True, 1, 1.5], "STRUCT(b DOUBLE, b_boolean BOOLEAN)", {"a.b_boolean": "evolved_from:b"}),
    "4-records": (
        [{"c": "s"}, [{"x": "s"}], [[{"y": "s"}]], [[[{"z": "s"}]]]],
        "STRUCT(b STRUCT(c VARCHAR, x VARCHAR, y VARCHAR, z VARCHAR)[][][], b_record STRUCT(c VARCHAR), "
        "b_array_record STRUCT(x VARCHAR)[], b_array2_record STRUCT(y VARCHAR)[][])",
        {f"a.b_{s}": "evolved_from:b" for s in ("record", "array_record", "array2_record")},
    ),
}


@pytest.mark.parametrize("example", list(EXAMPLES))
def test_examples_2_to_4_fields_first_seen_together(lake: CatalogLocation, tmp_path: Path, example: str) -> None:
    values, struct, tagged = EXAMPLES[example]
    duck.run_workload(lake, ["CREATE TABLE lk.t(id BIGINT)"])
    ingest(lake, write_json(tmp_path / "in.json", [{"id": i, "a": {"b": v}} for i, v in enumerate(values)]))
    assert columns(lake) == [("id", "BIGINT", None), ("a", struct, None)]
    assert comments(lake) == tagged
    got = read(lake, "SELECT rowid, id, a FROM lk.t ORDER BY rowid")
    assert [r[:2] for r in got] == [(i, i) for i in range(len(values))]
    first = got[0][2]
    if example == "2-dimensions":
        assert first == {"b": [[["s"]]], "b_string": "s", "b_array_string": ["s"], "b_array2_string": [["s"]]}
    elif example == "3-long-and-double":
        assert [r[2] for r in got] == [
            {"b": 1.0, "b_boolean": True},
            {"b": 1.0, "b_boolean": None},
            {"b": 1.5, "b_boolean": None},
        ]
    else:
        assert first["b_record"] == {"c": "s"} and first["b"] == [[[{"c": "s", "x": None, "y": None, "z": None}]]]
        assert got[1][2]["b_array_record"] == [{"x": "s"}] and got[2][2]["b_array2_record"] == [[{"y": "s"}]]


def test_rule_8_every_value_reaches_the_string_array_column(lake: CatalogLocation, tmp_path: Path) -> None:
    """docs/ingest-schema-evolution.md §2.8: a field with columns of long, date, string, date[] and string[]
    routes every value to every column that takes it, so all of them reach string[]."""
    duck.run_workload(lake, ["CREATE TABLE lk.t(id BIGINT)"])
    ingest(lake, write_json(tmp_path / "in" / "1.json", [{"id": 0, "a": "2024-01-15"}]))
    values: list[Any] = [5, "2024-01-16", "x", ["2024-01-17"], ["y", "z"]]
    report = ingest(lake, write_json(tmp_path / "in" / "2.json", [{"id": i + 1, "a": v} for i, v in enumerate(values)]))
    assert report["columnsAdded"] == [
        "+ add column a_long int64",
        "+ add column a_string varchar",
        "+ add column a_array_date list<date>",
        "+ add column a_array_string list<varchar>",
    ]
    assert columns(lake) == [
        ("id", "BIGINT", None),
        ("a", "DATE", None),
        ("a_long", "BIGINT", "evolved_from:a"),
        ("a_string", "VARCHAR", "evolved_from:a"),
        ("a_array_date", "DATE[]", "evolved_from:a"),
        ("a_array_string", "VARCHAR[]", "evolved_from:a"),
    ]
    # the five types now have their columns: the same values again add none, and every one
    # of them reaches a_array_string (a date as its text, a long as its digits)
    again = ingest(lake, write_json(tmp_path / "in" / "3.json", [{"id": i + 10, "a": v} for i, v in enumerate(values)]))
    assert again["columnsAdded"] == []
    d = datetime.date
    assert read(lake, "SELECT * EXCLUDE (id) FROM lk.t WHERE id >= 10 ORDER BY id") == [
        (None, 5, "5", None, ["5"]),
        (d(2024, 1, 16), 1705363200000, "2024-01-16", [d(2024, 1, 16)], ["2024-01-16"]),
        (None, None, "x", None, ["x"]),
        (None, None, None, [d(2024, 1, 17)], ["2024-01-17"]),
        (None, None, None, None, ["y", "z"]),
    ]
    assert read(lake, "SELECT a_array_string FROM lk.t WHERE id BETWEEN 1 AND 5 ORDER BY id") == read(
        lake, "SELECT a_array_string FROM lk.t WHERE id >= 10 ORDER BY id"
    )


def test_a_manifest_declaring_an_evolved_column_keeps_its_marker(lake: CatalogLocation, tmp_path: Path) -> None:
    """Applying a DuckLakeTable that declares ``a_string`` (without a comment, then with one)
    keeps ingest's ``evolved_from:a``: the next ingests still route a's strings there."""
    duck.run_workload(lake, ["CREATE TABLE lk.t(id BIGINT, a BIGINT)"])
    ingest(lake, write_json(tmp_path / "in" / "1.json", [{"id": 1, "a": "x"}]))

    def apply(comment: str | None) -> None:
        column = {"name": "a_string", "type": "varchar"} | ({"comment": comment} if comment else {})
        spec = parse_as(TableSpec, manifests.table("t", "lake", [{"name": "id", "type": "int64"}, {"name": "a", "type": "int64"}, column]))  # fmt: skip
        with closing(Catalog.open(lake)) as catalog:
            apply_plan(catalog, spec)

    apply(None)
    assert columns(lake)[2] == ("a_string", "VARCHAR", "evolved_from:a")
    assert ingest(lake, write_json(tmp_path / "in" / "2.json", [{"id": 2, "a": "y"}]))["columnsAdded"] == []
    apply("a's values that are no numbers")
    assert columns(lake)[2] == ("a_string", "VARCHAR", "evolved_from:a\na's values that are no numbers")
    assert ingest(lake, write_json(tmp_path / "in" / "3.json", [{"id": 3, "a": "z"}]))["columnsAdded"] == []
    assert read(lake, "SELECT id, a, a_string FROM lk.t ORDER BY id") == [
        (1, None, "x"),
        (2, None, "y"),
        (3, None, "z"),
    ]


# A declared type -> JSON values it holds exactly, and one it does not with the columns that
# one gets by docs/ingest-schema-evolution.md §2.3 (a column of the wider type, string when neither is, and one of
# its own type; float32 and the timestamps of a precision have no text form to widen to).
DECLARED: dict[str, tuple[list[Any], Any, list[tuple[str, str]]]] = {
    "decimal(10,2)": (
        [12.5, 7, -3.1, 0.01, 99999999.99, 100.0, decimal.Decimal("1E+2"), -0.0],
        12.345,
        [("v_string", "VARCHAR"), ("v_double", "DOUBLE")],
    ),
    "float32": (
        [12.5, 7, -3.1, 0.1, 16777216, 123456.0, decimal.Decimal("1.5e30")],
        0.1234567,
        [("v_double", "DOUBLE")],
    ),
    "timestamptz": (
        ["2024-01-15T10:30:00Z", "2024-01-15 10:30:00.123456+02:00", "2024-01-15T10:30:00", "2024-01-15"],
        "tomorrow",
        [("v_string", "VARCHAR")],
    ),
    "timestamp_ms": (
        ["2024-01-15T10:30:00.123", "2024-01-15 10:30:00", "2024-01-15"],
        "2024-01-15T10:30:00.1234",
        [("v_timestamp", "TIMESTAMP")],
    ),
    "timestamp_s": (["2024-01-15T10:30:00", "2024-01-15"], "2024-01-15T10:30:00.5", [("v_timestamp", "TIMESTAMP")]),
    "uuid": (
        ["550e8400-e29b-41d4-a716-446655440000", "550E8400-E29B-41D4-A716-44665544AAAA"],
        "550e8400",
        [("v_string", "VARCHAR")],
    ),
    "time": (["10:30:00", "23:59:59.5", "00:00:00.000001"], "24:00:00", [("v_string", "VARCHAR")]),
}


def json_line(i: int, value: Any) -> str:
    """A record whose ``v`` is ``value`` (a Decimal: a JSON number of its text, ``1E+2``)."""
    return f'{{"id": {i}, "v": {value if isinstance(value, decimal.Decimal) else json.dumps(value)}}}\n'


@pytest.mark.parametrize("declared", list(DECLARED))
def test_declared_columns_take_the_json_values_they_hold_exactly(
    lake: CatalogLocation, tmp_path: Path, declared: str
) -> None:
    """A ``mode: auto`` table declaring ``v`` of a type no base kind is
    (docs/ingest-schema-evolution.md §6.2): JSON values
    whose text the type holds exactly go into ``v`` (the values DuckDB's CAST of that text
    gives), and no suffixed column appears; a value it does not hold gets the columns of §2.3,
    while the others still go into ``v``."""
    spec = parse_as(TableSpec, manifests.table("t", "lake", [{"name": "id", "type": "int64"}, {"name": "v", "type": declared}], evolution={"mode": "auto"}))  # fmt: skip
    with closing(Catalog.open(lake)) as catalog:
        apply_plan(catalog, spec)
    good, bad, added = DECLARED[declared]
    duck_type = read(lake, "SELECT data_type FROM duckdb_columns() WHERE table_name = 't' AND column_name = 'v'")[0][0]
    oracle = duckdb.connect()
    oracle.execute("SET TimeZone = 'UTC'")
    want = [oracle.execute(f"SELECT CAST(? AS {duck_type})", [str(v)]).fetchone()[0] for v in good]  # type: ignore[index]

    src = tmp_path / "in" / "1.json"
    src.parent.mkdir(parents=True)
    src.write_text("".join(json_line(i, v) for i, v in enumerate(good)))
    assert ingest(lake, src)["columnsAdded"] == []
    assert [c[:2] for c in columns(lake)] == [("id", "BIGINT"), ("v", duck_type)]
    assert [r[0] for r in read(lake, "SELECT v FROM lk.t ORDER BY id")] == want

    more = tmp_path / "in" / "2.json"
    more.write_text(json_line(100, bad) + json_line(101, good[0]))
    ingest(lake, more)
    assert [c[:2] for c in columns(lake)] == [("id", "BIGINT"), ("v", duck_type)] + added
    assert all(c[2] == "evolved_from:v" for c in columns(lake)[2:])
    got = read(lake, "SELECT id, v, " + ", ".join(name for name, _ in added) + " FROM lk.t WHERE id >= 100 ORDER BY id")
    assert got[0][1] is None and all(v is not None for v in got[0][2:])  # the value it does not hold
    assert got[1][1] == want[0]  # still in v


def test_without_evolve_only_records_that_fit_the_columns_are_ingested(lake: CatalogLocation, tmp_path: Path) -> None:
    """``evolve: false`` (a table whose DuckLakeTable is not ``mode: auto``): records that
    need a column fail the run naming their fields, before anything is written; records that
    fit, converted, go in as with evolution."""
    duck.run_workload(lake, ["CREATE TABLE lk.t(id BIGINT, a BIGINT, s STRUCT(x BIGINT))"])
    before = read(lake, "SELECT count(*) FROM ducklake_snapshots('lk')")
    needs = write_json(tmp_path / "in" / "1.json", [{"id": 1, "a": "x", "s": {"x": 1, "y": 2}, "b": 3}])
    for dry_run in (True, False):
        with pytest.raises(DuckLakeError) as info:
            ingest(lake, needs, evolve=False, dryRun=dry_run)
        assert str(info.value) == (
            "ingest into main.t: values of s.y, a, b fit none of the table's columns (they need: add field s.y "
            "int64; add column a_string varchar; add column b int64), and evolve is false (the operator sets "
            "it so when the table's DuckLakeTable does not have spec.evolution.mode: auto); nothing was committed. "
            "Set spec.evolution.mode: auto on that DuckLakeTable to let ingest add columns, or declare the columns "
            "there"
        )
    assert read(lake, "SELECT count(*) FROM ducklake_snapshots('lk')") == before
    assert not list((tmp_path / "data").rglob("*.parquet"))
    fits = write_json(tmp_path / "in" / "2.json", [{"id": 2, "a": True, "s": {"x": 5}}, {"id": 3}])
    assert ingest(lake, fits, evolve=False)["rowsWritten"] == 2
    assert columns(lake) == [("id", "BIGINT", None), ("a", "BIGINT", None), ("s", "STRUCT(x BIGINT)", None)]
    assert read(lake, "SELECT id, a, s FROM lk.t ORDER BY id") == [(2, 1, {"x": 5}), (3, None, None)]
    assert ingest(lake, needs)["columnsAdded"]  # evolve: true, the default, adds them


def test_json_dates_and_timestamps_are_read_as_duckdbs_read_json_reads_them(
    lake: CatalogLocation, tmp_path: Path
) -> None:
    """JSON has no dates: ISO strings are dates and timestamps (an offset: converted to UTC),
    and docs/ingest-schema-evolution.md §2.3 applies to them: a date arriving for a boolean column makes
    ``a_string`` and ``a_date``."""
    duck.run_workload(lake, ["CREATE TABLE lk.t(id BIGINT, a BOOLEAN)", "INSERT INTO lk.t VALUES (0, true)"])
    records = [
        {"id": 1, "a": "2024-01-15", "day": "2024-01-15", "at": "2024-01-15T10:30:00.25Z", "note": "2024-02-30"},
        {"id": 2, "a": False, "day": "2024-01-16", "at": "2024-01-15 12:30:00+02:00", "note": "n"},
    ]
    source = write_json(tmp_path / "in.json", records)
    ingest(lake, source)
    assert columns(lake) == [
        ("id", "BIGINT", None),
        ("a", "BOOLEAN", None),
        ("a_string", "VARCHAR", "evolved_from:a"),
        ("a_date", "DATE", "evolved_from:a"),
        ("day", "DATE", None),
        ("at", "TIMESTAMP", None),
        ("note", "VARCHAR", None),
    ]
    got = read(lake, 'SELECT id, a, a_string, a_date, day, "at", note FROM lk.t ORDER BY id')
    assert got == [
        (0, True, None, None, None, None, None),
        (1, None, "2024-01-15", datetime.date(2024, 1, 15), datetime.date(2024, 1, 15),
         datetime.datetime(2024, 1, 15, 10, 30, 0, 250000), "2024-02-30"),
        (2, False, "false", None, datetime.date(2024, 1, 16), datetime.datetime(2024, 1, 15, 10, 30), "n"),
    ]  # fmt: skip
    # the same values as DuckDB's casts give the same strings (an offset: the instant, in UTC)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    theirs = con.execute(
        'SELECT CAST(day AS DATE), CAST(CAST("at" AS TIMESTAMPTZ) AS TIMESTAMP) '
        f"FROM read_json('{source}', columns = {{id: 'BIGINT', day: 'VARCHAR', \"at\": 'VARCHAR'}}) ORDER BY id"
    ).fetchall()
    assert theirs == [(g[4], g[5]) for g in got[1:]]


# ------------------------------------------------------------------ the widest-type table

SAMPLES = {
    "boolean": "true",
    "long": "1700000000123",
    "double": "2.5::DOUBLE",
    "date": "DATE '2024-01-15'",
    "timestamp": "TIMESTAMP '2024-01-15 10:30:00.25'",
    "string": "'text'",
}
# how a value of one kind goes into a column of another, in DuckDB's own SQL (the README's list)
CONVERTED = {
    ("boolean", "long"): "CAST({} AS BIGINT)",
    ("boolean", "double"): "CAST({} AS DOUBLE)",
    ("long", "double"): "CAST({} AS DOUBLE)",
    ("long", "timestamp"): "epoch_ms({})",
    ("date", "long"): "epoch_ms(CAST({} AS TIMESTAMP))",
    ("date", "double"): "CAST(epoch_ms(CAST({} AS TIMESTAMP)) AS DOUBLE)",
    ("date", "timestamp"): "CAST({} AS TIMESTAMP)",
    ("timestamp", "long"): "epoch_ms({})",
    ("timestamp", "double"): "epoch_us({}) / 1000",
}


def converted(value: str, kind: str, to: str) -> str:
    if kind == to:
        return value
    return f"CAST({value} AS VARCHAR)" if to == "string" else CONVERTED[(kind, to)].format(value)


def test_widest_type_table_through_duckdb(lake: CatalogLocation, tmp_path: Path) -> None:
    """A column of each base kind's type; a Parquet file with a value of each other type for it."""
    pairs = [(x, y) for x, row in WIDEST_TABLE.items() for y in row]
    duck.run_workload(lake, ["CREATE TABLE lk.t(" + ", ".join(f"{x}_{y} {DUCKDB[x]}" for x, y in pairs) + ")"])
    source = tmp_path / "in.parquet"
    duckdb.execute(f"COPY (SELECT {', '.join(f'{SAMPLES[y]} AS {x}_{y}' for x, y in pairs)}) TO '{source}'")
    ingest(lake, source)
    expected_columns = [(f"{x}_{y}", DUCKDB[x], None) for x, y in pairs] + [
        (f"{x}_{y}_{k}", DUCKDB[k], f"evolved_from:{x}_{y}") for x, y in pairs for k in WIDEST_TABLE[x][y]
    ]
    assert columns(lake) == expected_columns
    # each value, converted, in every column of its field that takes it
    expected = []
    for x, y in pairs:
        added = WIDEST_TABLE[x][y]
        into_original = not added or (x, y) == ("timestamp", "long")
        expected.append(converted(SAMPLES[y], y, x) if into_original else "NULL")
    for x, y in pairs:
        expected += [converted(SAMPLES[y], y, k) for k in WIDEST_TABLE[x][y]]
    (row,) = read(lake, "SELECT * FROM lk.t")
    (want,) = duckdb.execute("SELECT " + ", ".join(expected)).fetchall()
    assert dict(zip([c[0] for c in expected_columns], row, strict=True)) == dict(
        zip([c[0] for c in expected_columns], want, strict=True)
    )


# ------------------------------------------------------------------ against DuckDB by hand

# (what the ingested JSON lines hold, what DuckDB writes by hand for the same)
CREATE = "CREATE TABLE lk.t(id BIGINT, name VARCHAR, size BIGINT)"
BEFORE = ["INSERT INTO lk.t VALUES (100, 'old', NULL), (101, 'older', 7)", "DELETE FROM lk.t WHERE id = 101"]


def records(n: int, double_from: int) -> list[dict[str, Any]]:
    return [
        {
            "id": i,
            "name": f"n{i}",
            "size": i + 0.5 if i >= double_from else i,
            "tags": [f"t{i}", f"u{i}"],
            "s": {"x": i, "y": None if i % 3 else f"y{i}"},
        }
        for i in range(n)
    ]


def by_hand(n: int, double_from: int) -> list[str]:
    """What DuckDB commits for the same ingest: the columns, their comments, the rows."""
    return [
        "BEGIN",
        "ALTER TABLE lk.t ADD COLUMN size_double DOUBLE",
        "COMMENT ON COLUMN lk.t.size_double IS 'evolved_from:size'",
        "ALTER TABLE lk.t ADD COLUMN tags VARCHAR[]",
        "ALTER TABLE lk.t ADD COLUMN s STRUCT(x BIGINT, y VARCHAR)",
        f"INSERT INTO lk.t SELECT i, 'n' || i, CASE WHEN i < {double_from} THEN i END, "
        f"CASE WHEN i < {double_from} THEN i ELSE i + 0.5 END, ['t' || i, 'u' || i], "
        f"{{'x': i, 'y': CASE WHEN i % 3 = 0 THEN 'y' || i END}} FROM range({n}) r(i) ORDER BY i",
        "COMMIT",
    ]


AFTERWARDS = [
    "INSERT INTO lk.t (id, name, size_double) VALUES (500, 'later', 1.25)",
    "INSERT INTO lk.t (id, tags) SELECT i, ['x'] FROM range(600, 640) r(i)",
    "DELETE FROM lk.t WHERE id = 3",
    "CALL ducklake_flush_inlined_data('lk')",
    "CALL ducklake_merge_adjacent_files('lk')",
]


def observe(location: CatalogLocation) -> dict[str, Any]:
    """Rows by rowid and types now and at every snapshot, and what DuckDB answers from stats."""
    return duck.observe_typed(location, "count(*), min(id), max(id), min(size_double), max(name)", since=2)


SAME = (
    "ducklake_column",
    "ducklake_column_tag",
    "ducklake_schema_versions",
    "ducklake_inlined_data_tables",
    "ducklake_table_stats",
    "ducklake_table_column_stats",
)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("history", ["rows-before", "first-data"])
def test_same_as_duckdb_adding_the_columns_and_inserting(
    make_location: Callable[[str], CatalogLocation], tmp_path: Path, kind: str, history: str
) -> None:
    setup = [CREATE] + (BEFORE if history == "rows-before" else [])
    theirs = new_lake(make_location(kind), tmp_path / "theirs", *setup)
    ours = new_lake(make_location(kind), tmp_path / "ours", *setup)
    n, double_from = 30, 20
    duck.run_workload(theirs, by_hand(n, double_from))
    recs = records(n, double_from)
    write_json(tmp_path / "in" / "a.json", recs[:double_from])
    write_json(tmp_path / "in" / "b.ndjson", recs[double_from:])
    report = ingest(ours, tmp_path / "in")
    assert (report["filesRead"], report["records"], report["rowsWritten"], report["filesWritten"]) == (2, n, n, 1)

    a, b = observe(theirs), observe(ours)
    assert b == a
    x, y = dump(theirs), dump(ours)
    for table in SAME:
        assert x[table] == y[table], table
    latest = lambda rows: max(rows, key=lambda r: r[0])  # noqa: E731  (dump sorts by text)
    assert latest(x["ducklake_snapshot"])[2:] == latest(y["ducklake_snapshot"])[2:]  # version, ids
    assert latest(x["ducklake_snapshot_changes"])[1] == latest(y["ducklake_snapshot_changes"])[1]
    # the file as DuckDB's INSERT registers it: row ids from next_row_id, same statistics
    files = lambda d: sorted((r[:4] + r[8:9] + r[11:] for r in d["ducklake_data_file"]), key=repr)  # noqa: E731
    assert files(x) == files(y)
    stats = lambda d: sorted((r[:3] + r[4:] for r in d["ducklake_file_column_stats"]), key=repr)  # noqa: E731
    assert stats(x) == stats(y)  # all but the columns' compressed sizes

    duck.run_workload(theirs, AFTERWARDS)
    duck.run_workload(ours, AFTERWARDS)
    a2, b2 = observe(theirs), observe(ours)
    assert b2["now"] == a2["now"] and b2["agg"] == a2["agg"]
    assert all(b2["history"][v] == seen for v, seen in b["history"].items())


# ------------------------------------------------------------------ formats, layouts


UUID_TEXT = "0b3e7c6e-6d0a-4a37-9d5e-3bb1c4a8e9f1"


def test_csv_parquet_and_gzipped_json(lake: CatalogLocation, tmp_path: Path) -> None:
    duck.run_workload(lake, ["CREATE TABLE lk.t(id BIGINT)"])
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.csv").write_text("id,name,day,at,ok\n1,a,2024-01-01,2024-01-01 10:00:00,true\n2,,2024-01-02,,false\n")
    duckdb.execute(
        "COPY (SELECT 3 AS id, 'c' AS name, {'k': 1.5::DECIMAL(10,2), 'l': [1, 2]} AS st, "
        f"'{UUID_TEXT}'::UUID AS u, TIMESTAMPTZ '2024-01-01 10:00:00+00' AS tz) "
        f"TO '{src / 'b.parquet'}'"
    )
    with gzip.open(src / "c.json.gz", "wt") as fh:
        fh.write(json.dumps({"id": 4, "name": "d", "ok": 1}) + "\n")
    (src / "_SUCCESS").write_text("")
    (src / "notes.txt").write_text("not data")
    report = ingest(lake, src)
    assert (report["filesRead"], report["filesIgnored"], report["records"]) == (3, 2, 4)
    # ok is first seen boolean (CSV) and long (JSON) together: the long, wider, takes the name
    assert columns(lake) == [
        ("id", "BIGINT", None),
        ("name", "VARCHAR", None),
        ("day", "DATE", None),
        ("at", "TIMESTAMP", None),
        ("ok", "BIGINT", None),
        ("ok_boolean", "BOOLEAN", "evolved_from:ok"),
        ("st", "STRUCT(k DECIMAL(10,2), l BIGINT[])", None),
        ("u", "UUID", None),
        ("tz", "TIMESTAMP WITH TIME ZONE", None),
    ]
    got = read(
        lake,
        "SELECT id, name, day, \"at\", ok, ok_boolean, st, u::VARCHAR, tz = TIMESTAMPTZ '2024-01-01 10:00:00+00' "
        "FROM lk.t ORDER BY id",
    )
    assert got == [
        (1, "a", datetime.date(2024, 1, 1), datetime.datetime(2024, 1, 1, 10), 1, True, None, None, None),
        (2, None, datetime.date(2024, 1, 2), None, 0, False, None, None, None),
        (3, "c", None, None, None, None, {"k": decimal.Decimal("1.50"), "l": [1, 2]}, UUID_TEXT, True),
        (4, "d", None, None, 1, None, None, None, None),
    ]


PAST_SAMPLE = 24_000  # DuckDB's readers type a column from the first 20,480 records (sample_size)


@pytest.mark.parametrize(("fmt", "theirs_reads"), [("json", 2), ("csv", 3)])
def test_a_value_past_duckdbs_sample_is_kept_where_duckdbs_insert_changes_it(
    lake: CatalogLocation, tmp_path: Path, fmt: str, theirs_reads: int
) -> None:
    """DuckDB's counterpart of an ingest (bench/ingest.py) types a new column from its reader's
    sample and reads a later value that does not fit into that type anyway: 2.5 into BIGINT,
    as 2 from JSON and 3 from CSV. The ingest types the column from every record, as DuckDB's
    reader does with ``sample_size = -1``: the same columns and rows as that insert."""
    duck.run_workload(lake, ["CREATE TABLE lk.t(id BIGINT)"])
    src = tmp_path / "in"
    values = [2.5 if i == PAST_SAMPLE else i * 3 for i in range(PAST_SAMPLE + 1000)]
    if fmt == "json":
        write_json(src / "a.json", ({"id": i, "n": n} for i, n in enumerate(values)))
    else:
        src.mkdir()
        (src / "a.csv").write_text("id,n\n" + "".join(f"{i},{n}\n" for i, n in enumerate(values)))
    scan = f"read_{fmt}('{src}/a.{fmt}'"

    def duckdb_insert(every_record: bool) -> list[tuple[Any, ...]]:
        theirs = new_lake(
            CatalogLocation(kind="sqlite", path=str(tmp_path / f"{every_record}.sqlite")), tmp_path / f"d{every_record}"
        )
        reader = scan + (", sample_size = -1)" if every_record else ")")
        (n_type,) = duckdb.execute(f"SELECT column_type FROM (DESCRIBE SELECT n FROM {reader})").fetchone() or ("",)
        duck.run_workload(
            theirs,
            [
                "CREATE TABLE lk.t(id BIGINT)",
                "BEGIN",
                f"ALTER TABLE lk.t ADD COLUMN n {n_type}",
                f"INSERT INTO lk.t BY NAME SELECT * FROM {reader}",
                "COMMIT",
            ],
        )
        return columns(theirs) + read(theirs, "SELECT id, n FROM lk.t ORDER BY id")

    sampled = duckdb_insert(every_record=False)
    assert sampled[:2] == [("id", "BIGINT", None), ("n", "BIGINT", None)]
    assert sampled[2 + PAST_SAMPLE] == (PAST_SAMPLE, theirs_reads)  # the value changed, silently

    report = ingest(lake, src)
    assert report["rowsWritten"] == len(values)
    if fmt == "csv":  # written first in the sample's types, until the value refuted them
        assert "2.5" in report["csvSampleRefuted"]
    ours = columns(lake) + read(lake, "SELECT id, n FROM lk.t ORDER BY id")
    assert ours[:2] == [("id", "BIGINT", None), ("n", "DOUBLE", None)]
    assert ours[2 + PAST_SAMPLE] == (PAST_SAMPLE, 2.5)
    assert ours == duckdb_insert(every_record=True)


# a column of each type whose values go unconverted into a column of its kind's own type
# (CSV's sniffer reads the narrower ones as BIGINT, DOUBLE, TIMESTAMP); NULLs but in id
TYPED = (
    "SELECT i AS id, CASE WHEN i % 7 <> 1 THEN i::INTEGER END AS small, (i / 4)::FLOAT AS f4, "
    "CASE WHEN i % 5 <> 2 THEN i / 3 END AS f8, i % 2 = 0 AS ok, CASE WHEN i % 3 <> 0 THEN 's' || i END AS name, "
    "DATE '2024-01-01' + i::INTEGER AS day, TIMESTAMP '2024-01-01 10:00:00.25' + INTERVAL (i) HOUR AS at, "
    "CAST(TIMESTAMP '2024-01-01' + INTERVAL (i) SECOND AS TIMESTAMP_S) AS at_s FROM range(40) r(i)"
)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_typed_files_read_straight_into_the_rows_as_record_by_record(
    make_location: Callable[[str], CatalogLocation], tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CSV or Parquet file each of whose columns goes unconverted into one column of its
    kind's type is read by DuckDB straight into the rows written: the same table as converting
    its records one by one. A row without a value for a NOT NULL column is skipped or fails
    naming it, as record by record."""
    import ducklake_jobs.ingest_tasks as job

    src = tmp_path / "in"
    src.mkdir()
    duckdb.execute(f"COPY ({TYPED}) TO '{src / ('a.' + fmt)}' (FORMAT {fmt})")
    duckdb.execute(f"COPY ({TYPED.replace('range(40)', 'range(40, 60)')}) TO '{src / ('b.' + fmt)}' (FORMAT {fmt})")
    create = "CREATE TABLE lk.t(id BIGINT NOT NULL, name VARCHAR, f8 DOUBLE)"
    direct = new_lake(make_location("sqlite"), tmp_path / "direct", create)
    one_by_one = new_lake(make_location("sqlite"), tmp_path / "one-by-one", create)
    selected: list[str | None] = []
    select = job._direct_items

    def noting(*args: Any) -> str | None:
        selected.append(select(*args))
        return selected[-1]

    monkeypatch.setattr(job, "_direct_items", noting)
    assert ingest(direct, src)["rowsWritten"] == 60
    assert len(selected) == 2 and None not in selected
    monkeypatch.setattr(job, "_direct_items", lambda *a: None)
    assert ingest(one_by_one, src)["rowsWritten"] == 60
    assert columns(direct) == columns(one_by_one)
    assert read(direct, "SELECT rowid, * FROM lk.t ORDER BY rowid") == read(
        one_by_one, "SELECT rowid, * FROM lk.t ORDER BY rowid"
    )
    monkeypatch.setattr(job, "_direct_items", select)
    lacking = src / f"c.{fmt}"
    duckdb.execute(f"COPY (SELECT * REPLACE (CASE WHEN id = 61 THEN NULL ELSE id END AS id) FROM ({TYPED.replace('range(40)', 'range(60, 63)')})) TO '{lacking}' (FORMAT {fmt})")  # fmt: skip
    report = ingest(direct, lacking, onBadRecord="skip")
    assert (report["rowsWritten"], report["recordsSkipped"]) == (2, 1)
    assert report["firstSkipped"] == [f"{lacking}:row 2: no value for id, which is NOT NULL"]
    with pytest.raises(DuckLakeError, match="no value for id, which is NOT NULL"):
        ingest(direct, lacking, reingest=True)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_typed_files_read_alike_are_one_scan_of_their_list(
    make_location: Callable[[str], CatalogLocation], tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Consecutive files DuckDB reads alike are one scan of their list (DuckDB writes that
    faster than a UNION ALL of a scan each); a file of other types is a scan of its own, and
    the rows keep the files' order: the table the record-by-record path writes."""
    import ducklake_jobs.ingest_tasks as job
    from ducklake_jobs.ingest_sources import SourceReader

    src = tmp_path / "in"
    src.mkdir()
    for name, rows, small in [("a", "range(40)", "INTEGER"), ("b", "range(40, 60)", "INTEGER"),
                              ("c", "range(60, 70)", "BIGINT"), ("d", "range(70, 75)", "INTEGER")]:  # fmt: skip
        typed = TYPED.replace("range(40)", rows).replace("i::INTEGER END AS small", f"i::{small} END AS small")
        if fmt == "csv" and small == "BIGINT":  # a CSV file's types are its text's: another column makes it other
            typed = typed.replace(" AS small,", " AS small, 1 AS other,")
        duckdb.execute(f"COPY ({typed}) TO '{src / (name + '.' + fmt)}' (FORMAT {fmt})")
    create = "CREATE TABLE lk.t(id BIGINT NOT NULL, name VARCHAR, f8 DOUBLE)"
    ours = new_lake(make_location("sqlite"), tmp_path / "ours", create)
    scans: list[int] = []
    scan = SourceReader.scan

    def noting(self: SourceReader, files: Any = ()) -> str:
        if files:
            scans.append(len(files))
        return scan(self, files)

    monkeypatch.setattr(SourceReader, "scan", noting)
    assert ingest(ours, src)["rowsWritten"] == 75
    assert scans == [2, 1, 1]  # a and b together; c (other types) alone; d after it
    if fmt == "csv":  # without the dialect pass 1 found, DuckDB would sniff a list's first file only
        monkeypatch.setattr(SourceReader, "_sniff", lambda self, on_sample=True: None)
        monkeypatch.setattr(SourceReader, "_sample_dialect_typed", lambda self: None)
        scans.clear()
        assert ingest(new_lake(make_location("sqlite"), tmp_path / "sniffed", create), src)["rowsWritten"] == 75
        assert scans == [1, 1, 1, 1]
    assert read(ours, "SELECT rowid, id FROM lk.t ORDER BY rowid") == [(i, i) for i in range(75)]  # the files' order
    monkeypatch.setattr(job, "_direct_items", lambda *a: None)  # record by record, in Python
    one_by_one = new_lake(make_location("sqlite"), tmp_path / "one-by-one", create)
    ingest(one_by_one, src)
    assert columns(ours) == columns(one_by_one)
    assert read(ours, "SELECT rowid, * FROM lk.t ORDER BY rowid") == read(
        one_by_one, "SELECT rowid, * FROM lk.t ORDER BY rowid"
    )


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_typed_files_longs_are_ranged_where_a_plan_reads_the_range(
    make_location: Callable[[str], CatalogLocation], tmp_path: Path, fmt: str
) -> None:
    """Pass 1 finds the min and max of a CSV or Parquet file's long columns only where a
    plan for the table reads them (``auto_schema.extents_read``: a declared INTEGER column;
    a Parquet file with none is not scanned): a long that fits the INTEGER column goes into
    it, one that does not goes into a column of its own, as when every range is found."""
    import ducklake_jobs.ingest_sources as sources
    from ducklake_operator.evolution.auto_schema import extents_read
    from ducklake_operator.model.ingested_files import SourceFile
    from ducklake_operator.model.value_kinds import LONG

    lake = new_lake(make_location("sqlite"), tmp_path / "lake", "CREATE TABLE lk.t(id BIGINT, small INTEGER)")
    records = "SELECT i AS id, CASE WHEN i = 3 THEN {big} ELSE i END AS small, i * 2 AS n FROM range(10) r(i)"
    fits, wide = tmp_path / f"fits.{fmt}", tmp_path / f"wide.{fmt}"
    duckdb.execute(f"COPY ({records.format(big=5)}) TO '{fits}' (FORMAT {fmt})")
    duckdb.execute(f"COPY ({records.format(big=3_000_000_000)}) TO '{wide}' (FORMAT {fmt})")
    with closing(Catalog.open(lake)) as catalog:
        read_here = extents_read(catalog.table("main", "t"))
    assert (("small", LONG) in read_here, ("id", LONG) in read_here) == (True, False)

    def ranges(path: Path, extents: frozenset[tuple[str, str]] | None) -> dict[str, Any]:
        source = sources.Source(SourceFile(str(path), path.stat().st_size, 0.0), fmt)
        reader = sources.SourceReader(source, str(path), "fail", sources.Skipped(), extents=extents)
        try:
            return reader.ranges
        finally:
            reader.close()

    assert ranges(wide, read_here) == {"small": (0, 3_000_000_000)}
    assert ranges(wide, None) == {"id": (0, 9), "small": (0, 3_000_000_000), "n": (0, 18)}
    assert ingest(lake, fits)["columnsAdded"] == ["+ add column n int64"]
    assert ingest(lake, wide)["columnsAdded"] == ["+ add column small_long int64"]
    assert read(lake, "SELECT small, small_long FROM lk.t WHERE id = 3 ORDER BY small_long NULLS FIRST") == [
        (5, None),
        (None, 3_000_000_000),
    ]


def test_json_lines_read_in_duckdb_as_record_by_record(
    make_location: Callable[[str], CatalogLocation], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """JSON-lines files DuckDB reads as Python does (written by DuckDB's COPY, gzipped, and by
    Python's json.dumps) are observed and loaded in DuckDB (``ducklake_jobs.ingest_json``): the
    same columns, rows by rowid and report as reading every record in Python; a file with a
    key of two kinds is loaded record by record, one with a bad line left to Python, which
    skips it naming it (tests/jobs/test_ingest_json_duckdb.py compares the two in depth)."""
    import ducklake_jobs.ingest_json as ingest_json
    import ducklake_jobs.ingest_tasks as job

    src = tmp_path / "in"
    src.mkdir()
    duckdb.execute(
        f"COPY ({TYPED.replace('range(40)', 'range(30)')}) TO '{src / 'a.json.gz'}' (FORMAT JSON)"
    )  # a NULL for some keys, a timestamp with a fraction, a date, booleans, doubles, longs
    write_json(src / "b.json", [{"id": 30 + i, "f8": i / 7, "name": f"n{i}", "at": "2024-01-05T10:00:00+02:00"} for i in range(5)])  # fmt: skip
    write_json(src / "c.jsonl", [{"id": 40, "mixed": 1}, {"id": 41, "mixed": "x"}, {"id": 42, "small": 2.5}])
    (src / "d.ndjson").write_text('{"id": 50, "name": "ok"}\n{"id": 51,}\n{"id": 52}\n')
    create = "CREATE TABLE lk.t(id BIGINT NOT NULL, name VARCHAR DEFAULT 'none', f8 DOUBLE)"
    direct = new_lake(make_location("sqlite"), tmp_path / "direct", create)
    one_by_one = new_lake(make_location("sqlite"), tmp_path / "one-by-one", create)
    observe, select = ingest_json.observe_json_lines, ingest_json.json_lines_load
    claimed: list[bool] = []
    loaded: list[bool] = []

    def noting_observe(*args: Any) -> Any:
        found = observe(*args)
        claimed.extend(f is not None for f in found)
        return found

    def noting_select(*args: Any) -> Any:
        loaded.append(select(*args) is not None)
        return select(*args)

    monkeypatch.setattr(job, "observe_json_lines", noting_observe)
    monkeypatch.setattr(job, "json_lines_load", noting_select)
    report = ingest(direct, src, onBadRecord="skip")
    assert claimed == [True, True, True] and loaded == [True, True, False]  # d: a bad line among its first
    monkeypatch.setattr(job, "observe_json_lines", lambda con, files, extents=None: [None] * len(files))
    python = ingest(one_by_one, src, onBadRecord="skip")
    same = ("records", "recordsSkipped", "firstSkipped", "columnsAdded", "rowsWritten", "filesWritten")
    assert {k: report.get(k) for k in same} == {k: python.get(k) for k in same}
    assert report["recordsSkipped"] == 1 and report["firstSkipped"][0].startswith(f"{src / 'd.ndjson'}:2: not JSON")
    assert columns(direct) == columns(one_by_one)
    assert read(direct, "SELECT rowid, * FROM lk.t ORDER BY rowid") == read(
        one_by_one, "SELECT rowid, * FROM lk.t ORDER BY rowid"
    )


def test_partitioned_and_sorted_like_duckdbs_insert(lake: CatalogLocation, tmp_path: Path) -> None:
    duck.run_workload(
        lake,
        [
            "CREATE TABLE lk.t(id BIGINT, part VARCHAR)",
            "ALTER TABLE lk.t SET PARTITIONED BY (part)",
            "ALTER TABLE lk.t SET SORTED BY (id DESC)",
        ],
    )
    ingest(lake, write_json(tmp_path / "in.json", [{"id": i, "part": "ab"[i % 2], "v": i * 1.5} for i in range(10)]))
    files = read(
        lake,
        "SELECT f.path, v.partition_value FROM __ducklake_metadata_lk.ducklake_data_file f JOIN "
        "__ducklake_metadata_lk.ducklake_file_partition_value v USING (data_file_id) ORDER BY 2",
    )
    assert [(p.split("/")[0], v) for p, v in files] == [("part=a", "a"), ("part=b", "b")]
    data = str(tmp_path / "data" / "main" / "t")
    ids = duckdb.execute(f"SELECT id FROM read_parquet('{data}/{files[0][0]}')").fetchall()
    assert ids == [(8,), (6,), (4,), (2,), (0,)]  # in the sort order, as DuckDB inserts
    assert read(lake, "SELECT count(*), sum(v) FROM lk.t WHERE part = 'b'") == [(5, 37.5)]
    duck.run_workload(lake, ["INSERT INTO lk.t VALUES (99, 'a', NULL)", "CALL ducklake_merge_adjacent_files('lk')"])
    assert read(lake, "SELECT count(*) FROM lk.t") == [(11,)]


@pytest.mark.parametrize("sorted_by", ["", "id DESC"], ids=["unsorted", "sorted"])
@pytest.mark.parametrize("runner", [run_in_process, run_on_spark], ids=["in-process", "spark"])
def test_partitioned_like_duckdbs_insert(
    make_location: Callable[[str], CatalogLocation],
    tmp_path: Path,
    runner: Runner,
    monkeypatch: pytest.MonkeyPatch,
    sorted_by: str,
) -> None:
    """An unsorted partitioned table gets all its partitions from one partitioned COPY per task
    (by month's integer, not its text); a sorted one a COPY per partition, in its order, from
    the rows held in key order: the same rows, partition values and hive directories as
    DuckDB's insert of the same file, a NULL key in DuckDB's default partition."""
    create = (
        "CREATE TABLE lk.t(id BIGINT, ts TIMESTAMP, part VARCHAR)",
        "ALTER TABLE lk.t SET PARTITIONED BY (month(ts), part)",
        *([f"ALTER TABLE lk.t SET SORTED BY ({sorted_by})"] if sorted_by else []),
    )
    src = tmp_path / "in.parquet"
    duckdb.execute(
        f"COPY (SELECT i AS id, CASE WHEN i % 17 = 0 THEN NULL ELSE TIMESTAMP '2024-01-01' + INTERVAL (i * 3) DAY END "
        f"AS ts, ['a', 'b', NULL][i % 3 + 1] AS part, (i * 0.5)::DOUBLE AS x FROM range(300) t(i)) TO '{src}' (FORMAT parquet)"
    )
    ours = new_lake(make_location("sqlite"), tmp_path / "ours", *create)
    theirs = new_lake(make_location("sqlite"), tmp_path / "theirs", *create)
    import ducklake_jobs.ingest_tasks as tasks
    from ducklake_jobs.parquet_writer import write_partitioned

    copies: list[tuple[str, ...]] = []  # in this process only: a Spark worker imports its own module

    def counted(*args: Any) -> Any:
        copies.append(args[3])
        return write_partitioned(*args)

    monkeypatch.setattr(tasks, "write_partitioned", counted)
    report = ingest(ours, src, runner=runner)
    assert copies == ([] if runner is run_on_spark or sorted_by else [("__p0", "__p1")])  # one COPY, both keys
    duck.run_workload(
        theirs,
        [
            "BEGIN",
            "ALTER TABLE lk.t ADD COLUMN x DOUBLE",
            f"INSERT INTO lk.t BY NAME SELECT * FROM '{src}'",
            "COMMIT",
        ],
    )
    assert report["rowsWritten"] == 300 and columns(ours) == columns(theirs)
    rows = "SELECT id, ts, part, x FROM lk.t ORDER BY id"
    assert read(ours, rows) == read(theirs, rows)

    def files(location: CatalogLocation) -> list[tuple[Any, ...]]:
        """Each file's directory, partition values and rows, and whether its rows' keys are its values."""
        return read(
            location,
            "SELECT regexp_extract(f.path, '^(.*)/[^/]*$', 1), list(v.partition_value ORDER BY v.partition_key_index), "
            "f.record_count, (SELECT bool_and(month(r.ts)::VARCHAR IS NOT DISTINCT FROM list(v.partition_value "
            "ORDER BY v.partition_key_index)[1]) FROM lk.t r WHERE r.filename LIKE '%/' || f.path) "
            "FROM __ducklake_metadata_lk.ducklake_data_file f JOIN __ducklake_metadata_lk.ducklake_file_partition_value v "
            "USING (data_file_id) GROUP BY f.data_file_id, f.path, f.record_count ORDER BY 1",
        )

    found = files(ours)
    assert found == files(theirs) and len(found) == 13 * 3 and all(keys_match for *_, keys_match in found)
    assert "month=__HIVE_DEFAULT_PARTITION__/part=__HIVE_DEFAULT_PARTITION__" in [d for d, *_ in found]
    if sorted_by:
        for (path,) in read(ours, "SELECT path FROM __ducklake_metadata_lk.ducklake_data_file"):
            ids = [
                i for (i,) in duckdb.execute(f"SELECT id FROM '{tmp_path / 'ours' / 'main' / 't' / path}'").fetchall()
            ]
            assert ids == sorted(ids, reverse=True), path


@pytest.mark.parametrize("runner", [run_in_process, run_on_spark], ids=["in-process", "spark"])
def test_write_tasks_fill_the_target_file_size_not_the_read_groups(
    make_location: Callable[[str], CatalogLocation], tmp_path: Path, runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pass 2 regroups the files by the table's target file size: six small files read by
    six tasks (a read group per file) are written by one, a file per partition, as DuckDB's
    insert of the six writes them; with a target of one byte, a task (and a file per
    partition) per input file."""
    import ducklake_jobs.ingest as job

    monkeypatch.setattr(job, "GROUP_BYTES", 1)  # pass 1: a task per file
    src = tmp_path / "in"
    for k in range(6):
        write_json(src / f"{k}.json", [{"id": 10 * k + i, "part": "ab"[i % 2]} for i in range(10)])
    create = ("CREATE TABLE lk.t(id BIGINT, part VARCHAR)", "ALTER TABLE lk.t SET PARTITIONED BY (part)")
    ours = new_lake(make_location("sqlite"), tmp_path / "ours", *create)
    theirs = new_lake(make_location("sqlite"), tmp_path / "theirs", *create)
    report = ingest(ours, src, runner=runner)
    duck.run_workload(theirs, [f"INSERT INTO lk.t BY NAME SELECT * FROM read_json('{src}/*.json')"])
    count = "SELECT count(*) FROM __ducklake_metadata_lk.ducklake_data_file"
    assert report["filesWritten"] == 2 and read(ours, count) == read(theirs, count) == [(2,)]
    rows = "SELECT id, part FROM lk.t ORDER BY id"
    assert read(ours, rows) == read(theirs, rows)
    tiny = new_lake(make_location("sqlite"), tmp_path / "tiny", *create)
    duck.run_workload(tiny, ["CALL lk.set_option('target_file_size', '1B', table_name => 't')"])
    assert ingest(tiny, src, runner=runner)["filesWritten"] == 12
    assert read(tiny, rows) == read(theirs, rows)


def test_spark_tasks_write_what_the_driver_would(
    make_location: Callable[[str], CatalogLocation], tmp_path: Path
) -> None:
    """Many files in groups as Spark tasks (local mode): the same table as in-process."""
    import ducklake_jobs.ingest as job

    src = tmp_path / "in"
    for k in range(4):
        write_json(src / f"{k}.json", records(20, 10 + k))
    tiny = "CALL lk.set_option('target_file_size', '1B', table_name => 't')"  # a write task per file
    one = new_lake(make_location("sqlite"), tmp_path / "one", "CREATE TABLE lk.t(id BIGINT)", tiny)
    two = new_lake(make_location("sqlite"), tmp_path / "two", "CREATE TABLE lk.t(id BIGINT)", tiny)
    saved = job.GROUP_BYTES
    job.GROUP_BYTES = 1  # a read task per file
    try:
        spark = ingest(one, src, runner=run_on_spark)
        ingest(two, src)
    finally:
        job.GROUP_BYTES = saved
    assert spark["ranOn"] == "spark" and spark["filesWritten"] == 4 and spark["rowsWritten"] == 80
    assert columns(one) == columns(two)
    assert read(one, "SELECT rowid, * FROM lk.t ORDER BY rowid") == read(
        two, "SELECT rowid, * FROM lk.t ORDER BY rowid"
    )


# ------------------------------------------------------------------ what is remembered


def test_a_file_ingested_before_is_refused_unless_asked(lake: CatalogLocation, tmp_path: Path) -> None:
    duck.run_workload(lake, ["CREATE TABLE lk.t(id BIGINT)"])
    src = write_json(tmp_path / "in" / "a.json", [{"id": 1}])
    first = ingest(lake, tmp_path / "in")
    with pytest.raises(DuckLakeError, match=f"already ingested: {src} \\(snapshot {first['committedSnapshot']}\\)"):
        ingest(lake, src)
    again = ingest(lake, src, reingest=True)
    assert again["rowsWritten"] == 1
    assert read(lake, "SELECT count(*) FROM lk.t") == [(2,)]
    write_json(src, [{"id": 1}, {"id": 2}])  # written again: a new file
    assert ingest(lake, src)["rowsWritten"] == 2
    info = read(lake, "SELECT commit_extra_info FROM ducklake_snapshots('lk') ORDER BY snapshot_id DESC LIMIT 1")
    assert json.loads(info[0][0])["ingest"]["files"][0][:2] == [str(src), src.stat().st_size]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_what_was_ingested_is_remembered_after_its_snapshot_expires(
    make_location: Callable[[str], CatalogLocation], tmp_path: Path, kind: str
) -> None:
    """The ingest ledger outlives snapshot expiry (the expire job's, then DuckDB's own) beside
    DuckDB's tables, which DuckDB keeps reading and writing; a purged table's rows go."""
    lake = new_lake(make_location(kind), tmp_path / "data", "CREATE TABLE lk.t(id BIGINT)")
    src = write_json(tmp_path / "in" / "a.json", [{"id": 1, "x": "s"}])
    first = ingest(lake, src)["committedSnapshot"]
    duck.run_workload(lake, ["INSERT INTO lk.t (id) VALUES (2)", "INSERT INTO lk.t (id) VALUES (3)"])
    with closing(Catalog.open(lake)) as catalog:
        expired = run_operation(catalog, "expireSnapshots", None, {"retainLast": 1})["expired"]
    assert first in expired
    assert read(lake, "SELECT count(*) FROM ducklake_snapshots('lk') WHERE commit_extra_info LIKE '%ingest%'") == [(0,)]
    refused = f"already ingested: {src} \\(snapshot {first}\\)"
    with pytest.raises(DuckLakeError, match=refused):
        ingest(lake, src)
    assert ingest(lake, src, reingest=True)["rowsWritten"] == 1
    duck.run_workload(lake, [
        "INSERT INTO lk.t (id, x) VALUES (4, 'd')",
        "CALL ducklake_merge_adjacent_files('lk')",
        "CALL ducklake_expire_snapshots('lk', older_than => now())",
    ])  # fmt: skip
    with pytest.raises(DuckLakeError, match=refused):
        ingest(lake, src)
    assert read(lake, "SELECT id, x FROM lk.t ORDER BY id") == [(1, "s"), (1, "s"), (2, None), (3, None), (4, "d")]
    ledger = "SELECT count(*) FROM __ducklake_metadata_lk.ducklake_operator_ingested_files"
    assert read(lake, ledger) == [(2,)]
    duck.run_workload(lake, ["DROP TABLE lk.t", "CREATE TABLE lk.u(id BIGINT)"])
    with closing(Catalog.open(lake)) as catalog:
        run_operation(catalog, "expireSnapshots", None, {"retainLast": 1})
    assert read(lake, ledger) == [(0,)]


def test_dry_run_plans_and_writes_nothing(lake: CatalogLocation, tmp_path: Path) -> None:
    duck.run_workload(lake, ["CREATE TABLE lk.t(id BIGINT)"])
    before = read(lake, "SELECT count(*) FROM ducklake_snapshots('lk')")
    report = ingest(lake, write_json(tmp_path / "a.json", [{"id": 1, "x": "s"}, {"id": 2, "x": 1}]), dryRun=True)
    assert report["columnsAdded"] == ["+ add column x varchar", "+ add column x_long int64"]
    assert report["committedSnapshot"] is None and report["records"] == 2
    assert read(lake, "SELECT count(*) FROM ducklake_snapshots('lk')") == before
    assert not list((tmp_path / "data").rglob("*.parquet"))


def test_s3_sources(lake: CatalogLocation, tmp_path: Path, s3_bucket: str) -> None:
    import pyarrow.fs as pafs

    from ducklake_operator import storage

    duck.run_workload(lake, ["CREATE TABLE lk.t(id BIGINT)"])
    fs, root = storage.filesystem(s3_bucket + "in/")
    assert isinstance(fs, pafs.S3FileSystem)
    for k in range(2):
        with fs.open_output_stream(f"{root}{k}.json") as out:
            out.write(json.dumps({"id": k, "v": f"s{k}"}).encode() + b"\n")
    report = ingest(lake, s3_bucket + "in/")
    assert report["filesRead"] == 2 and report["rowsWritten"] == 2
    assert read(lake, "SELECT id, v FROM lk.t ORDER BY id") == [(0, "s0"), (1, "s1")]
    with pytest.raises(DuckLakeError, match="already ingested"):
        ingest(lake, s3_bucket + "in/*.json")


# ------------------------------------------------------------------ bad input


def bad_json_lines(tmp_path: Path) -> Path:
    path = tmp_path / "in" / "bad.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"id": 1}\n{"id": 2,\n\n[3]\n{"id": 4}\n')
    return path


def text_file(name: str, text: str) -> Callable[[Path], Path]:
    def make(tmp_path: Path) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path.parent if name.startswith("d/") else path

    return make


def parquet_file(name: str, select: str) -> Callable[[Path], Path]:
    def make(tmp_path: Path) -> Path:
        duckdb.execute(f"COPY ({select}) TO '{tmp_path / name}' (FORMAT parquet)")
        return tmp_path / name

    return make


def empty_directory(tmp_path: Path) -> Path:
    (tmp_path / "empty").mkdir()
    return tmp_path / "empty"


def one_good_file_one_without_a_value(tmp_path: Path) -> Path:
    write_json(tmp_path / "nn" / "a.json", [{"id": 1, "must": 1}])  # its task writes a file
    write_json(tmp_path / "nn" / "b.json", [{"id": 2, "must": 2}, {"id": 3}])
    return tmp_path / "nn"


BAD: dict[str, tuple[Callable[[Path], Path], str]] = {
    "no files": (empty_directory, r"ingest: no file at .*empty"),
    "no such path": (lambda p: p / "missing", r"ingest: no file at .*missing"),
    "only unknown extensions": (
        text_file("d/x.txt", "{}"),
        r"no file to ingest \(1 hidden or of an unknown extension\) at .*; set format to read them",
    ),
    "unknown extension": (text_file("x.txt", "{}"), r"cannot tell the format of .*x\.txt from its extension"),
    "json named parquet": (text_file("x.parquet", '{"id": 1}\n'), r"x\.parquet is not a PARQUET file DuckDB can read"),
    "parquet named json": (
        parquet_file("x.json", "SELECT 1 AS id"),
        r"ingest: .*x\.json is not JSON lines: it holds binary data \(a Parquet file\?\)",
    ),
    "a line that is not json": (
        bad_json_lines,
        r"ingest: .*bad\.json:2: not JSON \(.*\) \(onBadRecord: skip skips such records\)",
    ),
    "a bad csv row": (text_file("x.csv", "id,v\n1,a\n2,b,c\n"), r"ingest: .*x\.csv:3: not a CSV row of this file"),
    "a map column": (
        parquet_file("m.parquet", "SELECT MAP {'a': 1} AS m"),
        r"column m of .*m\.parquet is MAP\(VARCHAR, INTEGER\), which ingest does not read",
    ),
    "not null without a value": (
        one_good_file_one_without_a_value,
        r"ingest: .*b\.json:2: no value for must, which is NOT NULL .*; nothing was committed and the job's files "
        "were deleted",
    ),
}


@pytest.mark.parametrize("runner", [run_in_process, run_on_spark], ids=["in-process", "spark"])
@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_clear_error_and_commits_nothing(
    lake: CatalogLocation, tmp_path: Path, case: str, runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same message from Spark tasks as in-process (a task's exception reaches the driver
    as itself, not as Spark's "An exception was thrown from the Python worker")."""
    import ducklake_jobs.ingest as job

    monkeypatch.setattr(job, "GROUP_BYTES", 1)  # a task per file in each pass
    duck.run_workload(
        lake,
        [
            "CREATE TABLE lk.t(id BIGINT, must BIGINT NOT NULL)",
            "CALL lk.set_option('target_file_size', '1B', table_name => 't')",
        ],
    )
    make, message = BAD[case]
    path = make(tmp_path)
    before = read(lake, "SELECT count(*) FROM ducklake_snapshots('lk')")
    with pytest.raises(DuckLakeError, match=message) as err:
        ingest(lake, path, runner=runner)
    assert "\n" not in str(err.value) and "Traceback" not in str(err.value)
    assert read(lake, "SELECT count(*) FROM ducklake_snapshots('lk')") == before
    assert not list((tmp_path / "data").rglob("*.parquet"))  # and the job's files deleted


def test_bad_records_skipped_and_counted(lake: CatalogLocation, tmp_path: Path) -> None:
    duck.run_workload(lake, ["CREATE TABLE lk.t(id BIGINT, must BIGINT NOT NULL)"])
    src = bad_json_lines(tmp_path)  # lines 1 and 5 lack must, 2 is no JSON, 4 no object
    nn = write_json(tmp_path / "in" / "nn.json", [{"id": 5, "must": 5}, {"id": 6}, {"id": 7, "ID": 7, "must": 7}])
    (tmp_path / "in" / "x.csv").write_text("id,must\n8,8\n9,9,9\n")
    report = ingest(lake, tmp_path / "in", onBadRecord="skip")
    assert report["recordsSkipped"] == 7 and report["rowsWritten"] == 2
    assert read(lake, "SELECT id FROM lk.t ORDER BY id") == [(5,), (8,)]
    first = report["firstSkipped"]  # those found reading first, then those found converting
    assert (
        first[0].startswith(f"{src}:2: not JSON (") and first[1] == f"{src}:4: a JSON array is not a record (an object)"
    )
    assert first[2] == f"{nn}:3: two fields named 'ID' (names are case-insensitive)"
    assert first[3].startswith(f"{tmp_path / 'in' / 'x.csv'}:3: not a CSV row of this file (")
    assert first[4] == f"{src}:1: no value for must, which is NOT NULL"
