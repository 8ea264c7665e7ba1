"""How DuckLake names partitions (pure; docs/ducklake-format.md §6.1-§6.2): the DuckDB expression of each
transform, hive directory key names and the text form of values."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from .state import ColumnState, PartitionField, PartitionSpec

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_BUCKET = re.compile(r"bucket\((\d+)\)$")


def transform_sql(transform: str, column_sql: str) -> str:
    """A DuckDB expression giving the partition value's stored text (NULL for NULL)."""
    key = key_sql(transform, column_sql)
    return key if transform == "identity" else f"CAST({key} AS VARCHAR)"


def key_sql(transform: str, column_sql: str) -> str:
    """A DuckDB expression whose text (``CAST AS VARCHAR``, or the keys a partitioned COPY
    returns) is the partition value's stored text: integers for the temporal transforms and
    ``bucket(N)``, text for identity. A COPY partitioning by the integers is about 9% faster
    than by their text (a hash of a string per row)."""
    if transform == "identity":
        return f"CAST({column_sql} AS VARCHAR)"
    if transform in ("year", "month", "day", "hour"):
        return f"{transform}({column_sql})"
    bucket = _BUCKET.match(transform)
    if bucket:  # murmur3_32 comes with the ducklake extension
        return f"((murmur3_32({column_sql}) & 2147483647) % {bucket.group(1)})"
    raise ValueError(f"unknown partition transform {transform!r}")


def key_texts(values: Iterable[Any]) -> tuple[str | None, ...]:
    """The stored text of partition keys read back from ``key_sql`` expressions (an
    integer's text is its value's; text stays itself; NULL stays None)."""
    return tuple(None if v is None else str(v) for v in values)


def needs_ducklake_functions(transforms: Iterable[str]) -> bool:
    """Whether DuckDB computes these transforms only with the ducklake extension loaded
    (``bucket(N)``: its murmur3_32)."""
    return any(_BUCKET.match(t) for t in transforms)


def key_fields(spec: PartitionSpec | None) -> list[PartitionField]:
    """The spec's fields in key order (none: unpartitioned)."""
    return sorted(spec.fields, key=lambda f: f.key_index) if spec else []


def key_names(spec: PartitionSpec | None, columns: tuple[ColumnState, ...]) -> list[str]:
    """Hive directory key of each partition field: the column name for identity, else the
    transform's name, suffixed ``_<column>`` when already taken."""
    by_id = {c.column_id: c.name for c in columns}
    names: list[str] = []
    for f in key_fields(spec):
        column = by_id[f.column_id]
        name = column if f.transform == "identity" else f.transform.split("(")[0]
        if name in names:
            name = f"{name}_{column}"
        names.append(name)
    return names


def hive_directory(names: list[str], values: tuple[str | None, ...]) -> str:
    """``k1=v1/k2=v2`` (URL-encoded values, NULL as DuckDB's default partition name)."""
    return "/".join(f"{k}={HIVE_NULL if v is None else quote(v, safe='')}" for k, v in zip(names, values, strict=False))
