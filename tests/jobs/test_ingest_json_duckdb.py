"""ingest's JSON lines read in DuckDB (``ducklake_jobs.ingest_json``) against the Python reader
(``SourceReader`` + ``observe_record`` + ``convert_record``), on DuckDB 1.5.5:

* each SQL macro restating a Python rule gives what the rule gives (or says "in doubt", only
  where the module says it may): dates and timestamps and their near misses, the instant in
  UTC, fraction digits, uuid and time forms, the scale and digits of the texts DuckDB writes
  for doubles;
* files DuckDB cannot read exactly as Python does are left to Python;
* generated JSON-lines files (flat records of mixed shapes: integers beyond 64 bits, numbers
  with fractions and exponents in several spellings, booleans, dates, timestamps and near
  misses, strings, NULLs, missing keys, keys differing in case, empty names, nested values,
  bad lines; compact, Python's and DuckDB's spellings): where DuckDB claims a file, pass 1
  gives the Python path's ``Fields`` (in its order), records and skipped records, and pass 2
  the Python path's rows, into a new table and into one with declared columns (NOT NULL, a
  default, a decimal)."""

from __future__ import annotations

import datetime
import decimal
import json
import math
import os
import random
import struct
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any
from unittest import mock

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ducklake_jobs.ingest_tasks as job
from ducklake_jobs import ingest_json
from ducklake_jobs.ingest_sources import Source
from ducklake_jobs.lake_paths import TablePaths
from ducklake_jobs.parquet_writer import scratch_connection
from ducklake_operator.evolution.auto_schema import EvolutionError, extents_read, layout_after, plan_ingest
from ducklake_operator.evolution.observed import Fields, json_kind
from ducklake_operator.evolution.text_dates import parse_text, text_fraction_digits
from ducklake_operator.model.changes import AddColumn
from ducklake_operator.model.ingested_files import SourceFile
from ducklake_operator.model.state import TableState
from ducklake_operator.model.types import Field, parse_type
from ducklake_operator.model.value_kinds import DATE, DOUBLE, STRING, TIMESTAMP, number_shape, text_forms

EMPTY = TableState(1, "uuid", 0, "main", "t", "t/", True, 0, (), 1)
KIND_CODES = {"boolean": 1, "long": 2, DOUBLE: 3, DATE: 4, TIMESTAMP: 5, STRING: 6}
DOUBT = 7


@pytest.fixture(scope="module")
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    c = scratch_connection()
    ingest_json.create_macros(c)
    yield c
    c.close()


def kinds_in_duckdb(con: duckdb.DuckDBPyConnection, texts: list[str]) -> list[int | None]:
    """``__jl_kind`` of each string's JSON text as DuckDB writes it."""
    rows = con.execute("SELECT __jl_kind(to_json(s)::VARCHAR) FROM unnest($1::VARCHAR[]) t(s)", [texts]).fetchall()
    return [r[0] for r in rows]


def python_kind(text: str) -> int | str:
    try:
        return KIND_CODES[json_kind(text)]
    except OverflowError:  # text_kind lets it through: the instant leaves Python's years
        return "overflow"


# ------------------------------------------------------------------ the SQL rules

YEARS = ["0000", "0001", "0004", "1900", "2000", "2023", "2024", "9999"]
MONTHS = ["00", "01", "02", "04", "12", "13"]
DAYS = ["00", "01", "28", "29", "30", "31", "32"]
TIMES = ["00:00:00", "23:59:59", "24:00:00", "23:60:00", "23:59:60", "12:30:45.5", "12:30:45.120", "12:30:45.123456"]
TIMES_MISSED = ["12:30:45.1234567", "12:30", "12:30:45.", "1:30:45", "12:30:45,5"]
ZONES = ["", "Z", "+02:00", "-02:00", "+23:59", "-23:59", "+24:00", "+00:60", "-00:00", "+99:99", "+0200", "z"]
UNICODE_DIGITS = ["٢٠٢٤-٠١-٠٥", "2024-01-0٥", "2024-01-05T10:11:1٢", "1٢:00:00", "𝟐𝟎𝟐𝟒-01-05", "２０２４-01-05"]


def date_and_timestamp_texts() -> list[str]:
    dates = [f"{y}-{m}-{d}" for y in YEARS for m in MONTHS for d in DAYS]
    some = [
        "0001-01-01",
        "1970-01-01",
        "2024-01-05",
        "2024-02-29",
        "2023-02-29",
        "9999-12-31",
        "2024-13-01",
        "2024-04-31",
    ]
    stamps = [f"{d}{sep}{t}{z}" for d in some for sep in "T " for t in TIMES + TIMES_MISSED for z in ZONES]
    others = ["2024-1-05", "2024/01/05", "20240105", "2024-01-05x", " 2024-01-05", "2024-01-05 ", "a024-01-05"]
    return dates + stamps + others + UNICODE_DIGITS


def may_doubt(text: str) -> bool:
    """The strings the module says may be in doubt: digits beyond ASCII, a zone in the years
    0001 and 9999, an offset of more hours or minutes than a clock has."""
    if not text.isascii():
        return True
    zone = text[-6:] if len(text) >= 25 and text[-6] in "+-" else "Z" if text.endswith("Z") else ""
    if zone and text[:4] in ("0001", "9999"):
        return True
    return len(zone) == 6 and (int(zone[1:3]) > 23 or int(zone[4:6]) > 59)


def test_kinds_of_strings_as_python_tells_them(con: duckdb.DuckDBPyConnection) -> None:
    """``__jl_kind`` restates ``observed.json_kind`` of strings (``text_dates.text_kind``): the
    same kind, or in doubt for the strings the module lists (and where Python overflows)."""
    texts = date_and_timestamp_texts() + ["", "x", "true", "12", "2024-01-05\\", 'a"b', "\n", "é"]
    doubted = 0
    for text, duck in zip(texts, kinds_in_duckdb(con, texts), strict=True):
        python = python_kind(text)
        if duck == DOUBT:
            assert may_doubt(text), (text, python)
            doubted += 1
        else:
            assert duck == python, text
    assert 0 < doubted < len(texts) / 3
    assert kinds_in_duckdb(con, ["2024-01-05", "2024-01-05T10:11:12.25+02:00"]) == [4, 5]


def test_quick_tests_of_a_kind_imply_it(con: duckdb.DuckDBPyConnection) -> None:
    """Each quick test pass 1 tries before ``__jl_kind`` passes JSON texts of its kind only
    (and some of them)."""
    strings = date_and_timestamp_texts() + ["", "x", "12:30:45", "2024-01-05T10:11:12x", "2024-01-05\\u0054"]
    numbers = ["0", "-1", "12", "1.5", "-0.5", "1e+20", "1.5e-07", "9223372036854775807", "9223372036854775808"]
    texts = [json.dumps(t) for t in strings] + numbers + ["true", "false", "null", "[1]", "{}"]
    for kind, quick in ingest_json._QUICK.items():
        sql = f"SELECT v, __jl_kind(v) FROM unnest($1::VARCHAR[]) t(v) WHERE {quick.replace('{v}', 'v')}"
        passed = con.execute(sql, [texts]).fetchall()
        assert passed and all(code == KIND_CODES[kind] for _, code in passed), (kind, passed)


def test_instants_dates_fractions_and_forms_as_python_reads_them(con: duckdb.DuckDBPyConnection) -> None:
    """``__jl_utc`` restates ``text_dates.parse_text`` (the instant in UTC), a date's CAST
    its date, ``__jl_fraction`` ``text_fraction_digits``; ``__jl_uuid``/``__jl_time``
    ``value_kinds.text_forms``."""
    texts = date_and_timestamp_texts()
    kinds = kinds_in_duckdb(con, texts)
    stamps = [t for t, k in zip(texts, kinds, strict=True) if k == KIND_CODES[TIMESTAMP]]
    dates = [t for t, k in zip(texts, kinds, strict=True) if k == KIND_CODES[DATE]]
    assert len(stamps) > 100 and len(dates) > 50
    rows = con.execute(
        "SELECT __jl_utc(s), __jl_fraction(to_json(s)::VARCHAR) FROM unnest($1::VARCHAR[]) t(s)", [stamps]
    ).fetchall()
    for text, (utc, fraction) in zip(stamps, rows, strict=True):
        assert utc == parse_text(text, TIMESTAMP), text
        assert fraction == text_fraction_digits(text), text
    rows = con.execute("SELECT CAST(s AS DATE) FROM unnest($1::VARCHAR[]) t(s)", [dates]).fetchall()
    assert [r[0] for r in rows] == [parse_text(t, DATE) for t in dates]
    forms = [
        "12:30:45",
        "23:59:59.123456",
        "24:00:00",
        "12:30:45.1234567",
        "1:30:45",
        "12:30:45.",
        "00:00:00.0",
        "123e4567-e89b-12d3-a456-426614174000",
        "123E4567-E89B-12D3-A456-426614174000",
        "123e4567-e89b-12d3-a456-42661417400",
        "123e4567e89b12d3a456426614174000",
        "x",
        "",
    ]
    rows = con.execute(
        "SELECT __jl_uuid(to_json(s)::VARCHAR), __jl_time(to_json(s)::VARCHAR), __jl_kind(to_json(s)::VARCHAR) "
        "FROM unnest($1::VARCHAR[]) t(s)",
        [forms],
    ).fetchall()
    for text, (uuid, time, kind) in zip(forms, rows, strict=True):
        assert kind == KIND_CODES[STRING]
        assert {f for f, every in (("uuid", uuid), ("time", time)) if every} == text_forms(text), text
    assert kinds_in_duckdb(con, ["1٢:00:00"]) == [DOUBT]  # a time to Python's \d


def double_texts(con: duckdb.DuckDBPyConnection, values: list[float]) -> list[str]:
    """Each double's JSON text as pass 1 sees it: DuckDB's, of the value read from Python's text."""
    rows = con.execute(
        "SELECT (json_extract(j, ['/a'])::VARCHAR[])[1] FROM unnest($1::VARCHAR[]) t(j)",
        [[json.dumps({"a": v}) for v in values]],
    ).fetchall()
    return [r[0] for r in rows]


def test_scale_and_digits_of_duckdbs_double_texts(con: duckdb.DuckDBPyConnection) -> None:
    """``__jl_scale`` and ``__jl_digits`` restate ``value_kinds.number_shape`` for the texts
    DuckDB writes for doubles (random bit patterns, and the edges of its formats), each the
    shortest text of its double: the exact value the Python reader sees in such a line."""
    rng = random.Random(19)
    values = [struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0] for _ in range(20000)]
    values = [v for v in values if math.isfinite(v)]
    values += [rng.uniform(-1e6, 1e6) for _ in range(5000)] + [round(rng.uniform(0, 1000), 3) for _ in range(5000)]
    edges = [0.0, -0.0, 1.0, 100.0, 0.1, 0.5, 1e-4, 1.2e-4, 1e-5, 1.5e-7, 1e15, 1e16, 1e20, 1e21, 1e22, 5e-324]
    edges += [2.2250738585072014e-308, 1.7976931348623157e308, 123456789012345680000.0, 9007199254740993.0]
    values += edges + [-v for v in edges]
    texts = double_texts(con, values)
    rows = con.execute(
        "SELECT __jl_kind(v), __jl_scale(v), __jl_digits(v) FROM unnest($1::VARCHAR[]) t(v)", [texts]
    ).fetchall()
    for value, text, (kind, scale, digits) in zip(values, texts, rows, strict=True):
        assert kind == KIND_CODES[DOUBLE], text
        assert decimal.Decimal(text) == decimal.Decimal(repr(value)), (value, text)  # the double's shortest
        assert (scale, digits) == number_shape(decimal.Decimal(text)), text


# ------------------------------------------------------------------ files left to Python


@contextmanager
def a_file(content: bytes, suffix: str = ".json") -> Iterator[str]:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "in" + suffix)
        with open(path, "wb") as fh:
            fh.write(content)
        yield path


def source(path: str) -> Source:
    return Source(SourceFile(path, os.path.getsize(path), 0.0), "json")


@contextmanager
def files(contents: list[bytes]) -> Iterator[list[str]]:
    with tempfile.TemporaryDirectory() as d:
        paths = [os.path.join(d, f"in-{k}.json") for k in range(len(contents))]
        for path, content in zip(paths, contents, strict=True):
            with open(path, "wb") as fh:
                fh.write(content)
        yield paths


def observed(
    path: str | list[str], *, in_python: bool = False, extents: frozenset[tuple[str, str]] | None = None
) -> job.Observation:
    """Pass 1 of one task over the files (in DuckDB where it claims them, or all in Python);
    ``extents``: those DuckDB notes (None: all)."""
    paths = [path] if isinstance(path, str) else path
    task = job.ReadTask(tuple(source(p) for p in paths), "skip", extents=extents)
    if not in_python:
        return job.observe_files(task)
    with mock.patch.object(job, "observe_json_lines", lambda con, files, extents=None: [None] * len(files)):
        return job.observe_files(task)


LEFT_TO_PYTHON = {
    "a trailing comma": b'{"a":1,}\n',
    "NaN": b'{"a":NaN}\n',
    "Infinity": b'{"a":-Infinity}\n',
    "a form feed before a record": b'\x0c{"a":1}\n',
    "a vertical tab after one": b'{"a":1}\x0b\n',
    "a key twice": b'{"a":1,"a":2}\n',
    "keys differing in case": b'{"a":1}\n{"A":2}\n',
    "in one record": b'{"a":1,"A":2}\n',
    "another order of keys": b'{"a":1,"b":2}\n{"b":1,"a":2}\n',
    "an array": b'{"a":[1]}\n',
    "a record": b'{"a":{"b":1}}\n',
    "an integer beyond 64 bits": b'{"a":9223372036854775808}\n',
    "a negative one": b'{"a":-9223372036854775809}\n',
    "a number's other text": b'{"a":1.50}\n',
    "an exponent": b'{"a":1E2}\n',
    "minus zero": b'{"a":-0}\n',
    "an escape DuckDB writes otherwise": b'{"a":"\\u00e9"}\n',
    "spaces of another kind": b'{ "a" : 1 }\n',
    "a line that is no object": b"[1,2]\n",
    "a scalar line": b"1\n",
    "a line that does not parse": b'{"a":1}\n{"a":\n',
    "two records on a line": b'{"a":1} {"a":2}\n',
    "a byte order mark": b'\xef\xbb\xbf{"a":1}\n',
    "invalid UTF-8": b'{"a":"\xff"}\n',
    "a lone surrogate": b'{"a":"\\ud800"}\n',
    "a timestamp whose offset Python reads otherwise": b'{"a":"2024-01-05T10:11:12+00:60"}\n',
    "an offset in the year 1": b'{"a":"0001-01-01T00:30:00+01:00"}\n',
    "digits beyond ASCII": '{"a":"2024-01-0\u0665"}\n'.encode(),
}


@pytest.mark.parametrize("content", LEFT_TO_PYTHON.values(), ids=LEFT_TO_PYTHON.keys())
def test_files_duckdb_cannot_read_as_python_are_left_to_it(content: bytes) -> None:
    with a_file(content) as path:
        try:
            python = observed(path, in_python=True)
        except Exception as exc:  # noqa: BLE001  (the Python path's own failure: the same either way)
            with pytest.raises(type(exc)):
                observed(path)
            return
        duck = observed(path)
    assert duck.json_files == (None,)
    assert (duck.fields, duck.records, duck.skipped) == (python.fields, python.records, python.skipped)


def test_files_duckdb_reads_as_python(con: duckdb.DuckDBPyConnection) -> None:
    """Compact, Python's default separators, DuckDB's COPY, gzipped; NULLs and missing keys;
    an empty name; blank lines; CRLF; a kind first seen after the first records."""
    records = [{"id": i, "ts": f"2024-01-0{i % 9 + 1}T10:00:0{i % 10}.5Z", "v": f"v{i}", "": [1]} for i in range(5)]
    records += [{"id": None, "d": 2.5}, {"v": "2024-02-30"}]
    lines = [json.dumps(r, separators=(",", ":")) for r in records]
    contents = {
        "compact": "\n".join(lines) + "\n",
        "python": "".join(json.dumps(r) + "\n" for r in records),
        "crlf and blank lines": "\r\n".join(lines[:3]) + "\r\n\r\n  \n" + "\n".join(lines[3:]),
        "no newline at the end": "\n".join(lines),
        "empty": "",
        "blank": "\n \n",
    }
    many = ['{"c": "x"}'] + [json.dumps({"c": i, "a": i}) for i in range(ingest_json.SAMPLE_RECORDS + 5)]
    many += ['{"a": "x"}', '{"b": 1.5}', '{"c": true, "b": true}']
    contents["a kind and a key after the first records"] = "\n".join(many)
    for name, text in contents.items():
        with a_file(text.encode()) as path:
            duck, python = observed(path), observed(path, in_python=True)
            assert duck.json_files[0] is not None, name
            assert as_lists(duck.fields) == as_lists(python.fields), name
            assert (duck.records, duck.skipped) == (python.records, python.skipped), name
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "copy.json.gz")
        con.execute(
            f"COPY (SELECT i AS id, i / 3 AS d, 'x' || i AS s, DATE '2024-01-01' + i::INTEGER AS day, "
            f"CASE WHEN i % 3 = 0 THEN NULL ELSE i > 4 END AS ok FROM range(50) r(i)) TO '{path}' (FORMAT JSON)"
        )
        duck, python = observed(path), observed(path, in_python=True)
        assert duck.json_files[0] is not None
        assert as_lists(duck.fields) == as_lists(python.fields) and duck.records == python.records == 50


def as_lists(fields: Fields) -> list[Any]:
    """Fields with their order (a dict's equality ignores it; the plan's columns follow it)."""
    return [
        (
            key,
            f.name,
            [
                (s, v.values, v.low, v.high, v.scale, v.digits, v.forms, v.exact, as_lists(v.fields))
                for s, v in f.shapes.items()
            ],
        )
        for key, f in fields.items()
    ]


# ------------------------------------------------------------------ generated files

KEYS = st.sampled_from(["a", "b", "A", "c", "", "ts", "é", "x y", 'q"'])


def seldom(rare: st.SearchStrategy[str], common: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """``rare`` one draw in 40 (values that leave their file to Python), else ``common``."""
    return st.integers(0, 39).flatmap(lambda n: rare if n == 0 else common)


INTEGERS = seldom(
    st.integers(-(2**70), 2**70).map(str) | st.sampled_from(["-0", "9223372036854775808", "-9223372036854775809"]),
    st.integers(-1000, 1000).map(str)
    | st.integers(-(2**63), 2**63 - 1).map(str)
    | st.sampled_from(["0", "9223372036854775807", "-9223372036854775808"]),
)
FRACTIONS = seldom(
    st.sampled_from(["1e400", "NaN", "-Infinity", "1E-7", "1e2", "1.50"]),
    st.floats(allow_nan=False, allow_infinity=False).map(repr)
    | st.decimals(allow_nan=False, allow_infinity=False, places=3).map(str)
    | st.sampled_from(["0.0", "-0.0", "100.0", "1e21", "1.5e-07", "0.1", "0.10000000000000001", "5e-324", "12.5"]),
)
CLEAR = [t for t in date_and_timestamp_texts() if not may_doubt(t)]  # dates, timestamps, near misses
DOUBTFUL = [t for t in date_and_timestamp_texts() if may_doubt(t)] + ["1٢:00:00"]  # leave their files to Python
TEXTS = seldom(
    st.sampled_from(DOUBTFUL),
    st.text(max_size=4)
    | st.sampled_from(CLEAR)
    | st.sampled_from(CLEAR)
    | st.uuids().map(str)
    | st.sampled_from(["12:30:45", "23:59:59.5", "24:00:00", "null", "5", "é/\\\t", "x"]),
).map(lambda s: json.dumps(s, ensure_ascii=False))
SCALARS = {
    "integers": INTEGERS,
    "fractions": FRACTIONS,
    "booleans": st.sampled_from(["true", "false"]),
    "texts": TEXTS,
}
NESTED = st.sampled_from(["[1, 2]", "[]", '{"x": 1}', "[[1.5]]", '[{"y": "z"}]'])
JUNK = st.sampled_from(["[1,2]", '{"a":1,}', "1", '"x"', "{bad", "", "   ", "null", '{"a":1} {"a":2}'])


@st.composite
def schemas(draw: st.DrawFn) -> dict[str, str]:
    """A few keys, in order, each with the family of its values (one, or mixed)."""
    keys = draw(st.lists(KEYS, min_size=1, max_size=4, unique=True))
    return {k: draw(st.sampled_from([*SCALARS, "scalars", "mixed"])) for k in keys}


@st.composite
def json_lines(draw: st.DrawFn, schema: dict[str, str] | None = None) -> bytes:
    """A JSON-lines file: records over the keys of a schema (drawn when not given)."""
    families = schema if schema is not None else draw(schemas())
    keys = list(families)
    style = draw(st.sampled_from(["compact", "python", "duckdb", "duckdb", "duckdb"]))
    shuffled, junk = draw(st.integers(0, 9)) == 0, draw(st.integers(0, 9)) == 0
    lines = []
    for _ in range(draw(st.integers(1, 8))):
        if junk and draw(st.integers(0, 3)) == 0:
            lines.append(draw(JUNK))
            continue
        chosen = [k for k in keys if draw(st.integers(0, 4))]  # missing now and then
        if shuffled:
            chosen = draw(st.permutations(chosen))
        if chosen and draw(st.integers(0, 19)) == 0:
            chosen.append(chosen[0])  # a key twice
        pairs = []
        for k in chosen:
            family = families[k]
            if draw(st.integers(0, 5)) == 0:
                value = "null"
            elif family in ("scalars", "mixed"):
                value = draw(st.one_of(*SCALARS.values(), *((NESTED,) if family == "mixed" else ())))
            else:
                value = draw(SCALARS[family])
            pairs.append((json.dumps(k, ensure_ascii=False), value))
        colon, comma = (": ", ", ") if style == "python" else (":", ",")
        lines.append("{" + comma.join(f"{k}{colon}{v}" for k, v in pairs) + "}")
    if style == "duckdb":  # as DuckDB writes the records (those it reads)
        lines = [_written_by_duckdb(line) for line in lines]
    end = draw(st.sampled_from(["\n", "\r\n"]))
    return (end.join(lines) + draw(st.sampled_from(["", end]))).encode()


def _written_by_duckdb(line: str) -> str:
    try:
        row = duckdb.execute("SELECT json(?::VARCHAR)::VARCHAR", [line]).fetchone()
    except duckdb.Error:
        return line
    return str(row[0]) if row and row[0] is not None else line


def narrower() -> TableState:
    """A table whose declared columns hold some values of their fields' kinds, not all: its
    plans read the extents of those (``auto_schema.extents_read``)."""
    fields = tuple(
        Field(n, parse_type(t)) for n, t in (("a", "int32"), ("b", "uuid"), ("c", "float32"), ("ts", "timestamp_s"))
    )
    layout = layout_after((), tuple(AddColumn(1, "main.t", (), f) for f in fields), 1)
    return replace(EMPTY, columns=layout, next_column_id=len(layout) + 1)


def planned(t: TableState, fields: Fields, defaults: dict[int, Any]) -> Any:
    try:
        p = plan_ingest(t, fields, defaults)
    except EvolutionError as exc:
        return str(exc)
    return p.changes, p.layout, p.level


def declared() -> tuple[TableState, dict[int, Any]]:
    """A table with declared columns: a NOT NULL long, a string with a default, a decimal, a
    timestamp; and the default's value by column id."""
    fields = (
        Field("a", parse_type("int64"), nullable=False),
        Field("b", parse_type("varchar")),
        Field("c", parse_type("decimal(10,2)")),
        Field("ts", parse_type("timestamp")),
    )
    layout = layout_after((), tuple(AddColumn(1, "main.t", (), f) for f in fields), 1)
    t = replace(EMPTY, columns=layout, next_column_id=len(layout) + 1)
    return t, {layout[1].column_id: "dflt"}


def loaded(
    path: str | list[str],
    t: TableState,
    defaults: dict[int, Any],
    found: tuple[ingest_json.JsonLinesFile | None, ...],
) -> Any:
    """Pass 2 of one task over the files into ``t``'s evolved layout: its rows (or its
    failure) and how many records were skipped; ``found``: pass 1's DuckDB read of each
    (None: Python's)."""
    paths = [path] if isinstance(path, str) else path
    fields = observed(paths, in_python=True).fields
    try:
        plan = plan_ingest(t, fields, defaults)
    except EvolutionError as exc:
        return str(exc)
    if not plan.layout:
        return "no column"  # a table has one at least
    task = job.WriteTask(
        sources=tuple(source(p) for p in paths),
        on_bad_record="skip",
        level=plan.level,
        layout=plan.layout,
        partition=(),
        hive_names=(),
        order_by="",
        options=(),
        paths=TablePaths(os.path.dirname(paths[0]) + "/"),
        marker="",
        json_files=found,
    )
    con = scratch_connection()
    try:
        with tempfile.TemporaryDirectory() as scratch:
            rows, _, skipped = job._load_rows(con, task, scratch)
            found_rows = con.execute("SELECT * FROM __rows").fetchall()
            return rows, skipped.count, [tuple(nan_free(v) for v in row) for row in found_rows]
    finally:
        con.close()


def nan_free(value: Any) -> Any:
    """A value that compares equal to itself (NaN does not; a file Python reads may hold it)."""
    if isinstance(value, list):
        return [nan_free(v) for v in value]
    if isinstance(value, dict):
        return {k: nan_free(v) for k, v in value.items()}
    return "NaN" if isinstance(value, float) and math.isnan(value) else value


@pytest.fixture(scope="module")
def claimed() -> Iterator[list[bool]]:
    """Whether DuckDB claimed each generated file: some, not all (checked once they ran)."""
    found: list[bool] = []
    yield found
    assert 0.2 < sum(found) / len(found) < 0.95, (sum(found), len(found))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    contents=st.one_of(
        st.lists(json_lines(), min_size=1, max_size=3),
        schemas().flatmap(lambda schema: st.lists(json_lines(schema), min_size=2, max_size=3)),  # read together
    )
)
def test_duckdb_observes_and_loads_what_python_does(contents: list[bytes], claimed: list[bool]) -> None:
    """One task's files (several are read in one query where their first keys agree)."""
    with files(contents) as paths:
        try:
            python = observed(paths, in_python=True)
        except Exception as exc:  # noqa: BLE001  (the Python path's own failure)
            with pytest.raises(type(exc)):
                observed(paths)
            return
        duck = observed(paths)
        claimed.extend(f is not None for f in duck.json_files)
        assert as_lists(duck.fields) == as_lists(python.fields)
        assert (duck.records, duck.skipped) == (python.records, python.skipped)
        for t in (EMPTY, narrower()):  # only the extents its plan reads (none for new columns)
            assert planned(t, observed(paths, extents=extents_read(t)).fields, {}) == planned(t, python.fields, {})
        for path, found in zip(paths, duck.json_files, strict=True):
            if found is not None:  # DuckDB claims no file with a bad line
                assert observed(path, in_python=True).skipped.count == 0
        if not any(duck.json_files):
            return
        for t, defaults in ((EMPTY, {}), declared()):
            assert loaded(paths, t, defaults, duck.json_files) == loaded(paths, t, defaults, (None,) * len(paths))


def test_loaded_straight_into_the_rows(tmp_path: Any) -> None:
    """Pass 2 reads a claimed file in DuckDB when each key goes into one column of its own
    kind (a long into a double too), the NOT NULL and defaulted columns' keys in every record;
    the rows are the Python path's."""
    path = str(tmp_path / "in.json")
    stamp = "2024-01-05T10:11:12+02:00"
    records: list[dict[str, Any]] = [
        {"a": i, "b": f"s{i}", "d": i if i % 2 else i + 0.5, "e": i / 4, "ts": stamp} for i in range(6)
    ]
    records.append({"a": 9, "b": None, "e": None})
    with open(path, "w") as fh:
        fh.writelines(json.dumps(r, separators=(",", ":")) + "\n" for r in records)
    found = observed(path).json_files[0]
    assert found is not None
    t, defaults = declared()
    for table, dflt in ((EMPTY, {}), (t, defaults)):
        plan = plan_ingest(table, observed(path).fields, dflt)
        assert ingest_json.json_lines_load(found, plan.level, plan.layout) is not None
        assert loaded(path, table, dflt, (found,)) == loaded(path, table, dflt, (None,))
    # a record without the NOT NULL column's key, one without the defaulted column's: Python's
    with open(path, "a") as fh:
        fh.write('{"b":"x"}\n{"a":1}\n')
    found = observed(path).json_files[0]
    assert found is not None
    plan = plan_ingest(t, observed(path).fields, defaults)
    assert ingest_json.json_lines_load(found, plan.level, plan.layout) is None
    python = loaded(path, t, defaults, (None,))
    assert python[1] == 1 and python == loaded(path, t, defaults, (found,))


def test_timestamps_in_utc_as_python(tmp_path: Any) -> None:
    path = str(tmp_path / "in.json")
    stamps = ["2024-01-05T10:11:12+02:00", "2024-01-05 10:11:12.5Z", "2024-01-05T23:30:00-05:30", "2024-02-29 00:00:00"]
    with open(path, "w") as fh:
        fh.writelines(json.dumps({"ts": s}) + "\n" for s in stamps)
    found = observed(path).json_files[0]
    assert found is not None
    rows = loaded(path, EMPTY, {}, (found,))[2]
    assert [r[0] for r in rows] == [parse_text(s, TIMESTAMP) for s in stamps]
    assert rows[0][0] == datetime.datetime(2024, 1, 5, 8, 11, 12)
