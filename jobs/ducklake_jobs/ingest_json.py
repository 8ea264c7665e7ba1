"""JSON lines read by DuckDB, where DuckDB reads a file exactly as ingest's Python reader does
(``ingest_sources.SourceReader``: ``json.loads`` line by line, a number with a fraction or an
exponent as its exact text; then ``evolution.observed.observe_record`` and
``evolution.routing.convert_record`` record by record); otherwise None, and the file goes
through Python, which also names its bad lines.

Pass 1, ``observe_json_lines``: the keys of the file's records and, per key, what its values
hold, as ``observe_record`` notes it (the same ``Fields``), with what pass 2 needs to know of
the file (``JsonLinesFile``). Pass 2, ``json_lines_load``: the file's rows as ``__rows``
takes them, when each key's values go into one column of their kind's own type (a long into
a double column too: the same double), read by DuckDB's ``read_json``.

A file is read in DuckDB when, and only when:

* no byte of it is a vertical tab or a form feed: Python's line reading takes a line of them
  for blank, and DuckDB skips them around a record as well, where Python's parser refuses it;
* DuckDB reads every line (one JSON value a line, valid UTF-8, no byte order mark; any error
  and the file goes through Python);
* every record is the text DuckDB writes for it (``json(record)``), compact or with Python's
  default separators (``", "``, ``": "``), its keys in one order through the file (a key may
  be missing): so the line is strict JSON which Python reads the same, with no key twice,
  and each number's text is the shortest that reads back as its double, which is the text
  DuckDB gives (what Python's reader notes of a number is its exact text);
* every value of a non-empty key is a scalar: a string, a boolean, NULL, a finite number,
  an integer within 64 bits (a larger one is a string to Python);
* no two keys fold to one name (``model.names.fold``);
* no string is in doubt: one whose digits are not all ASCII where a date, timestamp or time
  form has digits (Python's ``\\d`` is any Unicode digit), a timestamp whose offset Python may
  read otherwise (minutes beyond 59, hours beyond 23) or whose conversion to UTC may leave
  the years Python holds (0001, 9999).

Where SQL restates a Python rule it says so; ``tests/jobs/test_ingest_json_duckdb.py`` proves
each equal to the Python rule it restates (and the whole against the Python path, generated
files).
"""

from __future__ import annotations

import decimal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import IO, Any

import duckdb

from ducklake_operator.evolution.auto_schema import Level
from ducklake_operator.evolution.observed import BadRecord, Fields, FieldSeen, json_shape, observe_record
from ducklake_operator.evolution.text_dates import DATE_PATTERN, SHORTEST, TIMESTAMP_PATTERN
from ducklake_operator.model.names import fold
from ducklake_operator.model.state import ColumnState
from ducklake_operator.model.types import Primitive, to_duckdb_sql
from ducklake_operator.model.value_kinds import (
    BOOLEAN,
    DATE,
    DOUBLE,
    DUCKLAKE_TYPE,
    FORM_LENGTHS,
    LONG,
    STRING,
    TEXT_FORM_PATTERNS,
    TIMESTAMP,
    Shape,
)

from .parquet_writer import literal, quote

SAMPLE_RECORDS = 500  # first records read in Python: their keys are looked for (all when another turns up)
BLANK_IN_PYTHON_ONLY = (b"\x0b", b"\x0c")  # bytes.strip() strips them, JSON's whitespace has them not

# the kinds of a value, as the aggregates tell them apart
_NULL, _BOOLEAN, _LONG, _DOUBLE, _DATE, _TIMESTAMP, _STRING, _DOUBT, _NESTED = range(9)
_KINDS = (
    (_BOOLEAN, BOOLEAN),
    (_LONG, LONG),
    (_DOUBLE, DOUBLE),
    (_DATE, DATE),
    (_TIMESTAMP, TIMESTAMP),
    (_STRING, STRING),
)


@dataclass(frozen=True)
class JsonKey:
    """A key of a file's records: how many records have it (NULL or not), and the shapes of
    its non-NULL values (scalars), in the order first seen."""

    name: str
    present: int
    values: int  # not NULL
    shapes: tuple[Shape, ...]


@dataclass(frozen=True)
class JsonLinesFile:
    """What pass 1 found of a JSON-lines file DuckDB reads as Python does."""

    records: int
    keys: tuple[JsonKey, ...]


# --------------------------------------------------------------------------- the SQL rules


def re2(pattern: str, *, loose: bool = False) -> str:
    """A Python pattern of ``text_dates`` or ``value_kinds`` in DuckDB's (RE2) syntax: the same
    but for ``\\d``, which is any Unicode digit to Python and [0-9] here; ``loose``: any
    character beyond ASCII too, for a pattern that takes every string Python's might."""
    assert "[\\d" not in pattern and "\\d]" not in pattern, "a \\d inside a class: translate it by hand"
    return pattern.replace("\\d", "(?:[0-9]|[^\\x00-\\x7f])" if loose else "[0-9]")


def _quoted(pattern: str) -> str:
    """A pattern of a string's JSON text (its quotes around it; a text with an escape in it
    holds a character none of the forms has, and none of these takes it)."""
    return literal(f'"{pattern}"')


def _macros() -> list[str]:
    """SQL macros over a value's JSON text ``v`` (DuckDB's), each restating a Python rule (it
    says which; the tests prove them equal)."""
    date_or_ts = _quoted(f"(?:{re2(DATE_PATTERN)}|{re2(TIMESTAMP_PATTERN)})")
    loose = _quoted(f"(?:{re2(DATE_PATTERN, loose=True)}|{re2(TIMESTAMP_PATTERN, loose=True)})")
    uuid, time = _quoted(re2(TEXT_FORM_PATTERNS["uuid"])), _quoted(re2(TEXT_FORM_PATTERNS["time"]))
    time_loose = _quoted(re2(TEXT_FORM_PATTERNS["time"], loose=True))
    (uuid_length, _), (time_shortest, time_longest) = FORM_LENGTHS["uuid"], FORM_LENGTHS["time"]
    return [
        # text_dates.parse_text's date.fromisoformat of a string of DATE_PATTERN (ASCII digits):
        # a day of the calendar from year 1 (DuckDB's dates have a year 0)
        "CREATE OR REPLACE TEMP MACRO __jl_date_ok(v) AS "
        "substr(v, 2, 4) <> '0000' AND TRY_CAST(substr(v, 2, 10) AS DATE) IS NOT NULL",
        # text_dates.text_kind of a string of TIMESTAMP_PATTERN (ASCII digits): datetime.fromisoformat
        # takes a day of the calendar from year 1, hours to 23, minutes and seconds to 59 (as
        # DuckDB's CAST does, but for its year 0 and 24:00:00), an offset to 23:59; one of more
        # hours or minutes is in doubt (Python takes +00:60), and so is any zone in the years
        # 0001 and 9999 (the conversion to UTC may leave the years Python holds)
        "CREATE OR REPLACE TEMP MACRO __jl_timestamp_kind(v) AS CASE "
        "WHEN substr(v, 2, 4) = '0000' OR substr(v, 13, 2) = '24' "
        f"OR TRY_CAST(substr(v, 2, 19) AS TIMESTAMP) IS NULL THEN {_STRING} "
        f"WHEN strlen(v) = 21 THEN {_TIMESTAMP} "
        f"WHEN suffix(v, 'Z\"') THEN CASE WHEN substr(v, 2, 4) IN ('0001', '9999') THEN {_DOUBT} ELSE {_TIMESTAMP} END "
        "WHEN substr(v, strlen(v) - 6, 1) IN ('+', '-') THEN CASE WHEN substr(v, 2, 4) IN ('0001', '9999') "
        f"OR substr(v, strlen(v) - 5, 2) > '23' OR substr(v, strlen(v) - 2, 2) > '59' THEN {_DOUBT} "
        f"ELSE {_TIMESTAMP} END ELSE {_TIMESTAMP} END",
        # observed.json_kind of a string (text_dates.text_kind: the '-' it looks at first; its
        # lengths the patterns imply): date, timestamp, string; in doubt where a loose form (a
        # non-ASCII character for a digit) takes it and the ASCII one not; and so for
        # value_kinds.text_forms' time
        "CREATE OR REPLACE TEMP MACRO __jl_text_kind(v) AS CASE "
        f"WHEN substr(v, 6, 1) = '-' THEN CASE WHEN regexp_full_match(v, {date_or_ts}) THEN "
        f"CASE WHEN strlen(v) > {SHORTEST + 2} THEN __jl_timestamp_kind(v) WHEN __jl_date_ok(v) THEN {_DATE} "
        f"ELSE {_STRING} END WHEN regexp_full_match(v, {loose}) THEN {_DOUBT} ELSE {_STRING} END "
        f"WHEN substr(v, 4, 1) = ':' AND regexp_full_match(v, {time_loose}) AND NOT regexp_full_match(v, {time}) "
        f"THEN {_DOUBT} ELSE {_STRING} END",
        # observed.json_kind of a value by its JSON text as DuckDB writes it: a double's has a '.'
        # or an 'e', an integer's neither; NaN and Infinity (letters) are in doubt, and so are
        # integers beyond 64 bits (strings to Python); NULL when the key is missing
        "CREATE OR REPLACE TEMP MACRO __jl_kind(v) AS CASE WHEN v IS NULL THEN NULL "
        "WHEN ascii(v) = 34 THEN __jl_text_kind(v) "
        "WHEN ascii(v) BETWEEN 48 AND 57 OR (ascii(v) = 45 AND ascii(substr(v, 2, 1)) BETWEEN 48 AND 57) THEN "
        f"CASE WHEN contains(v, '.') OR contains(v, 'e') THEN {_DOUBLE} "
        f"WHEN strlen(v) < 19 OR TRY_CAST(v AS BIGINT) IS NOT NULL THEN {_LONG} ELSE {_DOUBT} END "
        f"WHEN v = 'null' THEN {_NULL} WHEN v = 'true' OR v = 'false' THEN {_BOOLEAN} "
        f"WHEN ascii(v) IN (91, 123) THEN {_NESTED} ELSE {_DOUBT} END",
        # value_kinds.number_shape of a double's JSON text as DuckDB writes it (the shortest
        # digits that read back: no zero ends its fraction but in 'x.0'; 'd.ddde-x' beyond)
        "CREATE OR REPLACE TEMP MACRO __jl_scale(v) AS CASE "
        "WHEN contains(v, 'e') THEN greatest(0, CASE WHEN contains(v, '.') THEN strpos(v, 'e') - strpos(v, '.') - 1 "
        "ELSE 0 END - split_part(v, 'e', 2)::INTEGER) "
        "WHEN suffix(v, '.0') THEN 0 ELSE strlen(v) - strpos(v, '.') END",
        "CREATE OR REPLACE TEMP MACRO __jl_digits(v) AS CASE "
        "WHEN contains(v, 'e') THEN strpos(v, 'e') - 1 - (ascii(v) = 45)::INTEGER - contains(v, '.')::INTEGER "
        "WHEN suffix(v, '.0') THEN greatest(length(rtrim(split_part(ltrim(v, '-'), '.', 1), '0')), 1) "
        "WHEN ascii(v) = 48 OR (ascii(v) = 45 AND substr(v, 2, 1) = '0') THEN length(ltrim(v, '-0.')) "
        "ELSE strlen(v) - 1 - (ascii(v) = 45)::INTEGER END",
        # text_dates.text_fraction_digits of a timestamp string's JSON text
        "CREATE OR REPLACE TEMP MACRO __jl_fraction(v) AS CASE WHEN substr(v, 21, 1) = '.' "
        "THEN length(rtrim(regexp_extract(v, '\\.([0-9]+)', 1), '0')) ELSE 0 END",
        # value_kinds.text_forms of a string's JSON text (the forms are ASCII: bytes are characters)
        f"CREATE OR REPLACE TEMP MACRO __jl_uuid(v) AS strlen(v) = {uuid_length + 2} AND regexp_full_match(v, {uuid})",
        f"CREATE OR REPLACE TEMP MACRO __jl_time(v) AS strlen(v) BETWEEN {time_shortest + 2} AND {time_longest + 2} "
        f"AND substr(v, 4, 1) = ':' AND regexp_full_match(v, {time})",
        # text_dates.parse_text of a timestamp string (the string, not its JSON text): the instant
        # in UTC (the session's time zone is UTC)
        "CREATE OR REPLACE TEMP MACRO __jl_utc(s) AS CASE WHEN strlen(s) = 19 THEN CAST(s AS TIMESTAMP) "
        "ELSE CAST(CAST(s AS TIMESTAMPTZ) AS TIMESTAMP) END",
    ]


def create_macros(con: duckdb.DuckDBPyConnection) -> None:
    for sql in _macros():
        con.execute(sql)


# --------------------------------------------------------------------------- pass 1


def plain_bytes(fh: IO[bytes]) -> bool:
    """No vertical tab or form feed in the file (read to its end)."""
    while chunk := fh.read(1 << 20):
        if any(b in chunk for b in BLANK_IN_PYTHON_ONLY):
            return False
    return True


def _scan(*files: str) -> str:
    """The records of ``files``, each with its file's name."""
    listed = "[" + ", ".join(literal(f) for f in files) + "]"
    return f"read_ndjson_objects({listed}, compression = 'auto_detect', filename = true)"


def observe_json_lines(
    con: duckdb.DuckDBPyConnection,
    files: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
    extents: frozenset[tuple[str, str]] | None = None,
) -> list[tuple[Fields, JsonLinesFile] | None]:
    """What ``observe_record`` would note of every record of each JSON-lines file, and what
    pass 2 needs of it; None for a file DuckDB cannot read exactly so (the module's list).
    ``files``: (local path, its first records as the Python reader reads them:
    ``SAMPLE_RECORDS``, none of them bad); their keys are the ones looked for, and where each
    kind of a key was first seen among them is taken from Python. Files whose first records
    have the same keys are read in one query (DuckDB reads files in parallel, not a file).
    ``extents``: (folded key, kind) whose extents are noted (``auto_schema.extents_read``;
    None: every one, as ``observe_record`` notes them). The caller checked each file's bytes
    (``plain_bytes``) and head (binary data fails the job)."""
    out: list[tuple[Fields, JsonLinesFile] | None] = [None] * len(files)
    seen = [_first_seen(first) for _, first in files]
    try:
        create_macros(con)
    except duckdb.Error:
        return out
    together: dict[tuple[str, ...], list[int]] = {}
    for i, found in enumerate(seen):
        if found is not None and found[0]:
            together.setdefault(tuple(found[0]), []).append(i)
    read: dict[str, tuple[_Query, list[Any]]] = {}
    for keys, members in together.items():
        if len(members) > 1:
            try:
                each = [found[1] for i in members if (found := seen[i]) is not None]
                query = _Query.of(con, list(keys), each, extents)
                read |= {f: (query, row) for f, row in _aggregates(con, query, [files[i][0] for i in members]).items()}
            except duckdb.Error:
                pass  # read one by one
    for i, ((local, _), found) in enumerate(zip(files, seen, strict=True)):
        if found is None:
            continue
        first_keys, firsts = found
        try:
            result = None
            if first_keys is not None:
                result = _observe(con, local, first_keys, firsts, extents, read.get(local))
            if result is None:  # another key after the first records, perhaps
                all_keys = _keys(con, _scan(local))
                result = _observe(con, local, all_keys, {}, extents) if all_keys is not None else None
        except duckdb.Error:
            result = None
        out[i] = result
    return out


Firsts = dict[tuple[str, str], tuple[int, int]]  # (key, kind) -> (record, place of the key) first seen in


def _first_seen(records: Sequence[Mapping[str, Any]]) -> tuple[list[str] | None, Firsts] | None:
    """The keys of the first records in one order (None: none), and where each kind of each
    key was first seen; None when a record is bad (``observe_record`` refuses it)."""
    fields: Fields = {}
    order: list[str] = []
    for record in records:
        try:
            observe_record(fields, record)
        except BadRecord:
            return None
        order += [k for k in record if k not in order]
    keys = _in_one_order([list(r) for r in records], order)
    firsts: Firsts = {}
    if keys is not None:
        place = {k: i for i, k in enumerate(keys)}
        for n, record in enumerate(records, start=1):
            for k, v in record.items():
                if k != "" and v is not None:
                    shape = json_shape(v)
                    firsts.setdefault((k, shape.kind if shape.dims == 0 else "nested"), (n, place[k]))
    return keys, firsts


def _keys(con: duckdb.DuckDBPyConnection, source: str) -> list[str] | None:
    """The keys of every record of ``source`` in one order (first seen first); None when there
    is none, or two keys fold to one name."""
    rows = con.execute(
        f"SELECT ks FROM (SELECT json_keys(json) AS ks, min(n) AS first FROM "
        f"(SELECT json, row_number() OVER () AS n FROM {source}) GROUP BY ks) ORDER BY first"
    ).fetchall()
    lists = [list(r[0]) for r in rows if r[0] is not None]
    order: list[str] = []
    for keys in lists:
        order += [k for k in keys if k not in order]
    return _in_one_order(lists, order)


def _in_one_order(lists: list[list[str]], order: list[str]) -> list[str] | None:
    """``order`` when each list follows it (no key twice) and no two keys fold to one name."""
    position = {k: i for i, k in enumerate(order)}
    for keys in lists:
        places = [position[k] for k in keys]
        if places != sorted(places) or len(set(places)) != len(places):
            return None  # another order, or a key twice
    if len({fold(k) for k in order}) != len(order):
        return None
    return order


_EXTENTS = {  # what a kind's values are noted by: (name, column, its SQL of the value v, aggregate)
    LONG: (("low", "long", "TRY_CAST(v AS BIGINT)", "min"), ("high", "long", "TRY_CAST(v AS BIGINT)", "max")),
    DOUBLE: (
        ("low_text", "double", "TRY_CAST(v AS DOUBLE)", "arg_min"),  # the text of the least double
        ("high_text", "double", "TRY_CAST(v AS DOUBLE)", "arg_max"),
        ("scale", "scale", "__jl_scale(v)", "max"),
        ("digits", "digits", "__jl_digits(v)", "max"),
    ),
    TIMESTAMP: (("fraction", "fraction", "__jl_fraction(v)", "max"),),
    STRING: (("uuid", "uuid", "__jl_uuid(v)", "bool_and"), ("time", "time", "__jl_time(v)", "bool_and")),
}


_CODE = {kind: code for code, kind in _KINDS}
# a test of a value's JSON text ``{v}`` that implies ``__jl_kind`` gives the kind (cheaper
# than it; many values of the kind pass it, the others go through ``__jl_kind``)
_QUICK = {
    LONG: "ascii({v}) BETWEEN 48 AND 57 AND strlen({v}) < 19 AND NOT contains({v}, '.') AND NOT contains({v}, 'e')",
    DOUBLE: "ascii({v}) BETWEEN 48 AND 57 AND (contains({v}, '.') OR contains({v}, 'e'))",
    STRING: "ascii({v}) = 34 AND substr({v}, 6, 1) <> '-' AND substr({v}, 4, 1) <> ':'",
    # a timestamp of seconds without a zone, as DuckDB writes it (ASCII digits, years 1 to 9999,
    # hours to 23) but for a 'T' it may have: cheaper than a pattern
    TIMESTAMP: "strlen({v}) = 21 AND ascii({v}) = 34 "
    "AND CAST(TRY_CAST(substr({v}, 2, 19) AS TIMESTAMP) AS VARCHAR) = replace(substr({v}, 2, 19), 'T', ' ')",
}


@dataclass(frozen=True)
class _Query:
    """The SQL of one pass over files' records (keys in their order) noting, per file, what
    its values hold: kinds of every key's values, and the extents of the kinds in ``noted``."""

    keys: list[str]
    texts: list[str]  # each key's JSON text, as DuckDB writes it
    expected: dict[str, frozenset[str]]  # key -> its values' kinds in the first records (all: once read)
    noted: dict[str, frozenset[str]]  # key -> the kinds whose extents are taken
    extents: frozenset[tuple[str, str]] | None  # (folded key, kind) whose extents are read (None: all)

    @staticmethod
    def of(
        con: duckdb.DuckDBPyConnection,
        keys: list[str],
        firsts: list[Firsts],
        extents: frozenset[tuple[str, str]] | None = None,
    ) -> _Query:
        """The query of ``keys``, noting the extents read of the kinds seen first (``firsts``)."""
        texts = [str(r[0]) for r in con.execute("SELECT to_json(unnest($1::VARCHAR[]))::VARCHAR", [keys]).fetchall()]
        kinds = {kind for f in firsts for kind in f}
        expected = {k: frozenset(kind for key, kind in kinds if key == k) for k in keys}
        return _Query(keys, texts, expected, {}, extents).noting(expected)

    def noting(self, kinds: Mapping[str, frozenset[str]]) -> _Query:
        """This query, taking the extents read of ``kinds`` (by key)."""
        return replace(self, noted={k: self.read(k, kinds.get(k, frozenset())) for k in self.keys})

    def read(self, key: str, kinds: frozenset[str]) -> frozenset[str]:
        """Those of ``kinds`` of ``key``'s values whose extents are read."""
        return frozenset(k for k in kinds if k in _EXTENTS and (self.extents is None or (fold(key), k) in self.extents))

    def _values(self, source: str, ordered: bool) -> str:
        """Per record: (n, its place, when ``ordered``), filename, ok (the record is as DuckDB
        writes it over the keys), v0.. (each key's value as DuckDB writes it; NULL: missing)."""
        pointers = "[" + ", ".join(literal("/" + k.replace("~", "~0").replace("/", "~1")) for k in self.keys) + "]"
        n = "n, " if ordered else ""
        # each key's value as DuckDB writes it: from a struct (a key's child, no list), but where
        # the record has a null (a struct holds none: NULL as for a missing key) from a list
        structure = literal("{" + ", ".join(f'{t}: "JSON"' for t in self.texts) + "}")
        rows = (
            f"SELECT {'row_number() OVER () AS n, ' if ordered else ''}filename, j, "
            f"CASE WHEN NOT nulls THEN json_transform(j, {structure}) END AS r, "
            f"CASE WHEN nulls THEN json_extract(j, {pointers})::VARCHAR[] END AS l FROM "
            f"(SELECT filename, json::VARCHAR AS j, contains(json::VARCHAR, 'null') AS nulls FROM {source})"
        )
        values = ", ".join(
            f"coalesce(struct_extract_at(r, {i + 1}), l[{i + 1}]) AS v{i}" for i in range(len(self.keys))
        )
        rows = f"SELECT {n}filename, j, {values} FROM ({rows})"
        values = ", ".join(f"v{i}" for i in range(len(self.keys)))
        ok = (  # every key (one missing leaves no JSON), some keys, or Python's separators
            f"(CASE WHEN {self._every()} = j THEN TRUE WHEN {self._written(':', ',')} = j THEN TRUE "
            f"ELSE {self._written(': ', ', ')} = j END) AS ok"
        )
        return f"SELECT {n}filename, {ok}, {values} FROM ({rows})"

    def sql(self, source: str, *, ordered: bool = False) -> str:
        """Per file: filename, records, records not as DuckDB writes them, then per key: its
        values (a NULL too), unless the key is empty the histogram of their kinds, the noted
        extents (in the order of ``noted``'s sorted kinds); ``ordered``: per key its values,
        the histogram, the first record each kind was seen in (by ``_KINDS``)."""
        n = "n, " if ordered else ""
        kinds = ", ".join(f"v{i}, {self._kind(i)} AS c{i}" for i in range(len(self.keys)))
        layer = f"SELECT {n}filename, ok, {kinds} FROM ({self._values(source, ordered)})"
        aggregates = ["filename", "count(*)", "count(*) FILTER (NOT ok)"]
        extents: list[str] = []
        for i, key in enumerate(self.keys):
            aggregates.append(f"count(v{i})")
            if key == "":
                continue  # dropped, whatever it holds (docs/ingest-schema-evolution.md §2.6)
            aggregates.append(f"histogram(c{i})")
            if ordered:
                aggregates += [f"min(n) FILTER (c{i} = {code})" for code, _ in _KINDS]
                continue
            for kind in sorted(self.noted.get(key, ())):
                for _, name, value, aggregate in _EXTENTS[kind]:
                    column = f"{name}{i}"  # one for the least and the greatest
                    if all(not e.endswith(f" AS {column}") for e in extents):
                        sql = value.replace("(v)", f"(v{i})").replace("(v ", f"(v{i} ")
                        extents.append(f"CASE WHEN c{i} = {_CODE[kind]} THEN {sql} END AS {column}")
                    if aggregate in ("arg_min", "arg_max"):
                        aggregates.append(f"{aggregate}(v{i}, {column}) FILTER ({column} IS NOT NULL)")
                    else:
                        aggregates.append(f"{aggregate}({column})")
        if extents:
            layer = f"SELECT *, {', '.join(extents)} FROM ({layer})"
        return f"SELECT {', '.join(aggregates)} FROM ({layer}) GROUP BY filename"

    def _kind(self, i: int) -> str:
        """``__jl_kind`` of key ``i``'s value, the kind its first values had tried first."""
        expected = self.expected.get(self.keys[i], frozenset())
        v = f"v{i}"
        if len(expected) != 1 or next(iter(expected)) not in _QUICK:
            return f"__jl_kind({v})"
        (kind,) = expected
        return f"CASE WHEN {v} IS NULL THEN NULL WHEN {_QUICK[kind].replace('{v}', v)} THEN {_CODE[kind]} ELSE __jl_kind({v}) END"

    def _every(self) -> str:
        """The record as DuckDB writes it, compact, when it has every key (concat leaves a
        missing one's value out, which makes no JSON: no record is so)."""
        pieces = [literal(("{" if i == 0 else ",") + t + ":") + f", v{i}" for i, t in enumerate(self.texts)]
        return f"concat({', '.join(pieces)}, '}}')"

    def _written(self, colon: str, comma: str) -> str:
        """The record as DuckDB writes it (compact, or with Python's default separators)."""
        items = ", ".join(f"{literal(t + colon)} || v{i}" for i, t in enumerate(self.texts))
        return f"concat('{{', concat_ws({literal(comma)}, {items}), '}}')"


def _aggregates(con: duckdb.DuckDBPyConnection, query: _Query, files: list[str]) -> dict[str, list[Any]]:
    """``query``'s aggregates of each file (by its name), past the name."""
    return {str(r[0]): list(r[1:]) for r in con.execute(query.sql(_scan(*files))).fetchall()}


def _observe(
    con: duckdb.DuckDBPyConnection,
    local: str,
    keys: list[str],
    firsts: Firsts,
    extents: frozenset[tuple[str, str]] | None,
    read: tuple[_Query, list[Any]] | None = None,
) -> tuple[Fields, JsonLinesFile] | None:
    """The file's records through ``_Query`` (``read``: the query and its aggregates of the
    file, read with other files'); None when one is not as DuckDB writes it over ``keys``
    (another key, perhaps), or a value is in doubt."""
    if not keys:
        ((records, odd),) = con.execute(
            f"SELECT count(*), count(*) FILTER (json::VARCHAR <> '{{}}') FROM {_scan(local)}"
        ).fetchall()
        return ({}, JsonLinesFile(int(records), ())) if not odd else None
    if read is None:
        query = _Query.of(con, keys, [firsts], extents)
        row = _aggregates(con, query, [local]).get(local)
    else:
        query, row = read
    if row is None:  # no record: cannot be, the first records are the file's
        return None
    counts = _counts(query, list(row[2:]))
    if row[1] or counts is None:
        return None
    if any(query.read(k, kinds) - query.noted[k] for k, (_, kinds) in counts.items()):  # one the first lack
        kinds_seen = {k: kinds for k, (_, kinds) in counts.items()}
        query = replace(query.noting(kinds_seen), expected=kinds_seen)
        row = _aggregates(con, query, [local]).get(local)
        if row is None:
            return None
    late = {(k, kind) for k, (_, kinds) in counts.items() for kind in kinds if (k, kind) not in firsts}
    if late:  # the record each was first seen in, among all
        ordered = con.execute(query.sql(_scan(local), ordered=True)).fetchone()
        assert ordered is not None
        firsts = dict(firsts) | _firsts(keys, list(ordered[3:]))
    return _fields(query, int(row[0]), list(row[2:]), firsts)


def _counts(query: _Query, row: list[Any]) -> dict[str, tuple[dict[str, int], frozenset[str]]] | None:
    """Per non-empty key: its values of each kind (from its histogram in ``query``'s ``row``);
    None when a value is in doubt or nested."""
    out: dict[str, tuple[dict[str, int], frozenset[str]]] = {}
    for key in query.keys:
        row.pop(0)  # present
        if key == "":
            continue
        histogram: dict[int, int] = dict(row.pop(0) or {})
        for kind in query.noted.get(key, ()):
            del row[: len(_EXTENTS.get(kind, ()))]
        if histogram.get(_DOUBT) or histogram.get(_NESTED):
            return None
        counts = {kind: histogram[code] for code, kind in _KINDS if histogram.get(code)}
        out[key] = (counts, frozenset(counts))
    return out


def _firsts(keys: list[str], row: list[Any]) -> Firsts:
    """The records each kind of each key was first seen in (an ordered ``_Query``'s row)."""
    out: Firsts = {}
    for place, key in enumerate(keys):
        row.pop(0)
        if key == "":
            continue
        row.pop(0)
        for (_, kind), first in zip(_KINDS, [row.pop(0) for _ in _KINDS], strict=True):
            if first is not None:
                out[(key, kind)] = (int(first), place)
    return out


def _fields(query: _Query, records: int, row: list[Any], firsts: Firsts) -> tuple[Fields, JsonLinesFile] | None:
    """A ``_Query``'s aggregates as ``observe_record`` notes the records (``firsts``: where
    each kind of each key was first seen)."""
    found: list[tuple[tuple[int, int], str, FieldSeen]] = []
    file_keys: list[JsonKey] = []
    for key in query.keys:
        present = int(row.pop(0))
        if key == "":
            file_keys.append(JsonKey(key, present, 0, ()))
            continue
        histogram: dict[int, int] = dict(row.pop(0) or {})
        counts = {kind: histogram[code] for code, kind in _KINDS if histogram.get(code)}
        noted = {kind: {name: row.pop(0) for name, _, _, _ in _EXTENTS[kind]} for kind in sorted(query.noted[key])}
        if any((key, kind) not in firsts for kind in counts) or query.read(key, frozenset(counts)) - set(noted):
            return None  # cannot be: the first records' kinds are among all records'
        field = FieldSeen(key)
        for kind in sorted(counts, key=lambda kind: firsts[(key, kind)]):
            shape = field.shape(Shape(0, kind))
            shape.values = counts[kind]
            extent = noted.get(kind)
            if extent is None:
                continue  # not read by the plan (``extents``): left unnoted
            if kind == LONG:
                shape.low, shape.high = int(extent["low"]), int(extent["high"])
            elif kind == DOUBLE:
                shape.low, shape.high = decimal.Decimal(extent["low_text"]), decimal.Decimal(extent["high_text"])
                shape.scale, shape.digits = int(extent["scale"]), int(extent["digits"])
            elif kind == TIMESTAMP:
                shape.scale = int(extent["fraction"])
            elif kind == STRING:
                shape.forms = frozenset(f for f in ("uuid", "time") if extent[f])
        file_keys.append(JsonKey(key, present, sum(counts.values()), tuple(field.shapes)))
        if counts:
            found.append((min(firsts[(key, kind)] for kind in counts), fold(key), field))
    found.sort(key=lambda f: f[0])
    return {key: field for _, key, field in found}, JsonLinesFile(records, tuple(file_keys))


# --------------------------------------------------------------------------- pass 2

# how a key's values are read for a column of a base kind's own type (as JSON gives them)
_READ_AS = {
    BOOLEAN: "BOOLEAN",
    LONG: "BIGINT",
    DOUBLE: "DOUBLE",
    STRING: "VARCHAR",
    DATE: "VARCHAR",
    TIMESTAMP: "VARCHAR",
}
# routing.convert_value of a kind into a column of the same kind, or a long into a double
_VALUE_SQL = {DATE: "CAST({} AS DATE)", TIMESTAMP: "__jl_utc({})"}


@dataclass(frozen=True)
class JsonLoad:
    """How pass 2 reads JSON-lines files in DuckDB: the row of ``__rows`` from each record's
    values (``items``), read by ``read_json`` as ``columns``."""

    items: str
    columns: str

    def sql(self, files: Sequence[str]) -> str:
        listed = "[" + ", ".join(literal(f) for f in files) + "]"
        if not self.columns:
            return f"SELECT {self.items} FROM read_ndjson_objects({listed}, compression = 'auto_detect')"
        return (
            f"SELECT {self.items} FROM read_json({listed}, format = 'newline_delimited', records = true, "
            f"columns = {{{self.columns}}}, compression = 'auto_detect')"
        )


def json_lines_load(found: JsonLinesFile, level: Level, layout: tuple[ColumnState, ...]) -> JsonLoad | None:
    """How to read the rows of a JSON-lines file pass 1 read in DuckDB (``found``) as
    ``__rows`` takes them, when routing would give each value unchanged (``ingest_tasks._direct_items``'s
    rule for typed files): each key's values go into one column only, of their kind's own type
    (a long into a double column too); every column with a default and every NOT NULL column
    has a key that every record has (a NOT NULL one with a value). None otherwise (the file's
    records are converted one by one, which fails or skips a record naming it)."""
    fed: dict[int, tuple[JsonKey, str]] = {}  # column index -> the key, the kind of its column
    for key in found.keys:
        if key.name == "" or not key.shapes:
            continue
        routes = [level.taking(fold(key.name), shape) for shape in key.shapes]
        if any(len(r) != 1 for r in routes) or len({r[0].index for r in routes}) != 1:
            return None
        target = routes[0][0]
        own = Primitive(DUCKLAKE_TYPE[target.kind]) if target.kind in DUCKLAKE_TYPE else None
        if target.dims != 0 or own is None or layout[target.index].type != own:
            return None
        if any(s.kind != target.kind and (s.kind, target.kind) != (LONG, DOUBLE) for s in key.shapes):
            return None
        fed[target.index] = (key, target.kind)
    by_name = {fold(k.name): k for k in found.keys}
    for _, folded, _ in level.defaults:
        if folded not in by_name or by_name[folded].present != found.records:
            return None
    if any(i not in fed or fed[i][0].values != found.records for i, _ in level.required):
        return None

    def value(i: int) -> str:
        if i not in fed:
            return "NULL"
        key, kind = fed[i]
        return _VALUE_SQL.get(kind, "{}").format(quote(key.name))

    items = ", ".join(f"CAST({value(i)} AS {to_duckdb_sql(c.type)}) AS {quote(c.name)}" for i, c in enumerate(layout))
    columns = ", ".join(f"{literal(key.name)}: {literal(_READ_AS[kind])}" for key, kind in fed.values())
    return JsonLoad(items, columns)
