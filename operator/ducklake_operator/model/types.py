"""The DuckLake type system: parse, normalise and render types.

Canonical names are the strings DuckDB 1.5.5 writes to ``ducklake_column.column_type``
(``src/common/ducklake_types.cpp``). Manifests may also use DuckDB SQL spellings
(``INTEGER``, ``TIMESTAMP WITH TIME ZONE``, ``VARCHAR[]``, ``STRUCT(a INT)``); they are
normalised here, through one alias table, never by if-chains.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from ..errors import SpecError

# Canonical DuckLake primitive names -> DuckDB SQL type used to render them.
PRIMITIVES: dict[str, str] = {
    "boolean": "BOOLEAN",
    "int8": "TINYINT",
    "int16": "SMALLINT",
    "int32": "INTEGER",
    "int64": "BIGINT",
    "int128": "HUGEINT",
    "uint8": "UTINYINT",
    "uint16": "USMALLINT",
    "uint32": "UINTEGER",
    "uint64": "UBIGINT",
    "uint128": "UHUGEINT",
    "float32": "FLOAT",
    "float64": "DOUBLE",
    "varchar": "VARCHAR",
    "blob": "BLOB",
    "json": "JSON",
    "uuid": "UUID",
    "date": "DATE",
    "time": "TIME",
    "time_ns": "TIME_NS",
    "timetz": "TIME WITH TIME ZONE",
    "timestamp": "TIMESTAMP",
    "timestamp_s": "TIMESTAMP_S",
    "timestamp_ms": "TIMESTAMP_MS",
    "timestamp_ns": "TIMESTAMP_NS",
    "timestamptz": "TIMESTAMP WITH TIME ZONE",
    "interval": "INTERVAL",
    "variant": "VARIANT",
    "geometry": "GEOMETRY",
}

# Other spellings (upper-cased, single spaces) -> canonical name. DuckDB's byte-width
# alias INT8 (= BIGINT) is deliberately absent: in DuckLake ``int8`` is the 8-bit type.
ALIASES: dict[str, str] = {
    "BOOL": "boolean",
    "LOGICAL": "boolean",
    "INT1": "int8",
    "INT2": "int16",
    "SHORT": "int16",
    "INT": "int32",
    "INT4": "int32",
    "SIGNED": "int32",
    "LONG": "int64",
    "INT64": "int64",
    "INT32": "int32",
    "INT16": "int16",
    "INT128": "int128",
    "REAL": "float32",
    "FLOAT4": "float32",
    "FLOAT8": "float64",
    "DOUBLE PRECISION": "float64",
    "STRING": "varchar",
    "TEXT": "varchar",
    "CHAR": "varchar",
    "BPCHAR": "varchar",
    "NVARCHAR": "varchar",
    "CHARACTER VARYING": "varchar",
    "BYTEA": "blob",
    "BINARY": "blob",
    "VARBINARY": "blob",
    "TIME WITH TIME ZONE": "timetz",
    "TIME WITHOUT TIME ZONE": "time",
    "DATETIME": "timestamp",
    "TIMESTAMP_US": "timestamp",
    "TIMESTAMP WITHOUT TIME ZONE": "timestamp",
    "TIMESTAMP WITH TIME ZONE": "timestamptz",
    "TIMETZ": "timetz",
    "TIMESTAMPTZ": "timestamptz",
}
for _name, _sql in PRIMITIVES.items():
    ALIASES.setdefault(_sql, _name)

DEFAULT_DECIMAL = (18, 3)  # DuckDB's DECIMAL without parameters
NESTED_NAMES = ("struct", "list", "map")


@dataclass(frozen=True)
class Primitive:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Decimal:
    precision: int
    scale: int

    @property
    def name(self) -> str:
        return f"decimal({self.precision},{self.scale})"

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Default:
    """A column default as DuckLake stores it.

    ``value`` goes to ``default_value`` (a constant as written, or DuckDB-rendered SQL for
    an expression); ``initial`` to ``initial_default`` (the constant cast to the column type
    and rendered as text; what rows written before the column existed read). ``initial``
    None with a literal means "same as value".
    """

    value: str
    is_expression: bool = False
    initial: str | None = None

    @property
    def initial_default(self) -> str | None:
        if self.is_expression:
            return None
        return self.value if self.initial is None else self.initial


@dataclass(frozen=True)
class Field:
    """A named, typed member of a table or struct (a column or a struct field)."""

    name: str
    type: DuckLakeType
    nullable: bool = True
    default: Default | None = None
    comment: str | None = None
    tags: tuple[tuple[str, str], ...] = ()
    renamed_from: tuple[str, ...] = ()  # desired state only: earlier names of this field


@dataclass(frozen=True)
class Struct:
    fields: tuple[Field, ...]
    name: str = field(default="struct", init=False)

    def __str__(self) -> str:
        return "struct<" + ", ".join(f"{f.name}: {f.type}" for f in self.fields) + ">"


@dataclass(frozen=True)
class ListOf:
    element: DuckLakeType
    name: str = field(default="list", init=False)

    def __str__(self) -> str:
        return f"list<{self.element}>"


@dataclass(frozen=True)
class MapOf:
    key: DuckLakeType
    value: DuckLakeType
    name: str = field(default="map", init=False)

    def __str__(self) -> str:
        return f"map<{self.key}, {self.value}>"


DuckLakeType = Primitive | Decimal | Struct | ListOf | MapOf


def is_nested(t: DuckLakeType) -> bool:
    return isinstance(t, (Struct, ListOf, MapOf))


def member_fields(t: DuckLakeType) -> tuple[Field, ...]:
    """The child columns of a column of type ``t``, as DuckLake stores them: a struct's fields,
    a list's ``element``, a map's ``key`` and ``value`` (nullable, no default); none else."""
    if isinstance(t, Struct):
        return t.fields
    if isinstance(t, ListOf):
        return (Field("element", t.element),)
    if isinstance(t, MapOf):
        return (Field("key", t.key), Field("value", t.value))
    return ()


# --------------------------------------------------------------------------- parsing

_TOKEN = re.compile(r'\s*(?:(?P<q>"(?:[^"]|"")*")|(?P<w>[A-Za-z_][A-Za-z0-9_]*)|(?P<n>\d+)|(?P<p>\[\]|[(),<>:]))')
_MAX_DECIMAL_PRECISION = 38


class _Parser:
    """Recursive descent over DuckDB-style type strings (``STRUCT(a INT, b VARCHAR[])``)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        stripped = text.rstrip()
        while pos < len(stripped):
            m = _TOKEN.match(stripped, pos)
            if not m or m.end() == pos:
                raise self.error(f"unexpected character {stripped[pos:].strip()[:1]!r}")
            kind = m.lastgroup or ""
            self.tokens.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0

    def error(self, msg: str) -> SpecError:
        return SpecError(f"{self.text!r} is not a DuckLake type: {msg}")

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok is None or (value is not None and tok[1].upper() != value.upper()):
            raise self.error(f"expected {value!r}" if value else "unexpected end")
        self.i += 1
        return tok

    def parse(self) -> DuckLakeType:
        t = self.type_()
        extra = self.peek()
        if extra is not None:
            raise self.error(f"unexpected {extra[1]!r}")
        return t

    def type_(self) -> DuckLakeType:
        t = self.base()
        while self.peek() == ("p", "[]"):
            self.take()
            t = ListOf(t)
        return t

    def base(self) -> DuckLakeType:
        kind, word = self.take()
        if kind != "w":
            raise self.error(f"expected a type name, got {word!r}")
        upper = word.upper()
        if upper in ("STRUCT", "ROW"):
            return self.struct_body()
        if upper == "LIST":
            return ListOf(self.bracketed(1)[0])
        if upper == "MAP":
            k, v = self.bracketed(2)
            return MapOf(k, v)
        if upper in ("DECIMAL", "NUMERIC"):
            return self.decimal_args()
        # multi-word spellings (TIMESTAMP WITH TIME ZONE, DOUBLE PRECISION, ...)
        words = [upper]
        while (tok := self.peek()) and tok[0] == "w" and " ".join(words + [tok[1].upper()]) in _MULTIWORD_PREFIXES:
            words.append(self.take()[1].upper())
        name = _lookup(" ".join(words))
        if name is None:
            raise self.error(_unknown_message(" ".join(words)))
        if name == "varchar" and self.peek() == ("p", "("):  # VARCHAR(255): length ignored
            self.take("(")
            self.take()
            self.take(")")
        return Primitive(name)

    def decimal_args(self) -> Decimal:
        precision, scale = DEFAULT_DECIMAL
        if self.peek() == ("p", "("):
            self.take("(")
            precision, scale = int(self.number()), 0
            if self.peek() == ("p", ","):
                self.take(",")
                scale = int(self.number())
            self.take(")")
        if not 1 <= precision <= _MAX_DECIMAL_PRECISION or not 0 <= scale <= precision:
            raise self.error(f"decimal({precision},{scale}) needs 1 <= P <= 38 and 0 <= S <= P")
        return Decimal(precision, scale)

    def number(self) -> str:
        kind, value = self.take()
        if kind != "n":
            raise self.error(f"expected a number, got {value!r}")
        return value

    def bracketed(self, count: int) -> list[DuckLakeType]:
        close = ")"
        if self.peek() == ("p", "<"):
            self.take("<")
            close = ">"
        else:
            self.take("(")
        out = [self.type_()]
        while len(out) < count:
            self.take(",")
            out.append(self.type_())
        self.take(close)
        return out

    def struct_body(self) -> Struct:
        close = ")"
        if self.peek() == ("p", "<"):
            self.take("<")
            close = ">"
        else:
            self.take("(")
        fields: list[Field] = []
        while True:
            kind, name = self.take()
            if kind == "q":
                name = name[1:-1].replace('""', '"')
            elif kind != "w":
                raise self.error(f"expected a field name, got {name!r}")
            if self.peek() == ("p", ":"):
                self.take(":")
            fields.append(Field(name, self.type_()))
            if self.peek() == ("p", ","):
                self.take(",")
                continue
            self.take(close)
            return Struct(tuple(fields))


def _multiword_prefixes() -> frozenset[str]:
    out: set[str] = set()
    for alias in ALIASES:
        parts = alias.split(" ")
        for i in range(2, len(parts) + 1):
            out.add(" ".join(parts[:i]))
    return frozenset(out)


_MULTIWORD_PREFIXES = _multiword_prefixes()


def _lookup(word: str) -> str | None:
    lower = word.lower()
    if lower in PRIMITIVES:
        return lower
    return ALIASES.get(word.upper())


def _unknown_message(word: str) -> str:
    candidates = list(PRIMITIVES) + [a.lower() for a in ALIASES] + ["decimal", *NESTED_NAMES]
    close = difflib.get_close_matches(word.lower(), candidates, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    return f"{word.lower()!r} is not a DuckLake type{hint}"


def parse_type(text: str) -> DuckLakeType:
    """Parse a type string (DuckLake name or DuckDB spelling) into a type value.

    Raises SpecError with a suggestion for near misses (``int65`` -> ``int64``).
    """
    if not isinstance(text, str) or not text.strip():
        raise SpecError(f"{text!r} is not a DuckLake type: empty")
    stripped = text.strip()
    lower = stripped.lower()
    if lower in PRIMITIVES:
        return Primitive(lower)
    try:
        return _Parser(stripped).parse()
    except SpecError as exc:
        word = stripped.split("(")[0].split("[")[0].strip()
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_ ]*", stripped) and _lookup(word) is None:
            raise SpecError(_unknown_message(word)) from None
        raise exc


# --------------------------------------------------------------------------- rendering


def catalog_type_name(t: DuckLakeType) -> str:
    """The string stored in ``ducklake_column.column_type`` for the node itself."""
    return t.name


def from_catalog_name(name: str) -> DuckLakeType | None:
    """Primitive/decimal type from a ``column_type`` value; None for nested parents."""
    lower = name.lower()
    if lower in NESTED_NAMES:
        return None
    if lower == "timestamp_us":
        return Primitive("timestamp")
    return parse_type(lower)


def quote_ident(name: str) -> str:
    """Quote an identifier for DuckDB SQL (used only to render types and test SQL)."""
    return '"' + name.replace('"', '""') + '"'


def to_duckdb_sql(t: DuckLakeType) -> str:
    """The DuckDB SQL spelling of a type (what DuckDB's DESCRIBE prints)."""
    if isinstance(t, Primitive):
        return PRIMITIVES[t.name]
    if isinstance(t, Decimal):
        return f"DECIMAL({t.precision},{t.scale})"
    if isinstance(t, ListOf):
        return to_duckdb_sql(t.element) + "[]"
    if isinstance(t, MapOf):
        return f"MAP({to_duckdb_sql(t.key)}, {to_duckdb_sql(t.value)})"
    return "STRUCT(" + ", ".join(f"{quote_ident(f.name)} {to_duckdb_sql(f.type)}" for f in t.fields) + ")"
