"""What ingestion saw of the records' fields (pure): for every field, the shapes its values
had, with the range of its long values and, for records, their fields in turn. Built per
file (by a task) from JSON values or a typed source's column types, merged by the driver,
then planned into columns (``evolution.auto_schema``).

Fields are keyed by their name folded as DuckDB folds it (``A`` and ``a`` are one column)
and keep the first spelling seen. Fields with an empty name are dropped (rule 6), and so
are values that are NULL (they say nothing of a type).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..model.names import fold
from ..model.types import DuckLakeType, Struct
from ..model.value_kinds import (
    BOOLEAN,
    DATE,
    DOUBLE,
    LONG,
    LONG_RANGE,
    NOTHING,
    RECORD,
    STRING,
    TIMESTAMP,
    Shape,
    innermost,
    read_kind,
    widest,
)
from .text_dates import text_kind


class BadRecord(ValueError):
    """A record ingestion cannot take (the job names its file and line)."""


class MissingValue(BadRecord):
    """A record that gives no value for a NOT NULL column (found converting it, not observing)."""


@dataclass
class ShapeSeen:
    """Values of one field that had one shape."""

    values: int = 0
    low: int | None = None  # the range of long values (innermost ones, for arrays)
    high: int | None = None
    fields: dict[str, FieldSeen] = field(default_factory=dict)  # of records: folded name -> field

    def merge(self, other: ShapeSeen) -> None:
        self.values += other.values
        if other.low is not None:
            self.low = other.low if self.low is None else min(self.low, other.low)
        if other.high is not None:
            self.high = other.high if self.high is None else max(self.high, other.high)
        merge_fields(self.fields, other.fields)


@dataclass
class FieldSeen:
    name: str  # the first spelling seen
    shapes: dict[Shape, ShapeSeen] = field(default_factory=dict)

    def shape(self, shape: Shape) -> ShapeSeen:
        return self.shapes.setdefault(shape, ShapeSeen())

    def merge(self, other: FieldSeen) -> None:
        for shape, seen in other.shapes.items():
            self.shape(shape).merge(seen)


Fields = dict[str, FieldSeen]  # folded name -> what was seen of the field, in order of first sight


def merge_fields(into: Fields, other: Mapping[str, FieldSeen]) -> None:
    for key, seen in other.items():
        mine = into.get(key)
        if mine is None:
            into[key] = mine = FieldSeen(seen.name)
        mine.merge(seen)


def merged(parts: Iterable[Fields]) -> Fields:
    """The fields of many files, in the order the parts come (a file's first)."""
    out: Fields = {}
    for part in parts:
        merge_fields(out, part)
    return out


# --------------------------------------------------------------------- JSON values


_KIND_OF_TYPE = {bool: BOOLEAN, float: DOUBLE, dict: RECORD}  # str and int: by value
_SCALARS = {
    k: Shape(0, k) for k in (BOOLEAN, LONG, DOUBLE, DATE, TIMESTAMP, STRING, RECORD)
}  # made once: values are many
fold_name = lru_cache(maxsize=4096)(fold)  # the same few field names, record after record


def json_kind(value: Any) -> str:
    """The kind of a primitive JSON value (as ``json.loads`` gives it); an integer beyond
    64 bits counts as a string (its digits), which loses nothing; a string in ISO date or
    timestamp form is a date or a timestamp (``text_dates``)."""
    t = type(value)
    if t is int:
        return LONG if LONG_RANGE[0] <= value <= LONG_RANGE[1] else STRING
    if t is str:
        return text_kind(value) or STRING
    kind = _KIND_OF_TYPE.get(t)
    if kind is None:
        raise BadRecord(f"a value of type {t.__name__}")
    return kind


def json_shape(value: Any) -> Shape:
    """The shape of a non-NULL JSON value: an array's dimension is its deepest nesting and its
    kind the widest of its innermost values' (``[1, 2.5]`` is ``[]::double``; ``[]`` holds
    nothing); ``BadRecord`` for an array that mixes records with other values."""
    if type(value) is not list:
        return _SCALARS[json_kind(value)]
    dims, kind = 1, NOTHING
    for element in value:
        if element is None:
            continue
        inner = json_shape(element)
        dims = max(dims, inner.dims + 1)
        wider = widest(kind, inner.kind) if inner.kind != kind else kind
        if wider is None:
            raise BadRecord("an array mixes records with other values")
        kind = wider
    return Shape(dims, kind)


def observe_record(fields: Fields, record: Mapping[str, Any]) -> None:
    """Add what one JSON object (a record) holds."""
    seen_here: set[str] = set()
    for name, value in record.items():
        if name == "":
            continue
        key = fold_name(name)
        if key in seen_here:
            raise BadRecord(f"two fields named {name!r} (names are case-insensitive)")
        seen_here.add(key)
        if value is None:
            continue
        found = fields.get(key)
        if found is None:
            fields[key] = found = FieldSeen(name)
        shape = json_shape(value)
        seen = found.shapes.get(shape) or found.shape(shape)
        if shape.dims == 0 and shape.kind not in (RECORD, LONG):
            seen.values += 1  # nothing more to note of a plain value
        else:
            _observe_value(seen, value, shape.kind)


def _observe_value(seen: ShapeSeen, value: Any, kind: str) -> None:
    seen.values += 1
    for leaf in _leaves(value):
        if kind == RECORD:
            observe_record(seen.fields, leaf)
        elif kind == LONG and type(leaf) is int:
            seen.low = leaf if seen.low is None or leaf < seen.low else seen.low
            seen.high = leaf if seen.high is None or leaf > seen.high else seen.high


def _leaves(value: Any) -> Iterable[Any]:
    if type(value) is list:
        for element in value:
            if element is not None:
                yield from _leaves(element)
    else:
        yield value


# --------------------------------------------------------------------- typed sources


@dataclass(frozen=True)
class TypedField:
    """A typed source's column (or struct field): its shape, and its fields when records."""

    name: str
    shape: Shape
    fields: tuple[TypedField, ...] = ()


def typed_field(name: str, t: DuckLakeType) -> TypedField:
    """``UnreadableType`` (from ``read_kind``) when the type has no kind."""
    shape = read_kind(t)
    _, inner = innermost(t)
    fields = tuple(typed_field(f.name, f.type) for f in inner.fields) if isinstance(inner, Struct) else ()
    return TypedField(name, shape, fields)


def observe_typed(
    fields: Fields, columns: Iterable[TypedField], ranges: Mapping[str, tuple[int | None, int | None]] | None = None
) -> None:
    """Add a typed source's columns as seen (whether or not a value is non-NULL: the source
    declares them); ``ranges``: the min and max of its top-level long columns, by name."""
    for column in columns:
        if column.name == "":
            continue
        key = fold(column.name)
        found = fields.get(key)
        if found is None:
            fields[key] = found = FieldSeen(column.name)
        seen = found.shape(column.shape)
        seen.values += 1
        low, high = (ranges or {}).get(column.name, (None, None))
        seen.merge(ShapeSeen(0, low, high))
        if column.shape.kind == RECORD:
            observe_typed(seen.fields, column.fields)
