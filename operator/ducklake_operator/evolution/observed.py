"""What ingestion saw of the records' fields (pure): for every field, the shapes its values
had, with what a declared column's fit depends on (the range of its numbers, their digits,
timestamps' fractions, strings' forms) and, for records, their fields in turn. Built per
file (by a task) from JSON values or a typed source's column types, merged by the driver,
then planned into columns (``evolution.auto_schema``).

Fields are keyed by their name folded as DuckDB folds it (``A`` and ``a`` are one column)
and keep the first spelling seen. Fields with an empty name are dropped (docs/ingest-schema-evolution.md §2.6), and so
are values that are NULL (they say nothing of a type).
"""

from __future__ import annotations

import decimal
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
    exact_number,
    innermost,
    number_shape,
    read_kind,
    text_forms,
    widest,
)
from .text_dates import text_fraction_digits, text_kind


class BadRecord(ValueError):
    """A record ingestion cannot take (the job names its file and line)."""


class MissingValue(BadRecord):
    """A record that gives no value for a NOT NULL column (found converting it, not observing)."""


@dataclass
class ShapeSeen:
    """Values of one field that had one shape, and what a declared column's fit depends on
    (``value_kinds.Extent``; of arrays, their innermost values)."""

    values: int = 0
    low: int | decimal.Decimal | None = None  # the range of number values (long, double)
    high: int | decimal.Decimal | None = None
    scale: int = 0  # the most digits after a double's point, or of a timestamp's second
    digits: int = 0  # the most significant digits of a double
    forms: frozenset[str] | None = None  # of strings: the forms every one has (None: none seen)
    exact: bool = True  # every value's text was seen (not a typed source's column, no NaN)
    fields: dict[str, FieldSeen] = field(default_factory=dict)  # of records: folded name -> field

    def merge(self, other: ShapeSeen) -> None:
        self.values += other.values
        if other.low is not None:
            self.low = other.low if self.low is None else min(self.low, other.low)
        if other.high is not None:
            self.high = other.high if self.high is None else max(self.high, other.high)
        self.scale, self.digits = max(self.scale, other.scale), max(self.digits, other.digits)
        if other.forms is not None:
            self.forms = other.forms if self.forms is None else self.forms & other.forms
        self.exact = self.exact and other.exact
        merge_fields(self.fields, other.fields)

    def note(self, kind: str, value: Any) -> None:
        """One innermost value of ``kind`` (not a record; in an array, a narrower one too).
        Per value and so kept cheap: what can no longer change is not looked at again."""
        if kind == STRING:
            if self.forms != _NO_FORMS:  # once no form is every value's, none will be
                forms = text_forms(value) if type(value) is str else _NO_FORMS  # or an int beyond 64 bits
                self.forms = forms if self.forms is None else self.forms & forms
        elif kind == TIMESTAMP:  # JSON's are strings (a date's too: midnight)
            if type(value) is not str:
                self.exact = False
            elif self.scale < MICROSECOND_DIGITS:
                self.scale = max(self.scale, text_fraction_digits(value))
        else:
            number = value if type(value) is int else exact_number(value)
            if number is None:  # NaN, Infinity; a date among longs
                self.exact = False
                return
            if self.low is None or number < self.low:
                self.low = number
            if self.high is None or number > self.high:
                self.high = number
            if kind == DOUBLE:
                scale, digits = number_shape(number)
                if scale > self.scale:
                    self.scale = scale
                if digits > self.digits:
                    self.digits = digits


_NO_FORMS: frozenset[str] = frozenset()
MICROSECOND_DIGITS = 6  # the most a timestamp's fraction has


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


# str and int: by value; JSON's numbers with a fraction or an exponent are read as Decimals
# (their exact text: a declared decimal column takes those it holds), NaN and Infinity as floats
_KIND_OF_TYPE = {bool: BOOLEAN, float: DOUBLE, decimal.Decimal: DOUBLE, dict: RECORD}
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
        seen.values += 1
        if shape.dims == 0 and shape.kind in _NOTED:
            seen.note(shape.kind, value)
        elif shape.dims > 0 or shape.kind == RECORD:
            _observe_leaves(seen, value, shape.kind)


_NOTED = frozenset({LONG, DOUBLE, TIMESTAMP, STRING})  # what a declared column's fit depends on


def _observe_leaves(seen: ShapeSeen, value: Any, kind: str) -> None:
    for leaf in _leaves(value):
        if kind == RECORD:
            observe_record(seen.fields, leaf)
        elif kind in _NOTED:
            seen.note(kind, leaf)


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
        seen.merge(ShapeSeen(0, low, high, exact=False))  # its values' texts are not looked at
        if column.shape.kind == RECORD:
            observe_typed(seen.fields, column.fields)
