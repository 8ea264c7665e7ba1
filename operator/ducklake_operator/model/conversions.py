"""Heavy-weight type changes: the conversions a ``rewriteColumnType`` job can do, and how (pure).

Doris's list of heavy schema changes (``ALTER TABLE ... MODIFY COLUMN``), in DuckLake types:
numbers to wider numbers and to varchar; varchar to numbers; varchar to date in six formats;
timestamp (without time zone) <-> date; integer (``yyyymmdd``) to date; decimal precision
changes; boolean to varchar (Doris: every type but DATE and DATETIME to STRING; its text
is DuckDB's, ``true``/``false``). Anything else is refused with a sentence naming both
types. The lossless promotions (``promotion``) never get here: they change the catalog only.

``conversion_sql`` is the DuckDB expression the job evaluates per value: NULL exactly when a
value does not convert (NULL stays NULL), so the job can tell a failed value from a NULL.
Strict where DuckDB's own casts are lenient: ``'1.5'`` does not become the integer 2, and
``'0x1F'`` is no number.
"""

from __future__ import annotations

from .types import Decimal, DuckLakeType, Primitive, to_duckdb_sql

SIGNED = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "int128": 128}
UNSIGNED = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64, "uint128": 128}
FLOATS = ("float32", "float64")
# timestamps without time zone (Doris's DATETIME); timestamptz's date depends on a zone
TIMESTAMPS = ("timestamp", "timestamp_s", "timestamp_ms", "timestamp_ns")
# Doris's formats of a date in a string, in the order tried; each recognised by its shape
DATE_FORMATS: tuple[tuple[str, str], ...] = (
    ("%Y-%m-%d", "[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"),
    ("%y-%m-%d", "[0-9]{2}-[0-9]{1,2}-[0-9]{1,2}"),
    ("%Y%m%d", "[0-9]{8}"),
    ("%y%m%d", "[0-9]{6}"),
    ("%Y/%m/%d", "[0-9]{4}/[0-9]{1,2}/[0-9]{1,2}"),
    ("%y/%m/%d", "[0-9]{2}/[0-9]{1,2}/[0-9]{1,2}"),
)
_INTEGER_TEXT = "[+-]?[0-9]+"
_NUMBER_TEXT = "[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][+-]?[0-9]+)?"
_FLOAT_WORDS = "[+-]?(inf|infinity|nan)"
_YYYYMMDD = (10000101, 99991231)  # an integer date: 8 digits, years 1000 to 9999
# DuckLake's Parquet files hold these as DOUBLE (docs/ducklake-format.md §4.6), DuckDB's too:
# a rewrite writes every value into a file, so one beyond a double's 53 bits would change
STORED_AS_DOUBLE = ("int128", "uint128")

WHAT_EACH_BECOMES = {
    "integer": "a wider integer, float64 (float32 from 8 and 16 bits), a decimal with room for every value, "
    "varchar, or date (from yyyymmdd, 32 bits and more)",
    "float": "float64 or varchar",
    "decimal": "another decimal or varchar",
    "varchar": "an integer, a float, a decimal, or date (" + ", ".join(f for f, _ in DATE_FORMATS) + ")",
    "date": "a timestamp without time zone",
    "timestamp": "date",
    "boolean": "varchar",
}


def _kind(t: DuckLakeType) -> str | None:
    if isinstance(t, Decimal):
        return "decimal"
    if not isinstance(t, Primitive):
        return None
    if t.name in SIGNED or t.name in UNSIGNED:
        return "integer"
    if t.name in FLOATS:
        return "float"
    if t.name in TIMESTAMPS:
        return "timestamp"
    return t.name if t.name in ("varchar", "date", "boolean") else None


def _bits(t: DuckLakeType) -> int:
    return SIGNED.get(t.name) or UNSIGNED[t.name]


def _digits(t: DuckLakeType) -> int:
    """Decimal digits of the integer type's largest magnitude."""
    return len(str(2 ** _bits(t) - 1 if t.name in UNSIGNED else 2 ** (_bits(t) - 1)))


def _wider_integer(old: DuckLakeType, new: DuckLakeType) -> bool:
    if old.name in SIGNED:
        return new.name in SIGNED and _bits(new) > _bits(old)
    return _bits(new) > _bits(old) if new.name in UNSIGNED else new.name in SIGNED and _bits(new) > _bits(old)


def _allowed(old: DuckLakeType, new: DuckLakeType) -> bool:
    src, dst = _kind(old), _kind(new)
    if src is None or dst is None or old == new:
        return False
    if src == "integer":
        if dst == "integer":
            return _wider_integer(old, new)
        if dst == "float":
            return new.name == "float64" or _bits(old) <= 16
        if dst == "decimal":
            assert isinstance(new, Decimal)
            return new.precision - new.scale >= _digits(old)
        # yyyymmdd needs 8 digits: 16 bits never hold one
        return dst == "varchar" or (dst == "date" and _bits(old) >= 32)
    if src == "float":
        return new.name == "float64" or dst == "varchar"
    if src == "decimal":
        return dst in ("decimal", "varchar")
    if src == "varchar":
        return dst in ("integer", "float", "decimal", "date")
    if src == "date":
        return dst == "timestamp"
    if src == "boolean":
        return dst == "varchar"
    return src == "timestamp" and dst == "date"


def conversion_problem(old: DuckLakeType, new: DuckLakeType) -> str | None:
    """None when a rewrite can convert ``old`` values to ``new``, else why not (one sentence)."""
    if _allowed(old, new):
        return None
    becomes = WHAT_EACH_BECOMES.get(_kind(old) or "")
    return f"{old} → {new} is not a conversion a rewrite can do" + (
        f" ({old} can become {becomes})" if becomes else f" (no conversion starts from {old})"
    )


def conversion_sql(old: DuckLakeType, new: DuckLakeType, value: str) -> str:
    """DuckDB SQL converting ``value`` (an expression of type ``old``) to ``new``: NULL when
    the value is NULL or does not convert (nor would survive in a data file). Only for
    conversions ``conversion_problem`` allows."""
    assert _allowed(old, new), (old, new)
    return _exact_in_files(new, _converted(old, new, value))


def _converted(old: DuckLakeType, new: DuckLakeType, value: str) -> str:
    src, dst = _kind(old), _kind(new)
    target = to_duckdb_sql(new)
    if src == "varchar" and dst == "integer":
        # the shape check is most of the conversion's cost: text that the integer prints back
        # exactly (most) needs none; spaces around are what trim() removes, and TRY_CAST skips
        cast = f"TRY_CAST({value} AS {target})"
        return (
            f"CASE WHEN CAST({cast} AS VARCHAR) = {value} THEN {cast} "
            f"WHEN regexp_full_match({value}, ' *{_INTEGER_TEXT} *') THEN {cast} END"
        )
    if src == "varchar":
        text = f"trim({value})"
        if dst == "date":
            cases = " ".join(
                f"WHEN regexp_full_match({text}, '{shape}') THEN try_strptime({text}, '{fmt}')"
                for fmt, shape in DATE_FORMATS
            )
            return f"CAST(CASE {cases} END AS DATE)"
        matches = f"regexp_full_match({text}, '{_NUMBER_TEXT}')"
        if dst == "float":
            matches += f" OR regexp_full_match(lower({text}), '{_FLOAT_WORDS}')"
        return f"CASE WHEN {matches} THEN TRY_CAST({text} AS {target}) END"
    if src == "integer" and dst == "date":
        low, high = _YYYYMMDD
        return (
            f"CAST(CASE WHEN {value} BETWEEN {low} AND {high} "
            f"THEN try_strptime(CAST({value} AS VARCHAR), '%Y%m%d') END AS DATE)"
        )
    return f"TRY_CAST({value} AS {target})"


def _exact_in_files(new: DuckLakeType, converted: str) -> str:
    """``converted``, or NULL where a data file would not hold it exactly."""
    if new.name not in STORED_AS_DOUBLE:
        return converted
    return f"CASE WHEN TRY_CAST(CAST({converted} AS DOUBLE) AS {to_duckdb_sql(new)}) = {converted} THEN {converted} END"


def values_limit(new: DuckLakeType) -> str | None:
    """Why values of a type that converted may still not be written (for a failed job's
    message), if the type has such a limit."""
    if new.name in STORED_AS_DOUBLE:
        return f"DuckLake's data files hold {new} as a double, exact for integers up to ±2^53"
    return None


def column_rewrite_problem(
    path: tuple[str, ...], parents: tuple[str, ...], old: DuckLakeType, new: DuckLakeType, partition_key: bool
) -> str | None:
    """None when a rewrite can retype the column (or field) at ``path``, else why not:
    ``parents`` are the type names of the columns above it, ``partition_key`` whether the
    table is (or is to be) partitioned by it."""
    where = ".".join(path)
    inside = next((p for p in parents if p in ("list", "map")), None)
    if inside is not None:
        return f"{where}: only top-level columns and struct fields can be rewritten, not the values of a {inside}"
    if partition_key:
        return (
            f"{where}: the table is partitioned by it, and a rewrite cannot change a partition column's type "
            "(remove it from partitionBy first)"
        )
    problem = conversion_problem(old, new)
    return f"{where}: {problem}" if problem else None
