"""DuckLake options: manifest names, catalog keys, scopes, and DuckDB's value normalisation.

Values are stored as DuckDB's ``set_option`` stores them (docs/ducklake-format.md §7): sizes in bytes
(``'10MB'`` -> ``'10000000'``, decimal units), ``parquet_version`` as ``'V2'``, the delete
threshold with six decimals, booleans as ``'true'``/``'false'``.
"""

from __future__ import annotations

import re

from ..errors import SpecError

# catalog key -> (manifest key, kind, scopes it may be set in)
OPTIONS: dict[str, tuple[str, str, frozenset[str]]] = {
    "data_inlining_row_limit": ("dataInliningRowLimit", "count", frozenset({"global", "schema", "table"})),
    "target_file_size": ("targetFileSize", "size", frozenset({"global", "schema", "table"})),
    "parquet_compression": ("parquetCompression", "compression", frozenset({"global", "schema", "table"})),
    "parquet_compression_level": ("parquetCompressionLevel", "count", frozenset({"global", "schema", "table"})),
    "parquet_version": ("parquetVersion", "parquet_version", frozenset({"global", "schema", "table"})),
    "parquet_row_group_size": ("parquetRowGroupSize", "count", frozenset({"global", "schema", "table"})),
    "parquet_row_group_size_bytes": ("parquetRowGroupSizeBytes", "size", frozenset({"global", "schema", "table"})),
    "per_thread_output": ("perThreadOutput", "bool", frozenset({"global", "schema", "table"})),
    "hive_file_pattern": ("hiveFilePattern", "bool", frozenset({"global", "schema", "table"})),
    "sort_on_insert": ("sortOnInsert", "bool", frozenset({"global", "schema", "table"})),
    "rewrite_delete_threshold": ("rewriteDeleteThreshold", "ratio", frozenset({"global", "schema", "table"})),
    "auto_compact": ("autoCompact", "bool", frozenset({"global", "schema", "table"})),
    "delete_older_than": ("deleteOlderThan", "interval", frozenset({"global"})),
    "expire_older_than": ("expireOlderThan", "interval", frozenset({"global"})),
    "require_commit_message": ("requireCommitMessage", "bool", frozenset({"global"})),
}
BY_MANIFEST_KEY = {manifest: key for key, (manifest, _, _) in OPTIONS.items()}
COMPRESSIONS = ("uncompressed", "snappy", "gzip", "zstd", "brotli", "lz4", "lz4_raw")
# DuckDB's values for options that are not set (at any scope).
DEFAULT_INLINING_ROW_LIMIT = 10
DEFAULT_TARGET_FILE_SIZE = 1 << 29  # 512 MiB, DuckDB's DEFAULT_TARGET_FILE_SIZE
DEFAULT_REWRITE_DELETE_THRESHOLD = 0.95
_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
# A size as DuckDB reads one ('512MB', '1 GiB', '100'): also the CRDs' pattern (Go's RE2 reads it).
SIZE_PATTERN = r"^\s*\d+(\.\d+)?\s*(" + "|".join(u for u in _UNITS if u) + r")?\s*$"
_SIZE = re.compile(SIZE_PATTERN, re.I)
_INTERVAL = re.compile(
    r"^\s*\d+\s*(second|minute|hour|day|week|month|year)s?(\s+\d+\s*(second|minute|hour|day|week|month|year)s?)*\s*$",
    re.I,
)


def catalog_key(name: str) -> str:
    """The catalog key for a manifest (camelCase) or catalog (snake_case) option name."""
    if name in OPTIONS:
        return name
    if name in BY_MANIFEST_KEY:
        return BY_MANIFEST_KEY[name]
    known = ", ".join(sorted(BY_MANIFEST_KEY))
    raise SpecError(f"option {name!r} is not a DuckLake option; known options: {known}")


def normalize_option(name: str, value: object, scope: str = "global") -> tuple[str, str]:
    """(catalog key, stored text) for an option, or SpecError saying what is allowed."""
    key = catalog_key(name)
    manifest, kind, scopes = OPTIONS[key]
    if scope not in scopes:
        raise SpecError(f"option {manifest} can only be set catalog-wide, not per {scope}")
    try:
        return key, _normalize(kind, value)
    except (ValueError, TypeError) as exc:
        raise SpecError(f"option {manifest}: {exc}") from None


def _normalize(kind: str, value: object) -> str:
    if kind == "bool":
        if isinstance(value, bool):
            return "true" if value else "false"
        if str(value).lower() in ("true", "false"):
            return str(value).lower()
        raise ValueError(f"{value!r} is not true or false")
    if kind == "count":
        n = int(str(value))
        if n < 0 or isinstance(value, bool):
            raise ValueError(f"{value!r} is not a non-negative integer")
        return str(n)
    if kind == "size":
        return str(parse_size(value))
    if kind == "compression":
        if str(value).lower() not in COMPRESSIONS:
            raise ValueError(f"{value!r} is not one of {', '.join(COMPRESSIONS)}")
        return str(value).lower()
    if kind == "parquet_version":
        v = str(value).upper().lstrip("V")
        if v not in ("1", "2"):
            raise ValueError(f"{value!r} is not 1 or 2")
        return f"V{v}"
    if kind == "ratio":
        r = float(str(value))
        if not 0.0 <= r <= 1.0:
            raise ValueError(f"{value!r} is not between 0 and 1")
        return f"{r:.6f}"
    if kind == "interval":
        if not _INTERVAL.match(str(value)):
            raise ValueError(f"{value!r} is not an interval like '2 days'")
        return str(value).strip()
    raise AssertionError(kind)


def parse_size(value: object) -> int:
    """Bytes from 512, '10MB', '1 GiB' (DuckDB's units: KB = 1000, KiB = 1024)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"{value!r} is negative")
        return value
    text = str(value)
    parts = re.fullmatch(r"\s*([\d.]+)\s*([A-Za-z]*)\s*", text)
    if not _SIZE.match(text) or parts is None:
        raise ValueError(f"{value!r} is not a size like 512MB or 1GiB")
    number, unit = parts.groups()
    return int(float(number) * _UNITS[unit.lower()])


def render_size(size: int) -> str:
    """The shortest exact spelling of a size in bytes (``1 << 29`` -> ``512MiB``)."""
    for unit in ("tib", "tb", "gib", "gb", "mib", "mb", "kib", "kb"):
        factor = _UNITS[unit]
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit[0].upper()}{unit[1:-1]}{unit[-1].upper()}"
    return f"{size}B"
