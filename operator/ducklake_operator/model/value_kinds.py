"""The kinds of values ingestion tells apart, and how they widen (pure): the seed's rules
(``upsolver-iceberg-schema-evolution.md``), in DuckLake types.

A value's *shape* is its array dimension and the *kind* of what the innermost arrays hold:
one of the seed's primitive kinds (``boolean``, ``long``, ``double``, ``date``,
``timestamp``, ``string``), ``record`` (a JSON object, a struct), ``nothing`` (what an
empty array holds: it fits any array), or an *opaque* kind, the DuckLake type name of a
value the seed has no word for (``decimal(10,2)``, ``uuid``, ``timestamptz``, ...; each
fits only itself, and most convert to string). A table's column has a shape too: a
declared ``int32`` column is of the opaque kind ``int32``, which takes ``long`` values
within its range.

The widest-type table: a kind is *narrower* than another when its values convert into it
(``NARROWER_THAN``); of two kinds neither narrower than the other, the wider is ``string``
(the common denominator) when both convert to text, else there is none (a record and a
number). ``long`` values are also *routed* into ``timestamp`` columns (edge case 2), as
milliseconds since the epoch, without that making ``long`` narrower than ``timestamp``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .types import Decimal, DuckLakeType, ListOf, MapOf, Primitive, Struct, parse_type

BOOLEAN, LONG, DOUBLE, DATE, TIMESTAMP, STRING = "boolean", "long", "double", "date", "timestamp", "string"
RECORD = "record"
NOTHING = "nothing"  # the elements of an empty array
SEED_KINDS = (BOOLEAN, LONG, DOUBLE, DATE, TIMESTAMP, STRING)

# The seed's Iceberg type names -> the DuckLake type a new column of that kind gets.
DUCKLAKE_TYPE: dict[str, str] = {
    BOOLEAN: "boolean",
    LONG: "int64",
    DOUBLE: "float64",
    DATE: "date",
    TIMESTAMP: "timestamp",
    STRING: "varchar",
}
# The widest-type table, "narrower than" column: a value of the key's kind converts into
# each of these without losing precision (a date to long or double: its midnight's
# milliseconds since the epoch; a timestamp: its milliseconds).
NARROWER_THAN: dict[str, frozenset[str]] = {
    BOOLEAN: frozenset({LONG, DOUBLE, STRING}),
    LONG: frozenset({DOUBLE, STRING}),
    DOUBLE: frozenset({STRING}),
    DATE: frozenset({LONG, DOUBLE, TIMESTAMP, STRING}),
    TIMESTAMP: frozenset({LONG, DOUBLE, STRING}),
    STRING: frozenset(),
}
ROUTED_ONLY = frozenset({(LONG, TIMESTAMP)})  # edge case 2: routed, but not narrower

# How a value read from a typed source (Parquet, CSV) counts: DuckLake types that hold a
# seed kind's values exactly; every other supported type is its own opaque kind.
_SEED_KIND_OF_TYPE: dict[str, str] = {
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


def is_seed(kind: str) -> bool:
    return kind in NARROWER_THAN


def has_text_form(kind: str) -> bool:
    return is_seed(kind) or _family(kind) in _TEXT_FORM


def narrower(a: str, b: str) -> bool:
    """Values of kind ``a`` convert into kind ``b`` losing nothing (the table's "narrower than")."""
    if is_seed(a):
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


def fits(value: str, column: str, low: int | None = None, high: int | None = None) -> bool:
    """A value of kind ``value`` goes into a column of kind ``column`` as it is or converted
    into it (rule 2, narrower types); ``low``/``high``: the range of the long values, which
    a declared narrower integer or decimal column takes when it holds all of them."""
    if value in (column, NOTHING) or narrower(value, column):
        return True
    if value in (LONG, BOOLEAN) and column in INTEGER_RANGES:
        lo, hi = (0, 1) if value == BOOLEAN else (low, high)
        bounds = INTEGER_RANGES[column]
        return lo is not None and hi is not None and bounds[0] <= lo and hi <= bounds[1]
    room = decimal_room(column)
    if value == LONG and room is not None and low is not None and high is not None:
        return -room < low and high < room
    return False


def routes(value: str, column: str, low: int | None = None, high: int | None = None) -> bool:
    """A value of kind ``value`` is written into a column of kind ``column`` (rule 8): it fits,
    or it is a long and the column a timestamp (edge case 2)."""
    return fits(value, column, low, high) or (value, column) in ROUTED_ONLY


_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")


def ranged(column: str) -> bool:
    """A declared integer or decimal column: it takes the long values within its range."""
    return column in INTEGER_RANGES or _DECIMAL.fullmatch(column) is not None


def decimal_room(column: str) -> int | None:
    """10 ** (precision - scale) of a decimal column: its integers lie strictly within +-it."""
    found = _DECIMAL.fullmatch(column)
    return 10 ** (int(found.group(1)) - int(found.group(2))) if found else None


def suffix(kind: str) -> str:
    """The kind's word in an evolved column's name: the seed's, else the DuckLake type name
    with what is not a letter or a digit as ``_`` (``decimal(10,2)`` -> ``decimal_10_2``)."""
    return re.sub(r"_+", "_", re.sub(r"[^0-9A-Za-z]", "_", kind)).strip("_")


def evolved_name(field: str, shape: Shape) -> str:
    """``size_double``, ``a_array_string``, ``coordinates_array3_long`` (rule 5)."""
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
    (a seed kind when the column's type is the seed's own, else the type's name)."""
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
    if name in _SEED_KIND_OF_TYPE:
        return Shape(dims, _SEED_KIND_OF_TYPE[name])
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
