"""The schema evolution rules of docs/ingest-schema-evolution.md, pure: what records'
fields are seen holding -> the columns ingestion adds and the row each record becomes. The
four examples, the widest-type table, the edge cases, precedence, naming, empty names, declared
columns. (tests/maintenance/test_ingest_vs_duckdb.py runs the same through DuckDB.)"""

from __future__ import annotations

import datetime
import decimal
import json
from dataclasses import replace
from typing import Any

import pytest

from ducklake_operator.api.v1alpha1.table import TableSpec
from ducklake_operator.evolution.auto_schema import (
    EvolutionError,
    IngestPlan,
    evolved_from,
    extents_read,
    layout_after,
    plan_ingest,
)
from ducklake_operator.evolution.observed import (
    BadRecord,
    Fields,
    FieldSeen,
    MissingValue,
    ShapeSeen,
    json_shape,
    observe_record,
    observe_typed,
    typed_field,
)
from ducklake_operator.evolution.planner import plan_table
from ducklake_operator.evolution.routing import convert_record, convert_value, text_of
from ducklake_operator.model.changes import AddColumn, SetColumnTags
from ducklake_operator.model.state import CatalogState, ColumnState, SchemaState, SnapshotInfo, TableState
from ducklake_operator.model.types import Field, parse_type
from ducklake_operator.model.value_kinds import (
    BASE_KINDS,
    INTEGER_RANGES,
    TIMESTAMPS,
    Shape,
    evolved_name,
    fit_reads_extent,
    fits,
    widest,
)
from support import manifests
from support.manifests import parse_as
from support.widest_type_table import DUCKLAKE, WIDEST_TABLE

EMPTY = TableState(1, "uuid", 0, "main", "t", "t/", True, 0, (), 1)


def table(*columns: tuple[str, str] | Field) -> TableState:
    fields = tuple(c if isinstance(c, Field) else Field(c[0], parse_type(c[1])) for c in columns)
    layout = layout_after((), tuple(AddColumn(1, "main.t", (), f) for f in fields), 1)
    return replace(EMPTY, columns=layout, next_column_id=_next_id(layout))


def _next_id(columns: tuple[ColumnState, ...]) -> int:
    return max((c.column_id for top in columns for c in top.walk()), default=0) + 1


def plan(t: TableState, records: list[dict[str, Any]]) -> IngestPlan:
    fields: Fields = {}
    for r in records:
        observe_record(fields, r)
    return plan_ingest(t, fields)


def after(t: TableState, p: IngestPlan) -> TableState:
    return replace(t, columns=p.layout, next_column_id=_next_id(p.layout))


def columns(t: TableState) -> dict[str, tuple[str, str | None]]:
    """Top-level name -> (type, evolved_from comment)."""
    return {c.name: (str(c.type), c.comment) for c in t.columns}


def rows(p: IngestPlan, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [dict(zip(p.level.names, convert_record(r, p.level), strict=True)) for r in records]


def test_example_1_a_primitive_after_an_array() -> None:
    """a[]::long first; a::string later: a_string and a_array_string, a stays and takes longs."""
    first = plan(EMPTY, [{"a": [1, 2]}])
    t = after(EMPTY, first)
    assert columns(t) == {"a": ("list<int64>", None)}
    second = plan(t, [{"a": "x"}])
    t = after(t, second)
    assert columns(t) == {
        "a": ("list<int64>", None),
        "a_array_string": ("list<varchar>", "evolved_from:a"),
        "a_string": ("varchar", "evolved_from:a"),
    }
    later = plan(t, [{"a": "y"}, {"a": 5}, {"a": [6, 7]}, {"a": True}])
    assert later.changes == ()  # every shape has its columns now
    assert rows(later, [{"a": "y"}, {"a": 5}, {"a": [6, 7]}, {"a": True}]) == [
        {"a": None, "a_array_string": ["y"], "a_string": "y"},
        {"a": [5], "a_array_string": ["5"], "a_string": "5"},  # convertible to long: into a, wrapped
        {"a": [6, 7], "a_array_string": ["6", "7"], "a_string": None},
        {"a": [1], "a_array_string": ["true"], "a_string": "true"},
    ]


def test_example_2_the_largest_dimension_takes_the_name() -> None:
    records: list[dict[str, Any]] = [{"a": {"b": v}} for v in ("s", ["s"], [["s"]], [[["s"]]])]
    p = plan(EMPTY, records)
    (a,) = after(EMPTY, p).columns
    assert [(c.name, str(c.type), c.comment) for c in a.children] == [
        ("b", "list<list<list<varchar>>>", None),
        ("b_string", "varchar", "evolved_from:b"),
        ("b_array_string", "list<varchar>", "evolved_from:b"),
        ("b_array2_string", "list<list<varchar>>", "evolved_from:b"),
    ]
    assert [r["a"] for r in rows(p, records[:2])] == [
        {"b": [[["s"]]], "b_string": "s", "b_array_string": ["s"], "b_array2_string": [["s"]]},
        {"b": [[["s"]]], "b_string": None, "b_array_string": ["s"], "b_array2_string": [["s"]]},
    ]


def test_example_3_long_and_double_make_one_double() -> None:
    records: list[dict[str, Any]] = [{"a": {"b": True}}, {"a": {"b": 1}}, {"a": {"b": 1.5}}]
    p = plan(EMPTY, records)
    (a,) = after(EMPTY, p).columns
    assert [(c.name, str(c.type)) for c in a.children] == [("b", "float64"), ("b_boolean", "boolean")]
    assert [r["a"] for r in rows(p, records)] == [
        {"b": 1.0, "b_boolean": True},
        {"b": 1.0, "b_boolean": None},
        {"b": 1.5, "b_boolean": None},
    ]


def test_example_4_records_of_every_dimension() -> None:
    records: list[dict[str, Any]] = [
        {"a": {"b": {"c": "s"}}},
        {"a": {"b": [{"x": "s"}]}},
        {"a": {"b": [[{"y": "s"}]]}},
        {"a": {"b": [[[{"z": "s"}]]]}},
    ]
    p = plan(EMPTY, records)
    (a,) = after(EMPTY, p).columns
    record = "struct<c: varchar, x: varchar, y: varchar, z: varchar>"
    assert [(c.name, str(c.type)) for c in a.children] == [
        ("b", f"list<list<list<{record}>>>"),
        ("b_record", "struct<c: varchar>"),
        ("b_array_record", "list<struct<x: varchar>>"),
        ("b_array2_record", "list<list<struct<y: varchar>>>"),
    ]
    got = [r["a"] for r in rows(p, records[:2])]
    assert got[0] == {
        "b": [[[{"c": "s", "x": None, "y": None, "z": None}]]],
        "b_record": {"c": "s"},
        "b_array_record": None,
        "b_array2_record": None,
    }
    assert got[1]["b_array_record"] == [{"x": "s"}] and got[1]["b_record"] is None


def typed_plan(t: TableState, name: str, kind: str) -> IngestPlan:
    fields: Fields = {}
    fields[name] = FieldSeen(name)
    fields[name].shape(Shape(0, kind)).values = 1
    return plan_ingest(t, fields)


@pytest.mark.parametrize("column, value", [(c, v) for c, row in WIDEST_TABLE.items() for v in row])
def test_widest_type_table(column: str, value: str) -> None:
    t = table(("f", DUCKLAKE[column]))
    p = typed_plan(t, "f", value)
    assert [c.field.name for c in p.changes] == [f"f_{k}" for k in WIDEST_TABLE[column][value]]
    assert all(c.field.comment == "evolved_from:f" for c in p.changes)
    assert [str(c.field.type) for c in p.changes] == [DUCKLAKE[k] for k in WIDEST_TABLE[column][value]]
    # the value goes into every column of the field it fits; into the original column when
    # no column was added for it, and a long into a timestamp column too
    routed = {t.index for t in p.level.routes["f"] if t.takes(Shape(0, value))}
    into_original = not WIDEST_TABLE[column][value] or (column, value) == ("timestamp", "long")
    assert (0 in routed) == into_original
    assert routed >= set(range(1, len(p.level.names)))


def test_widest_is_symmetric_and_string_is_the_common_denominator() -> None:
    kinds = list(DUCKLAKE)
    for a in kinds:
        for b in kinds:
            assert widest(a, b) == widest(b, a)
    assert widest("boolean", "date") == "string" and widest("record", "long") is None
    assert widest("decimal(10,2)", "long") == "string" and widest("blob", "long") is None


def test_edge_case_2_timestamp_and_long_together_make_two_columns() -> None:
    p = plan(EMPTY, [{"started": 1}])
    assert [str(c.field.type) for c in p.changes] == ["int64"]
    ts = table(("started", "timestamp"))
    p = typed_plan(ts, "started", "long")
    assert [(c.field.name, str(c.field.type)) for c in p.changes] == [("started_long", "int64")]
    assert convert_record({"started": 1_700_000_000_123}, p.level) == [
        datetime.datetime(2023, 11, 14, 22, 13, 20, 123000),
        1_700_000_000_123,
    ]
    # first seen together: a field for each, the long (wider: timestamps convert to it) named as the field
    fields: Fields = {}
    fields["started"] = seen = FieldSeen("started")
    seen.shape(Shape(0, "timestamp"))
    seen.shape(Shape(0, "long"))
    p = plan_ingest(EMPTY, fields)
    assert [(c.field.name, str(c.field.type)) for c in p.changes] == [
        ("started", "int64"),
        ("started_timestamp", "timestamp"),
    ]


def test_records_take_the_name_before_arrays_before_primitives() -> None:
    p = plan(EMPTY, [{"a": 1}, {"a": [[2]]}, {"a": {"x": 1}}])
    assert [(c.field.name, str(c.field.type)) for c in p.changes] == [
        ("a", "struct<x: int64>"),
        ("a_long", "int64"),
        ("a_array2_long", "list<list<int64>>"),
    ]
    p = plan(EMPTY, [{"a": 1}, {"a": [[2]]}, {"a": ["x"]}])
    assert [(c.field.name, str(c.field.type)) for c in p.changes] == [
        ("a", "list<list<varchar>>"),
        ("a_long", "int64"),
        ("a_array2_long", "list<list<int64>>"),
        ("a_array_string", "list<varchar>"),
    ]


def test_names_with_type_suffixes() -> None:
    assert evolved_name("coordinates", Shape(3, "long")) == "coordinates_array3_long"
    assert evolved_name("a", Shape(1, "record")) == "a_array_record"
    assert evolved_name("p", Shape(0, "decimal(10,2)")) == "p_decimal_10_2"


def test_empty_names_are_dropped_and_names_fold_as_duckdbs() -> None:
    p = plan(EMPTY, [{"": 1, "Id": 1, "s": {"": 2, "k": 3}}, {"ID": 2}])
    assert [(c.field.name, str(c.field.type)) for c in p.changes] == [("Id", "int64"), ("s", "struct<k: int64>")]
    assert rows(p, [{"ID": 2, "": 9}]) == [{"Id": 2, "s": None}]
    with pytest.raises(BadRecord, match="two fields named"):
        observe_record({}, {"a": 1, "A": 2})


def test_declared_columns_always_win() -> None:
    """Existing columns keep their names and types: narrower values go in (a declared int32
    takes longs within its range), wider ones get columns of their own, and a column that is
    not an evolved one is never taken for one."""
    t = table(("n", "int32"), ("s", "varchar"), ("d", "decimal(10,2)"))
    p = plan(t, [{"n": 5, "s": 1, "d": 7}])
    assert p.changes == ()
    assert rows(p, [{"n": 5, "s": 1, "d": 7}]) == [{"n": 5, "s": "1", "d": 7}]
    p = plan(t, [{"n": 5}, {"n": 2**40}])
    assert [(c.field.name, str(c.field.type)) for c in p.changes] == [("n_long", "int64")]
    assert rows(p, [{"n": 5}, {"n": 2**40}]) == [
        {"n": 5, "s": None, "d": None, "n_long": 5},
        {"n": None, "s": None, "d": None, "n_long": 2**40},
    ]
    taken = table(("a", "int64"), ("a_string", "varchar"))
    with pytest.raises(EvolutionError, match="a_string is a column of its own"):
        plan(taken, [{"a": "x"}])


def test_new_fields_of_an_existing_struct_and_list_of_structs() -> None:
    t = table(("s", "struct<x: int64>"), ("l", "struct<y: varchar>[]"))
    p = plan(t, [{"s": {"x": 1, "z": True}, "l": [{"y": "a", "w": 2.5}]}])
    assert [(c.parent_path, c.field.name, str(c.field.type)) for c in p.changes] == [
        (("s",), "z", "boolean"),
        (("l", "element"), "w", "float64"),
    ]
    layout = {c.name: c for c in p.layout}
    assert [c.name for c in layout["s"].children] == ["x", "z"]
    assert [c.column_id for c in layout["s"].children] == [2, 6]  # ids continue after every column
    assert rows(p, [{"s": {"x": 1, "z": True}, "l": [{"y": "a", "w": 2.5}]}]) == [
        {"s": {"x": 1, "z": True}, "l": [{"y": "a", "w": 2.5}]}
    ]


def test_not_null_and_defaults() -> None:
    t = table(Field("id", parse_type("int64"), nullable=False), ("v", "varchar"))
    p = plan(t, [{"id": 1}])
    with pytest.raises(MissingValue, match="no value for id"):
        convert_record({"v": "x"}, p.level)
    fields: Fields = {}
    observe_record(fields, {"v": "x"})
    observe_record(fields, {"v": "y", "id": 3})
    with_default = plan_ingest(t, fields, {t.columns[0].column_id: 7})
    assert convert_record({"v": "x"}, with_default.level) == [7, "x"]
    assert convert_record({"v": "x", "id": 3}, with_default.level) == [3, "x"]


def test_shapes_of_json_values() -> None:
    assert json_shape([1, 2.5]) == Shape(1, "double")
    assert json_shape([]) == Shape(1, "nothing")
    assert json_shape([[], [1], None]) == Shape(2, "long")
    assert json_shape(2**70) == Shape(0, "string")  # beyond 64 bits: its digits, nothing lost
    with pytest.raises(BadRecord, match="mixes records"):
        json_shape([{"a": 1}, 2])


@pytest.mark.parametrize(
    "value, kind, to, expected",
    [
        (True, "boolean", "string", "true"),
        (1.0, "double", "string", "1.0"),
        (datetime.date(2024, 1, 15), "date", "long", 1705276800000),
        (datetime.date(2024, 1, 15), "date", "timestamp", datetime.datetime(2024, 1, 15)),
        (datetime.datetime(1969, 12, 31, 23, 59, 59, 999500), "timestamp", "long", -1),  # floored
        (datetime.datetime(2024, 1, 15, 10, 0, 0, 500000), "timestamp", "string", "2024-01-15 10:00:00.5"),
        (datetime.time(10, 0, 0, 250000), "time", "string", "10:00:00.25"),
        (0, "long", "timestamp", datetime.datetime(1970, 1, 1)),
    ],
)
def test_conversions(value: Any, kind: str, to: str, expected: Any) -> None:
    assert convert_value(value, kind, to) == expected


def test_text_forms_are_duckdbs() -> None:
    import duckdb

    con = duckdb.connect()
    values = [
        ("DOUBLE", "double", 1e20),
        ("DOUBLE", "double", 0.1),
        ("DOUBLE", "double", float("nan")),
        ("TIMESTAMP", "timestamp", datetime.datetime(1, 1, 1, 0, 0, 0, 1)),
        ("DATE", "date", datetime.date(999, 3, 4)),
        ("TIME", "time", datetime.time(23, 59, 59, 999999)),
        ("BOOLEAN", "boolean", False),
    ]
    for sql_type, kind, value in values:
        row = con.execute(f"SELECT CAST(CAST(? AS {sql_type}) AS VARCHAR)", [value]).fetchone()
        assert row is not None and text_of(value, kind) == row[0], (kind, value)


def test_an_existing_record_column_takes_records_of_a_smaller_dimension() -> None:
    t = table(("a", "struct<x: int64>[]"))
    p = plan(t, [{"a": {"x": 1, "y": "s"}}])
    assert [(c.parent_path, c.field.name) for c in p.changes] == [(("a", "element"), "y")]
    assert rows(p, [{"a": {"x": 1, "y": "s"}}]) == [{"a": [{"x": 1, "y": "s"}]}]


def test_empty_arrays_are_written_somewhere() -> None:
    """An empty array is a value (not NULL): beside records of nothing it gets a column."""
    p = plan(EMPTY, [{"a": []}, {"a": {}}])
    assert [(c.field.name, str(c.field.type)) for c in p.changes] == [("a_array_string", "list<varchar>")]
    assert rows(p, [{"a": []}]) == [{"a_array_string": []}]
    p = plan(EMPTY, [{"a": []}, {"a": [{"x": 1}]}])  # an array of records holds it: no other column
    assert [(c.field.name, str(c.field.type)) for c in p.changes] == [("a", "list<struct<x: int64>>")]
    assert rows(p, [{"a": []}]) == [{"a": []}]


def test_longs_go_to_an_existing_double_column_of_their_field() -> None:
    """docs/ingest-schema-evolution.md §3.1 for a field seen before: longs beside a double
    column need no column of their own."""
    t = table(("a", "struct<x: int64>"))
    first = plan(t, [{"a": [1.5]}])
    assert [c.field.name for c in first.changes] == ["a_array_double"]
    again = plan(after(t, first), [{"a": [1]}, {"a": [2.5]}])
    assert again.changes == ()
    assert rows(again, [{"a": [1]}]) == [{"a": None, "a_array_double": [1.0]}]


@pytest.mark.parametrize(
    "text, kind",
    [
        ("2024-01-15", "date"),
        ("2024-01-15T10:30:00", "timestamp"),
        ("2024-01-15 10:30:00.25", "timestamp"),
        ("2024-01-15T10:30:00.123456Z", "timestamp"),
        ("2024-01-15T10:30:00+02:00", "timestamp"),
        ("2024-02-30", None),  # no such day
        ("2024-01-15T25:00:00", None),
        ("2024-01-15T10:30:00.1234567", None),  # finer than a timestamp holds
        ("2024-01-15T10:30", None),
        ("01/15/2024", None),
        ("20240115", None),
        ("2024-01-15 is a day", None),
        ("text", None),
    ],
)
def test_json_strings_in_iso_form_are_dates_and_timestamps(text: str, kind: str | None) -> None:
    assert json_shape(text) == Shape(0, kind or "string")
    assert json_shape([text, None]) == Shape(1, kind or "string")


def test_date_strings_convert_as_dates_and_keep_their_text_in_strings() -> None:
    assert convert_value("2024-01-15", "date", "date") == datetime.date(2024, 1, 15)
    assert convert_value("2024-01-15", "date", "timestamp") == datetime.datetime(2024, 1, 15)
    assert convert_value("2024-01-15", "date", "long") == 1705276800000
    assert convert_value("2024-01-15T10:30:00+02:00", "timestamp", "timestamp") == datetime.datetime(2024, 1, 15, 8, 30)
    assert convert_value("2024-01-15T10:30:00Z", "timestamp", "string") == "2024-01-15T10:30:00Z"


def test_seed_rule_3_a_date_after_a_boolean_makes_a_string_and_a_date_column() -> None:
    """docs/ingest-schema-evolution.md §2.3's example: ``a::boolean`` exists, ``a::date``
    arrives (as JSON writes a date)."""
    t = table(("a", "boolean"))
    p = plan(t, [{"a": "2024-01-15"}])
    assert [(c.field.name, str(c.field.type)) for c in p.changes] == [("a_string", "varchar"), ("a_date", "date")]
    assert rows(p, [{"a": "2024-01-15"}, {"a": True}]) == [
        {"a": None, "a_date": datetime.date(2024, 1, 15), "a_string": "2024-01-15"},
        {"a": True, "a_date": None, "a_string": "true"},
    ]


def test_a_manifest_declaring_an_evolved_column_keeps_its_marker() -> None:
    """The schema planner keeps the ``evolved_from`` comment ingest wrote
    (docs/ingest-schema-evolution.md §6.3): a manifest
    that declares the column without a comment changes nothing; one with a comment gets it
    after the marker's line, said in a note; ingest still reads the marker either way."""
    t = table(("a", "int64"))
    t = replace(after(t, plan(t, [{"a": "x"}])), schema_id=1)
    assert columns(t)["a_string"] == ("varchar", "evolved_from:a")
    state = CatalogState(
        SnapshotInfo(3, None, 1, 4, 1), "1.0", "/d/", {}, {"main": SchemaState(1, "u", "main", "main/", True, 1)},
        {("main", "t"): t},
    )  # fmt: skip

    def planned(comment: str | None) -> tuple[list[Any], list[str]]:
        column: dict[str, Any] = {"name": "a_string", "type": "varchar"} | ({"comment": comment} if comment else {})
        spec = parse_as(TableSpec, manifests.table("t", "lake", [{"name": "a", "type": "int64"}, column]))
        p = plan_table(spec, state)
        return [c for c in p.changes if isinstance(c, SetColumnTags)], list(p.notes)

    assert planned(None) == ([], [])
    tags, notes = planned("what a held as text")
    assert [c.tags for c in tags] == [(("comment", "evolved_from:a\nwhat a held as text"),)]
    assert notes == [
        "a_string: its comment keeps the line 'evolved_from:a' before the manifest's comment "
        "(ingest routes the field's values by it)"
    ]
    assert planned("evolved_from:a") == ([], [])  # the marker declared as it is
    with_comment = replace(t, columns=tuple(
        replace(c, tags={"comment": "evolved_from:a\nwhat a held as text"}) if c.name == "a_string" else c
        for c in t.columns
    ))  # fmt: skip
    assert evolved_from(with_comment.columns[1]) == "a"
    assert plan(with_comment, [{"a": "y"}]).changes == ()  # a_string is still a's column
    state = replace(state, tables={("main", "t"): with_comment})
    assert planned("what a held as text") == ([], [])
    tags, _ = planned(None)  # the manifest's comment removed: the marker stays
    assert [c.tags for c in tags] == [(("comment", "evolved_from:a"),)]


def parsed(*texts: str) -> list[dict[str, Any]]:
    """JSON lines as the reader parses them (a number with a fraction or exponent: its text)."""
    return [json.loads(t, parse_float=decimal.Decimal) for t in texts]


@pytest.mark.parametrize(
    "declared, held, not_held",
    [
        ("decimal(10,2)", ["12.5", "7", "-3.1", "0.01", "99999999.99", "1e2", "12.50", "true"], ["12.345", "1e8", "2.5e-3"]),
        ("decimal(38,10)", ["12345678901234567890.5", "0.0000000001"], ["0.00000000001"]),  # beyond a double's digits
        ("decimal(2,2)", ["0.99", "-0.5"], ["1", "true"]),  # no integer digit: a boolean's 1 does not fit
        ("int16", ["7", "-32768", "false"], ["32768", "1.5"]),
        ("float32", ["12.5", "0.1", "123456", "16777216", "-3.4e38", "true"], ["1234567.5", "16777217", "1e-38", "NaN"]),
        ("timestamptz", ['"2024-01-15T10:30:00Z"', '"2024-01-15T10:30:00.123456"', '"2024-01-15"', "0"], ['"soon"']),
        ("timestamp_ms", ['"2024-01-15T10:30:00.123"', '"2024-01-15"', "1705314600123"], ['"2024-01-15T10:30:00.1234"']),
        ("timestamp_s", ['"2024-01-15 10:30:00"', '"2024-01-15"'], ['"2024-01-15T10:30:00.5"', "1705314600000"]),
        ("uuid", ['"550e8400-e29b-41d4-a716-446655440000"', '"550E8400-E29B-41D4-A716-446655440000"'],
         ['"550e8400e29b41d4a716446655440000"', '"x"']),
        ("time", ['"10:30:00"', '"23:59:59.999999"'], ['"24:00:00"', '"10:30"', "5"]),
    ],
)  # fmt: skip
def test_declared_columns_take_the_values_they_hold_exactly(
    declared: str, held: list[str], not_held: list[str]
) -> None:
    """A column of a type no base kind is takes each value whose text it holds
    exactly (a JSON number's own text, not the double's), and needs no other column when all
    fit; any other value gets the columns of docs/ingest-schema-evolution.md §2.3 and is not
    written into it. The plan's
    answer for a field's values agrees with each value's (``holds``)."""
    t = table(("v", declared))
    for text in held:
        p = plan(t, parsed(f'{{"v": {text}}}'))
        if declared.startswith("timestamp") and text.isdigit():  # §3.2: routed, and a column of its own
            assert "v_long" in [c.field.name for c in p.changes], text
        else:
            assert p.changes == (), text
        (row,) = rows(p, parsed(f'{{"v": {text}}}'))
        assert row["v"] is not None, text
    for text in not_held:
        p = plan(t, parsed(f'{{"v": {text}}}'))
        assert p.changes, text
        (row,) = rows(p, parsed(f'{{"v": {text}}}'))
        assert row["v"] is None and any(v is not None for k, v in row.items() if k != "v"), (text, row)
    records = parsed(*(f'{{"v": {text}}}' for text in held + not_held))
    together = plan(t, records)
    assert together.changes  # one value that does not fit is enough for the columns
    for text, row in zip(held + not_held, rows(together, records), strict=True):  # and every value lands
        assert (row["v"] is not None) == (text in held) and any(v is not None for v in row.values()), (text, row)


def test_longs_beside_doubles_a_declared_column_holds_get_their_own_column() -> None:
    """docs/ingest-schema-evolution.md §3.1 sends a field's longs to its double column, which a
    declared decimal holding
    the doubles is not: a long it does not hold gets columns of its own."""
    records = parsed('{"v": 0.5}', '{"v": 3}')
    p = plan(table(("v", "decimal(2,2)")), records)
    assert [c.field.name for c in p.changes] == ["v_string", "v_long"]
    assert rows(p, records) == [
        {"v": decimal.Decimal("0.5"), "v_string": "0.5", "v_long": None},
        {"v": None, "v_string": "3", "v_long": 3},
    ]


def test_declared_values_are_the_exact_ones() -> None:
    t = table(("d", "decimal(38,10)"), ("f", "float32"), ("z", "timestamptz"), ("m", "timestamp_ms"), ("u", "uuid"))
    record = parsed('{"d": 12345678901234567890.5, "f": 0.1, "z": "2024-01-15T12:30:00+02:00", "m": 1705314600123, '
                    '"u": "550E8400-E29B-41D4-A716-446655440000"}')  # fmt: skip
    (row,) = rows(plan(t, record), record)
    assert row["d"] == decimal.Decimal("12345678901234567890.5") and row["f"] == 0.1
    assert row["z"] == datetime.datetime(2024, 1, 15, 10, 30, tzinfo=datetime.UTC)
    assert row["m"] == datetime.datetime(2024, 1, 15, 10, 30, 0, 123000)
    assert row["u"] == "550E8400-E29B-41D4-A716-446655440000"  # DuckDB casts the text


def test_a_typed_sources_doubles_are_not_known_to_fit() -> None:
    """A Parquet or CSV column's values are not looked at one by one when planning: a declared
    decimal gets the columns of docs/ingest-schema-evolution.md §6.2 for a double column (the
    values it holds still go into it)."""
    fields: Fields = {}
    observe_typed(fields, [typed_field("v", parse_type("float64"))])
    p = plan_ingest(table(("v", "decimal(10,2)")), fields)
    assert [c.field.name for c in p.changes] == ["v_string", "v_double"]
    typed = {"v": typed_field("v", parse_type("float64"))}
    assert convert_record({"v": 12.5}, p.level, typed)[0] == decimal.Decimal("12.5")
    assert convert_record({"v": 12.345}, p.level, typed)[0] is None


# what is seen of some values: nothing, a narrow extent every declared type holds, a wide one none does
EXTENTS = (
    ShapeSeen(),
    ShapeSeen(values=1, low=0, high=1, forms=frozenset({"uuid", "time"})),
    ShapeSeen(values=1, low=-(10**30), high=10**30, scale=9, digits=40, forms=frozenset(), exact=False),
)
COLUMN_KINDS = (
    *BASE_KINDS,
    *INTEGER_RANGES,
    "decimal(10,2)",
    "decimal(38,0)",
    "float32",
    *TIMESTAMPS,
    "uuid",
    "time",
    "blob",
)


@pytest.mark.parametrize("column", COLUMN_KINDS)
def test_fits_reads_the_extent_only_where_it_says(column: str) -> None:
    """An observer may leave an extent unnoted where ``fit_reads_extent`` says ``fits`` does not
    read it: there, every extent gives the same answer."""
    for value in BASE_KINDS:
        answers = {fits(value, column, seen) for seen in EXTENTS}
        if not fit_reads_extent(value, column):
            assert len(answers) == 1, (value, column)


def test_a_plan_reads_the_extents_of_declared_narrower_columns_only() -> None:
    t = table(("a", "int32"), ("b", "decimal(10,2)"), ("c", "float32"), ("d", "uuid"), ("e", "timestamp_s"))
    t = after(
        t, plan(t, [{"n": 1, "s": "x", "f": 1.5, "ts": "2024-01-05T10:00:00"}])
    )  # columns of their kind's own type
    assert extents_read(t) == {
        ("a", "long"),
        ("b", "long"),
        ("b", "double"),
        ("c", "long"),
        ("c", "double"),
        ("d", "string"),
        ("e", "timestamp"),
    }
    # the plan for values of a wide extent where it is not read: as for a narrow one
    wide, narrow = (
        [{"n": 10**15, "f": 1e300, "s": "x" * 40, "ts": "2024-01-05T10:00:00.123456"}],
        [{"n": 1, "f": 0.5, "s": "x", "ts": "2024-01-05T10:00:00"}],
    )
    assert plan(t, wide).changes == plan(t, narrow).changes == ()
