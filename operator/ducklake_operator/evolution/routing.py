"""One record into one row of the evolved table (pure): each field's value goes to every
column of its field that takes it (``auto_schema.Target``), converted (docs/ingest-schema-evolution.md §2.8, §4.3).

Conversions (into a wider kind, or a long into a timestamp):

* boolean -> 0/1 (long, double, a declared integer), ``true``/``false`` (string);
* long -> double; timestamp as milliseconds since 1970-01-01 (docs/ingest-schema-evolution.md §3.2);
* into a declared column of a type no base kind is, what it holds exactly (§6.2 there)
  (``value_kinds.holds``): an integer or decimal the numbers within its range and scale (a
  JSON number's own text, read as a Decimal), ``float32`` those of up to six significant
  digits, ``timestamptz`` every timestamp (in UTC), ``timestamp_s``/``_ms`` those without
  finer fractions, ``uuid`` and ``time`` the strings in their form;
* date -> timestamp at midnight; date and timestamp -> long and double as milliseconds
  since 1970-01-01 (floored to whole milliseconds for long);
* anything with a text form -> string, as DuckDB's CAST to VARCHAR writes it;
* into a deeper array: wrapped in one-element arrays (``5`` into ``long[]`` is ``[5]``).

A value that does not convert (a long beyond the years a timestamp holds, a number beyond a
declared column's range or scale) is not written to that column; its other columns still get it.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from ..model.names import fold
from ..model.value_kinds import (
    BOOLEAN,
    DATE,
    DOUBLE,
    INTEGER_RANGES,
    LONG,
    RECORD,
    ROUTED_ONLY,
    STRING,
    TIMESTAMP,
    exact_number,
    has_text_form,
    holds,
)
from .auto_schema import Level, Target
from .observed import BadRecord, MissingValue, TypedField, fold_name, json_kind, json_shape
from .text_dates import parse_text

EPOCH = datetime.datetime(1970, 1, 1)
Typed = Mapping[str, TypedField]  # a typed source's columns (or a struct's fields) by folded name


class _NoFit(Exception):
    """This value does not go into this column."""


def convert_record(record: Mapping[str, Any], level: Level, typed: Typed | None = None) -> list[Any]:
    """The row (values in ``level.names`` order) of a record; ``typed``: the source's column
    types (None: JSON, each value's own). ``BadRecord`` when two fields name one column
    (``observe_record`` finds it first), ``MissingValue`` when a NOT NULL column gets none."""
    out: list[Any] = [None] * len(level.names)
    present: set[str] = set()
    for name, value in record.items():
        if name == "":
            continue  # docs/ingest-schema-evolution.md §2.6
        key = fold_name(name)
        if key in present:
            raise BadRecord(f"two fields named {name!r} (names are case-insensitive)")
        present.add(key)
        if value is None:
            continue
        source = typed.get(key) if typed is not None else None
        shape = source.shape if source is not None else json_shape(value)
        for target in level.taking(key, shape):
            try:
                if shape.dims == 0 and target.dims == 0 and target.kind != RECORD:
                    out[target.index] = convert_value(value, shape.kind, target.kind)  # most values
                else:
                    out[target.index] = _to(value, target.dims, source.shape.dims if source else None, target, source)
            except _NoFit:
                pass
    for index, key, default in level.defaults:
        if key not in present:
            out[index] = default
    for index, column in level.required:
        if out[index] is None:
            raise MissingValue(f"no value for {column}, which is NOT NULL")
    return out


def _depth(value: Any) -> int:
    if not isinstance(value, list):
        return 0
    return 1 + max((_depth(e) for e in value if e is not None), default=0)


def _to(value: Any, dims: int, value_dims: int | None, target: Target, source: TypedField | None) -> Any:
    """``value`` as a value of ``dims`` array dimensions of the target's kind; ``value_dims``:
    a typed value's dimension (None: JSON, measured per value)."""
    if value is None:
        return None
    depth = value_dims if value_dims is not None else _depth(value)
    if depth < dims:
        return [_to(value, dims - 1, value_dims, target, source)]
    if dims == 0:
        return _leaf(value, target, source)
    inner = None if value_dims is None else value_dims - 1
    return [_to(e, dims - 1, inner, target, source) for e in value]


def _leaf(value: Any, target: Target, source: TypedField | None) -> Any:
    if target.kind == RECORD:
        if not isinstance(value, dict) or target.level is None:
            raise _NoFit
        typed = {fold(f.name): f for f in source.fields} if source is not None else None
        return dict(zip(target.level.names, convert_record(value, target.level, typed), strict=True))
    kind = source.shape.kind if source is not None else json_kind(value)
    return convert_value(value, kind, target.kind)


def convert_value(value: Any, kind: str, to: str) -> Any:
    """A non-NULL primitive of ``kind`` as a value of ``to`` (``_NoFit`` when it does not go)."""
    if to == STRING:
        if not has_text_form(kind):
            raise _NoFit
        return text_of(value, kind)  # a JSON date string keeps its own text
    if type(value) is str and kind in (DATE, TIMESTAMP):
        value = parse_text(value, kind)  # JSON's dates and timestamps are strings
    if kind == to:
        return float(value) if kind == DOUBLE else value  # JSON's doubles are read as exact Decimals
    if kind == BOOLEAN and to in (LONG, DOUBLE):
        return float(value) if to == DOUBLE else int(value)
    if kind in (DATE, TIMESTAMP) and to in (LONG, DOUBLE):
        return _micros(value) / 1000 if to == DOUBLE else _micros(value) // 1000
    if kind == LONG and to == DOUBLE:
        return float(value)
    if kind == DATE and to == TIMESTAMP:
        return datetime.datetime.combine(value, datetime.time())
    if (kind, to) in ROUTED_ONLY:  # a long into a timestamp: milliseconds since 1970
        try:
            return _zoned(EPOCH + datetime.timedelta(milliseconds=value), to)
        except OverflowError:
            raise _NoFit from None
    if holds(to, kind, value):
        return _held(value, kind, to)
    raise _NoFit


def _held(value: Any, kind: str, to: str) -> Any:
    """A value a declared column holds exactly (``value_kinds.holds``), as its type takes it."""
    if kind in (BOOLEAN, LONG, DOUBLE):
        number = exact_number(value)  # what ``holds`` looked at (a float: its shortest text)
        if to == "float32":
            return float(value)
        return int(value) if to in INTEGER_RANGES else number
    if kind == DATE:
        return _zoned(datetime.datetime.combine(value, datetime.time()), to)
    if kind == TIMESTAMP:
        return _zoned(value, to)
    return datetime.time.fromisoformat(value) if to == "time" else value  # a uuid: its text, cast by DuckDB


def _zoned(value: datetime.datetime, to: str) -> datetime.datetime:
    """A timestamp of JSON (UTC, no zone) for a column of ``to``: with its zone for timestamptz."""
    return value.replace(tzinfo=datetime.UTC) if to == "timestamptz" else value


def _micros(value: datetime.date) -> int:
    """Microseconds since 1970-01-01 (a date: at midnight), as an integer."""
    if not isinstance(value, datetime.datetime):
        value = datetime.datetime.combine(value, datetime.time())
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _fraction(microseconds: int) -> str:
    return f".{microseconds:06d}".rstrip("0") if microseconds else ""


def _date_text(d: datetime.date) -> str:
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}"


def _time_text(t: datetime.time | datetime.datetime) -> str:
    return f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}{_fraction(t.microsecond)}"


def text_of(value: Any, kind: str) -> str:
    """The text DuckDB's CAST(... AS VARCHAR) gives a value of ``kind``."""
    if isinstance(value, str):
        return value
    if kind == BOOLEAN:
        return "true" if value else "false"
    if kind == DOUBLE:
        return repr(float(value))  # DuckDB's shortest round-trip form, as Python's
    if kind == DATE:
        return _date_text(value)
    if kind == TIMESTAMP:
        return f"{_date_text(value)} {_time_text(value)}"
    if kind == "timestamptz":
        utc = value.astimezone(datetime.UTC) if value.tzinfo else value
        return f"{_date_text(utc)} {_time_text(utc)}+00"
    if kind == "time":
        return _time_text(value)
    return str(value)  # integers, decimals (all scale digits), uuids
