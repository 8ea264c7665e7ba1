"""The kinds of values ingestion tells apart, and how they widen (pure), in DuckLake types:
docs/ingest-schema-evolution.md §1, §4 and §6.

A value's *shape* is its array dimension and the *kind* of what the innermost arrays hold:
one of the six primitive (*base*) kinds (``boolean``, ``long``, ``double``, ``date``,
``timestamp``, ``string``), ``record`` (a JSON object, a struct), ``nothing`` (what an
empty array holds: it fits any array), or an *opaque* kind, the DuckLake type name of a
value no base kind holds (``decimal(10,2)``, ``uuid``, ``timestamptz``, ...; each fits only
itself, and most convert to string; docs/ingest-schema-evolution.md §6.1). A table's column
has a shape too: a declared ``int32`` column is of the opaque kind ``int32``, which takes
``long`` values within its range.

The widest-type table: a kind is *narrower* than another when its values convert into it
(``NARROWER_THAN``); of two kinds neither narrower than the other, the wider is ``string``
(the common denominator) when both convert to text, else there is none (a record and a
number). ``long`` values are also *routed* into ``timestamp`` columns (§3.2 there), as
milliseconds since the epoch, without that making ``long`` narrower than ``timestamp``.

A declared column of a type no base kind is takes, value by value, the values of
the kinds in ``TAKES_FITTING`` whose text it holds exactly (``holds``): a decimal the numbers
within its precision and scale, ``float32`` the numbers of at most six significant digits
(``FLT_DIG``), ``timestamptz`` every timestamp (JSON's are instants in UTC), ``timestamp_s``
and ``timestamp_ms`` those without finer fractions, ``uuid`` and ``time`` the strings in
their form. A field whose values all fit (``fits``, from what ``Extent`` says of them) needs
no other column; the others go where the rules put them (docs/ingest-schema-evolution.md §6.2).
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
from dataclasses import dataclass
from typing import Protocol

from .types import Decimal, DuckLakeType, ListOf, MapOf, Primitive, Struct, parse_type

BOOLEAN, LONG, DOUBLE, DATE, TIMESTAMP, STRING = "boolean", "long", "double", "date", "timestamp", "string"
RECORD = "record"
NOTHING = "nothing"  # the elements of an empty array
BASE_KINDS = (BOOLEAN, LONG, DOUBLE, DATE, TIMESTAMP, STRING)

# The base kinds -> the DuckLake type a new column of that kind gets (docs/ingest-schema-evolution.md §6.1).
DUCKLAKE_TYPE: dict[str, str] = {
    BOOLEAN: "boolean",
    LONG: "int64",
    DOUBLE: "float64",
    DATE: "date",
    TIMESTAMP: "timestamp",
    STRING: "varchar",
}
# The widest-type table (docs/ingest-schema-evolution.md §4.1, §4.2), "narrower than": a
# value of the key's kind converts into each of these without losing precision (a date to long or double: its midnight's
# milliseconds since the epoch; a timestamp: its milliseconds).
NARROWER_THAN: dict[str, frozenset[str]] = {
    BOOLEAN: frozenset({LONG, DOUBLE, STRING}),
    LONG: frozenset({DOUBLE, STRING}),
    DOUBLE: frozenset({STRING}),
    DATE: frozenset({LONG, DOUBLE, TIMESTAMP, STRING}),
    TIMESTAMP: frozenset({LONG, DOUBLE, STRING}),
    STRING: frozenset(),
}
# docs/ingest-schema-evolution.md §3.2: routed, but not narrower (as milliseconds: into the timestamps that hold them)
ROUTED_ONLY = frozenset({(LONG, TIMESTAMP), (LONG, "timestamptz"), (LONG, "timestamp_ms")})

# How a value read from a typed source (Parquet, CSV) counts: DuckLake types that hold a
# base kind's values exactly; every other supported type is its own opaque kind (docs/ingest-schema-evolution.md §6.1).
_BASE_KIND_OF_TYPE: dict[str, str] = {
    "boolean": BOOLEAN,
    **dict.fromkeys(("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"), LONG),
    "float32": DOUBLE,
    "float64": DOUBLE,
    "varchar": STRING,
    "date": DATE,
    **dict.fromkeys(("timestamp", "timestamp_s", "timestamp_ms"), TIMESTAMP),
}
# Opaque kinds ingestion reads, and those of them whose values have a text form to go into
# a string column (DuckDB's CAST to VARCHAR).
OPAQUE_READ = ("decimal", "uint64", "int128", "uint128", "uuid", "blob", "time", "timestamptz", "json")
_TEXT_FORM = ("decimal", "uint64", "int128", "uint128", "uuid", "time", "timestamptz", "json")
# Declared integer columns take long (and boolean) values within their range.
INTEGER_RANGES: dict[str, tuple[int, int]] = {
    **{f"int{b}": (-(2 ** (b - 1)), 2 ** (b - 1) - 1) for b in (8, 16, 32, 64)},
    **{f"uint{b}": (0, 2**b - 1) for b in (8, 16, 32, 64)},
}
LONG_RANGE = INTEGER_RANGES["int64"]


@dataclass(frozen=True, order=True)
class Shape:
    dims: int  # array dimension: 0 for a primitive or a record
    kind: str

    def __str__(self) -> str:
        return ("[]" * self.dims) + "::" + self.kind


def _family(kind: str) -> str:
    return kind.split("(", 1)[0]


def is_base(kind: str) -> bool:
    return kind in NARROWER_THAN


def has_text_form(kind: str) -> bool:
    return is_base(kind) or _family(kind) in _TEXT_FORM


def narrower(a: str, b: str) -> bool:
    """Values of kind ``a`` convert into kind ``b`` losing nothing (the table's "narrower than")."""
    if is_base(a):
        return b in NARROWER_THAN[a]
    return b == STRING and has_text_form(a)


def widest(a: str, b: str) -> str | None:
    """The kind both convert into: one of them, else string; None for a record and anything
    else, or an opaque kind without a text form."""
    if a == b or b == NOTHING:
        return a
    if a == NOTHING:
        return b
    if RECORD in (a, b):
        return None
    if narrower(a, b):
        return b
    if narrower(b, a):
        return a
    return STRING if has_text_form(a) and has_text_form(b) else None


def widest_of(kinds: list[str]) -> str | None:
    out: str | None = NOTHING
    for k in kinds:
        out = widest(out, k) if out is not None else None
    return out


class Extent(Protocol):
    """What the values of one kind (of one field) held, as far as whether a declared column
    holds them all depends on it (``observed.ShapeSeen`` notes it)."""

    @property
    def low(self) -> int | decimal.Decimal | None: ...  # the range of number values (long, double)
    @property
    def high(self) -> int | decimal.Decimal | None: ...
    @property
    def scale(self) -> int: ...  # the most digits after a double's point, or of a timestamp's second
    @property
    def digits(self) -> int: ...  # the most significant digits of a double's text
    @property
    def forms(self) -> frozenset[str] | None: ...  # of strings: the forms every one has (uuid, time)
    @property
    def exact(self) -> bool: ...  # every value's text was seen (not so of a typed source's column, or a NaN)


FLOAT32_DIGITS = 6  # FLT_DIG: a decimal of up to 6 significant digits survives float32 and back
FLOAT32_MAX = decimal.Decimal("3.40282346638528859811704183484516925440e+38")
FLOAT32_SCALE = 37  # a number of more fraction digits may be below float32's normal range
FLOAT32_INTEGERS = 2**24  # every integer up to it is a float32
FRACTION_DIGITS = {"timestamp_s": 0, "timestamp_ms": 3}  # of a second, in declared timestamps
TIMESTAMPS = ("timestamptz", *FRACTION_DIGITS)
# Declared types (by family) -> the base kinds whose values they take when they hold them
# exactly (``holds``, value by value).
TAKES_FITTING: dict[str, frozenset[str]] = {
    **dict.fromkeys(INTEGER_RANGES, frozenset({BOOLEAN, LONG})),
    "decimal": frozenset({BOOLEAN, LONG, DOUBLE}),
    "float32": frozenset({BOOLEAN, LONG, DOUBLE}),
    **dict.fromkeys(TIMESTAMPS, frozenset({DATE, TIMESTAMP})),
    "uuid": frozenset({STRING}),
    "time": frozenset({STRING}),
}
# Strings in these forms are held exactly by the declared type of the same name.
# (``ducklake_jobs.ingest_json`` reads them in DuckDB's regular expressions too)
TEXT_FORM_PATTERNS = {
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "time": r"(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,6})?",
}
_TEXT_FORMS = {form: re.compile(pattern) for form, pattern in TEXT_FORM_PATTERNS.items()}
FORM_LENGTHS = {"uuid": (36, 36), "time": (8, 15)}


def text_forms(text: str) -> frozenset[str]:
    """The declared types whose form the string ``text`` has (``uuid``, ``time``)."""
    return frozenset(
        form
        for form, pattern in _TEXT_FORMS.items()
        if FORM_LENGTHS[form][0] <= len(text) <= FORM_LENGTHS[form][1] and pattern.fullmatch(text)
    )


def exact_number(value: object) -> int | decimal.Decimal | None:
    """A number as its text says it: JSON's are ints and Decimals (its text), a float counts
    by its shortest text (DuckDB's CAST to VARCHAR); None for NaN, Infinity, and what is no
    number."""
    if isinstance(value, int):
        return int(value)
    if isinstance(value, decimal.Decimal):
        return value if value.is_finite() else None
    if isinstance(value, float) and math.isfinite(value):
        return decimal.Decimal(repr(value))
    return None


def number_shape(value: int | decimal.Decimal) -> tuple[int, int]:
    """(scale, significant digits) of a number's exact value: ``12.50`` is (1, 3), ``1E+2``
    (0, 1); no context rounding (``Decimal.normalize`` would round to 28 digits)."""
    if isinstance(value, int):
        text = str(abs(value)).rstrip("0")
        return 0, max(len(text), 1)
    _, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int), "a finite number"  # JSON's numbers are (NaN comes as a float)
    ds = list(digits)
    while len(ds) > 1 and ds[-1] == 0:
        ds.pop()
        exponent += 1
    while len(ds) > 1 and ds[0] == 0:
        ds.pop(0)
    if ds == [0]:
        return 0, 1
    return max(0, -exponent), len(ds)


def fraction_digits(value: datetime.datetime) -> int:
    """The digits of a timestamp's fraction of a second (``.25`` has two)."""
    return len(f"{value.microsecond:06d}".rstrip("0"))


def _within(low: object, high: object, bound: int | decimal.Decimal, inclusive: bool) -> bool:
    if low is None or high is None:
        return False
    if inclusive:
        return -bound <= low and high <= bound  # type: ignore[operator]
    return -bound < low and high < bound  # type: ignore[operator]


def _fit_of_kinds(value: str, column: str) -> bool | None:
    """``fits`` as the kinds alone decide it (None: what is seen of the values decides)."""
    if value in (column, NOTHING) or narrower(value, column):
        return True
    if value not in TAKES_FITTING.get(_family(column), ()):
        return False
    if value == BOOLEAN:
        return holds(column, BOOLEAN, True) and holds(column, BOOLEAN, False)
    return None


def fit_reads_extent(value: str, column: str) -> bool:
    """Whether ``fits(value, column, seen)`` reads the extent ``seen`` gives (range, scale,
    digits, forms), not only the kinds: where it does not, an observer may leave it unnoted."""
    return value != DATE and _fit_of_kinds(value, column) is None


def fits(value: str, column: str, seen: Extent | None = None) -> bool:
    """Every value of kind ``value`` goes into a column of kind ``column`` as it is or converted
    into it (docs/ingest-schema-evolution.md §2.2), or a declared column holds each of them exactly (what
    ``seen`` says of them; ``holds`` checks a value)."""
    by_kinds = _fit_of_kinds(value, column)
    if by_kinds is not None:
        return by_kinds
    if seen is None:
        return False
    if value == LONG:
        if column in INTEGER_RANGES:
            lo, hi = INTEGER_RANGES[column]
            return seen.low is not None and seen.high is not None and lo <= seen.low and seen.high <= hi
        room = decimal_room(column)
        if room is not None:
            return _within(seen.low, seen.high, room, inclusive=False)
        return _within(seen.low, seen.high, FLOAT32_INTEGERS, inclusive=True)  # float32
    if value == DOUBLE:
        if not seen.exact:
            return False
        found = _DECIMAL.fullmatch(column)
        if found is not None:
            scale = int(found.group(2))
            return seen.scale <= scale and _within(seen.low, seen.high, 10 ** (int(found.group(1)) - scale), False)
        return (
            seen.digits <= FLOAT32_DIGITS
            and seen.scale <= FLOAT32_SCALE
            and _within(seen.low, seen.high, FLOAT32_MAX, inclusive=True)
        )
    if value == DATE:
        return True  # midnight, in UTC for timestamptz
    if value == TIMESTAMP:
        return column == "timestamptz" or (seen.exact and seen.scale <= FRACTION_DIGITS[column])
    return seen.forms is not None and column in seen.forms  # strings


def holds(column: str, kind: str, value: object) -> bool:
    """A declared column of ``column`` holds the value ``value`` of ``kind`` exactly (the
    value-by-value side of ``fits``: for a declared column, ``fits`` is true of values that all
    hold)."""
    if kind not in TAKES_FITTING.get(_family(column), ()):
        return False
    if kind == BOOLEAN:
        return column in INTEGER_RANGES or column == "float32" or (decimal_room(column) or 0) > 1
    if kind in (LONG, DOUBLE):
        number = exact_number(value)
        if number is None:
            return False
        scale, digits = number_shape(number)
        return fits(kind, column, _Values(number, number, scale, digits, None, True))
    if kind == DATE:
        return True
    if kind == TIMESTAMP:
        assert isinstance(value, datetime.datetime)
        return fits(kind, column, _Values(None, None, fraction_digits(value), 0, None, True))
    return isinstance(value, str) and column in text_forms(value)


@dataclass(frozen=True)
class _Values:
    """One value's ``Extent``."""

    low: int | decimal.Decimal | None
    high: int | decimal.Decimal | None
    scale: int
    digits: int
    forms: frozenset[str] | None
    exact: bool


def takes(column: str, value: str) -> bool:
    """Values of kind ``value`` are written into a column of kind ``column`` (docs/ingest-schema-evolution.md
    §2.8): they convert into it, a long into a timestamp (§3.2), or a declared column takes those
    it holds (``holds``, value by value)."""
    return fits(value, column) or (value, column) in ROUTED_ONLY or value in TAKES_FITTING.get(_family(column), ())


_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")


def decimal_room(column: str) -> int | None:
    """10 ** (precision - scale) of a decimal column: its integers lie strictly within +-it."""
    found = _DECIMAL.fullmatch(column)
    return 10 ** (int(found.group(1)) - int(found.group(2))) if found else None


def suffix(kind: str) -> str:
    """The kind's word in an evolved column's name: a base kind's, else the DuckLake type name
    with what is not a letter or a digit as ``_`` (``decimal(10,2)`` -> ``decimal_10_2``)."""
    return re.sub(r"_+", "_", re.sub(r"[^0-9A-Za-z]", "_", kind)).strip("_")


def evolved_name(field: str, shape: Shape) -> str:
    """``size_double``, ``a_array_string``, ``coordinates_array3_long`` (docs/ingest-schema-evolution.md §2.5)."""
    dims = "" if shape.dims == 0 else "array_" if shape.dims == 1 else f"array{shape.dims}_"
    return f"{field}_{dims}{suffix(shape.kind)}"


def innermost(t: DuckLakeType) -> tuple[int, DuckLakeType]:
    """How many lists ``t`` nests, and the type the innermost holds."""
    dims = 0
    while isinstance(t, ListOf):
        dims, t = dims + 1, t.element
    return dims, t


def column_kind(t: DuckLakeType) -> Shape:
    """The shape of a table column of type ``t``: its list nesting and what is innermost
    (a base kind when the column's type is that kind's own, else the type's name)."""
    dims, t = innermost(t)
    if isinstance(t, Struct):
        return Shape(dims, RECORD)
    kind = next((k for k, name in DUCKLAKE_TYPE.items() if name == t.name), None)
    return Shape(dims, kind or t.name)


class UnreadableType(ValueError):
    """A source column of a type ingestion does not read."""


def read_kind(t: DuckLakeType) -> Shape:
    """How values of a source column of type ``t`` count (innermost kind; records' fields
    are read separately); ``UnreadableType`` for maps and types without a kind."""
    dims, t = innermost(t)
    if isinstance(t, Struct):
        return Shape(dims, RECORD)
    if isinstance(t, MapOf):
        raise UnreadableType("a map")
    name = t.name
    if name in _BASE_KIND_OF_TYPE:
        return Shape(dims, _BASE_KIND_OF_TYPE[name])
    if isinstance(t, Decimal) or name in OPAQUE_READ:
        return Shape(dims, name)
    raise UnreadableType(name)


def leaf_type(kind: str) -> DuckLakeType:
    """The DuckLake type of a new column's innermost values of ``kind`` (not a record)."""
    return Primitive(DUCKLAKE_TYPE[kind]) if kind in DUCKLAKE_TYPE else parse_type(kind)


def with_dims(t: DuckLakeType, dims: int) -> DuckLakeType:
    for _ in range(dims):
        t = ListOf(t)
    return t
