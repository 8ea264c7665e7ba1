"""Write Parquet exactly as DuckDB's ducklake extension does: with DuckDB's own ``COPY``.

An in-process DuckDB (the core wheel, no extension) writes every job's output, so field ids
(``FIELD_IDS``, nested too), physical types (microsecond timestamps, HUGEINT as DOUBLE, ...),
compression and row groups are DuckDB's, and ``RETURN_STATS`` gives the per-column
statistics in the very text forms DuckDB stores in ``ducklake_file_column_stats``
('0'/'1' booleans, upper-case hex blobs, UTC timestamptz, scale-exact decimals).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from ducklake_operator import storage
from ducklake_operator.duckdb_session import open_session
from ducklake_operator.errors import DuckLakeError
from ducklake_operator.model.file_changes import FileColumnStats
from ducklake_operator.model.state import ColumnState

from . import task_resources

ROW_ID = "_ducklake_internal_row_id"
SNAPSHOT_ID = "_ducklake_internal_snapshot_id"
# Iceberg v3 row lineage ids (docs/ducklake-format.md §4.1)
HIDDEN_FIELD_IDS = {ROW_ID: 2147483540, SNAPSHOT_ID: 2147483539}
DEFAULT_ROW_GROUP_SIZE = 122_880
# table/schema/catalog options that shape DuckDB's Parquet output -> COPY option
COPY_OPTIONS = {
    "parquet_compression": "COMPRESSION",
    "parquet_compression_level": "COMPRESSION_LEVEL",
    "parquet_version": "PARQUET_VERSION",
    "parquet_row_group_size": "ROW_GROUP_SIZE",
    "parquet_row_group_size_bytes": "ROW_GROUP_SIZE_BYTES",
}


@dataclass(frozen=True)
class FieldIds:
    """One column's Parquet field id and its children's (struct fields; ``element`` of a
    list; ``key``/``value`` of a map), as DuckDB's FIELD_IDS option spells them."""

    name: str
    field_id: int
    children: tuple[FieldIds, ...] = ()
    # False for HUGEINT/UHUGEINT: DuckDB writes them as DOUBLE and keeps no min, max or NaN
    # flag for them (docs/ducklake-format.md §4.6); the DOUBLE's, as text, would prune wrongly
    bounds: bool = field(default=True, compare=False)


# the types whose statistics DuckDB keeps without min, max and NaN flag
_NO_BOUNDS = ("int128", "uint128")


@dataclass(frozen=True)
class WrittenFile:
    local_path: str
    record_count: int
    file_size_bytes: int
    footer_size: int
    column_stats: tuple[FileColumnStats, ...]


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def field_ids_from_columns(columns: Iterable[ColumnState]) -> tuple[FieldIds, ...]:
    return tuple(
        FieldIds(c.name, c.column_id, field_ids_from_columns(c.children), c.type_name not in _NO_BOUNDS)
        for c in columns
    )


def field_ids_from_arrow(schema: pa.Schema) -> tuple[FieldIds, ...]:
    """The field ids of an existing Parquet file (read with pyarrow), hidden columns included."""

    def walk(f: pa.Field, name: str) -> FieldIds:
        fid = int((f.metadata or {}).get(b"PARQUET:field_id", b"-1"))
        t = f.type
        if pa.types.is_struct(t):
            kids = tuple(walk(t.field(i), t.field(i).name) for i in range(t.num_fields))
        elif pa.types.is_map(t):
            kids = (walk(t.key_field, "key"), walk(t.item_field, "value"))
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            kids = (walk(t.value_field, "element"),)
        else:
            kids = ()
        return FieldIds(name, fid, kids)

    return tuple(walk(f, f.name) for f in schema)


def field_ids_sql(fields: Iterable[FieldIds]) -> str:
    """The value of DuckDB's ``FIELD_IDS`` copy option."""

    def one(f: FieldIds) -> str:
        if not f.children:
            return f"{literal(f.name)}: {f.field_id}"
        return f"{literal(f.name)}: {{__duckdb_field_id: {f.field_id}, {', '.join(one(c) for c in f.children)}}}"

    return "{" + ", ".join(one(f) for f in fields) + "}"


def _leaf_keys(fields: Iterable[FieldIds], prefix: str = "") -> dict[str, FieldIds]:
    """RETURN_STATS names a leaf by its quoted path: '"s"."y"."element"'."""
    out: dict[str, FieldIds] = {}
    for f in fields:
        key = prefix + quote(f.name)
        if f.children:
            out.update(_leaf_keys(f.children, key + "."))
        else:
            out[key] = f
    return out


def copy_options(options: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """COPY options for the catalog's parquet_* options in force for a table."""
    out = {"COMPRESSION": "snappy", "ROW_GROUP_SIZE": str(DEFAULT_ROW_GROUP_SIZE)}
    for key, option in COPY_OPTIONS.items():
        if options.get(key):
            out[option] = str(options[key])
    return tuple(sorted(out.items()))


def scratch_connection(*, extensions: bool = False, spill: str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB for a job's work, within the task's resources; ``extensions``: may
    load the extension wheels; ``spill``: where it spills beyond its memory limit."""
    resources = task_resources.current()
    con = open_session(
        unsigned_extensions=extensions,
        threads=resources.threads,
        memory_limit_mb=resources.memory_limit_mb,
        spill=spill,
    )
    # a task reads each input once: DuckDB's cache of the files' blocks (on by default) would
    # keep tens of kilobytes of every small file read, up to its memory limit (80% of RAM
    # without one)
    con.execute("SET enable_external_file_cache = false")
    return con


@contextmanager
def scratch_session(
    s3: storage.S3Config | None, prefix: str = "ducklake-", *, ducklake_functions: bool = False
) -> Iterator[tuple[duckdb.DuckDBPyConnection, str]]:
    """A task's scratch directory and a ``scratch_connection`` spilling into it, with the
    driver's S3 settings ``s3`` in force; ``ducklake_functions``: with the extension's loaded."""
    if s3 is not None:
        storage.configure(s3)
    with tempfile.TemporaryDirectory(prefix=prefix) as scratch:
        con = scratch_connection(extensions=ducklake_functions, spill=os.path.join(scratch, "spill"))
        try:
            if ducklake_functions:
                load_ducklake_functions(con)
            yield con, scratch
        finally:
            con.close()


def load_ducklake_functions(con: duckdb.DuckDBPyConnection) -> None:
    """Load the ducklake extension into a ``scratch_connection(extensions=True)``: its
    ``murmur3_32`` computes ``bucket(N)`` partition values."""
    from ducklake_operator.duckdb_client import extension_path

    path = extension_path("ducklake")
    if path is None:
        raise DuckLakeError(
            "bucket partitioning needs DuckDB's murmur3_32: install the duckdb extra (duckdb-extension-ducklake)"
        )
    con.execute(f"LOAD {literal(path)}")


def write_parquet(
    con: duckdb.DuckDBPyConnection,
    select_sql: str,
    fields: tuple[FieldIds, ...],
    out_local: str,
    options: tuple[tuple[str, str], ...] = (),
    params: list[Any] | dict[str, Any] | None = None,
) -> WrittenFile:
    """Run ``select_sql`` into one Parquet file at the local path ``out_local``; ``fields``
    gives the field ids of every column the query returns (hidden ones included)."""
    os.makedirs(os.path.dirname(out_local) or ".", exist_ok=True)
    row = con.execute(
        f"COPY ({select_sql}) TO {literal(out_local)} "
        f"(FORMAT parquet, FIELD_IDS {field_ids_sql(fields)}, RETURN_STATS true{_options_sql(options)})",
        params or [],
    ).fetchone()
    assert row is not None
    _, count, file_size, footer, column_stats = row[:5]
    return WrittenFile(out_local, int(count), int(file_size), int(footer), _file_stats(column_stats, fields))


def _options_sql(options: tuple[tuple[str, str], ...]) -> str:
    return "".join(f", {k} {literal(v) if not v.isdigit() else v}" for k, v in options)


def _file_stats(
    column_stats: Mapping[str, Mapping[str, str]] | None, fields: tuple[FieldIds, ...]
) -> tuple[FileColumnStats, ...]:
    """RETURN_STATS' per-column statistics as the catalog stores them (hidden columns left out)."""
    keys = _leaf_keys(fields)
    stats = []
    for key, s in sorted((column_stats or {}).items()):
        leaf = keys.get(key)
        if leaf is None or leaf.field_id in HIDDEN_FIELD_IDS.values():
            continue
        nulls, values = int(s.get("null_count", 0)), int(s.get("num_values", 0))
        # DuckDB counts the NULLs of fields under a list per level, so they can exceed the
        # values; its writer then records both counts as unknown, and so do we
        known = nulls <= values
        stats.append(
            FileColumnStats(
                column_id=leaf.field_id,
                column_size_bytes=int(s.get("column_size_bytes", 0)),
                value_count=values - nulls if known else None,
                null_count=nulls if known else None,
                min_value=s.get("min") if leaf.bounds else None,
                max_value=s.get("max") if leaf.bounds else None,
                contains_nan=(s["has_nan"] == "true") if "has_nan" in s and leaf.bounds else None,
            )
        )
    return tuple(sorted(stats, key=lambda s: s.column_id))


@dataclass(frozen=True)
class PartitionFile:
    """One file of a ``write_partitioned``: its partition's values and its rows' begin snapshots."""

    written: WrittenFile  # at a local path
    values: tuple[str | None, ...]  # of the partition columns, in order (None: NULL)
    snapshots: tuple[int, int] | None  # the oldest and newest of its SNAPSHOT_ID column, if written


def write_partitioned(
    con: duckdb.DuckDBPyConnection,
    select_sql: str,
    fields: tuple[FieldIds, ...],
    partition_by: tuple[str, ...],
    out_dir: str,
    options: tuple[tuple[str, str], ...] = (),
    params: list[Any] | dict[str, Any] | None = None,
) -> list[PartitionFile]:
    """Run ``select_sql`` once into one local Parquet file per value of its ``partition_by``
    columns (VARCHAR; not written), under ``out_dir``; ``fields``: the field ids of every
    other column. The statistics are those DuckDB's writer kept (``RETURN_STATS``): no file
    is read back. DuckDB splits no partition into several files, and keeps no row order."""
    found = con.execute(
        f"COPY ({select_sql}) TO {literal(out_dir)} (FORMAT parquet, PARTITION_BY ({', '.join(partition_by)}), "
        f"FIELD_IDS {field_ids_sql(fields)}, RETURN_STATS true, FILENAME_PATTERN 'part-{{uuidv7}}'"
        f"{_options_sql(options)})",
        params or [],
    ).fetchall()
    snapshot_key = quote(SNAPSHOT_ID)
    files = []
    for path, count, file_size, footer, column_stats, keys in found:
        lineage = (column_stats or {}).get(snapshot_key)
        files.append(
            PartitionFile(
                WrittenFile(path, int(count), int(file_size), int(footer), _file_stats(column_stats, fields)),
                tuple(keys[p] for p in partition_by),
                (int(lineage["min"]), int(lineage["max"])) if lineage and "min" in lineage else None,
            )
        )
    return files


def key_match(keys: Sequence[str], values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    """A WHERE clause for the rows whose columns ``keys`` hold ``values`` (None: NULL), and its
    parameters: plain comparisons, which DuckDB checks against a table's row groups' min and
    max, so a scan of rows held in key order reads only the row groups of those keys (one key
    of 12 over 12 M rows: 3 ms, where ``IS NOT DISTINCT FROM`` took 16 ms)."""
    where = " AND ".join(f"{k} IS NULL" if v is None else f"{k} = ${k}" for k, v in zip(keys, values, strict=True))
    return where or "true", {k: v for k, v in zip(keys, values, strict=True) if v is not None}


# Positional delete files as DuckDB 1.5.5 writes them (docs/ducklake-format.md §4.7): the data file's full path,
# the 0-based position, and the snapshot of each deletion.
DELETE_FILE_FIELDS = (
    FieldIds("file_path", 2147483646),
    FieldIds("pos", 2147483645),
    FieldIds(SNAPSHOT_ID, HIDDEN_FIELD_IDS[SNAPSHOT_ID]),
)


def write_delete_file(
    con: duckdb.DuckDBPyConnection, data_file: str, deletes: list[tuple[int, int]], out_local: str
) -> WrittenFile:
    """A delete file for ``data_file`` (its full path) with (position, snapshot) pairs."""
    table = pa.table(
        {
            "file_path": pa.array([data_file] * len(deletes), pa.string()),
            "pos": pa.array([p for p, _ in deletes], pa.int64()),
            SNAPSHOT_ID: pa.array([s for _, s in deletes], pa.int64()),
        }
    )
    con.register("__deletes", table)
    try:
        return write_parquet(
            con,
            f"SELECT file_path, pos, {quote(SNAPSHOT_ID)} FROM __deletes ORDER BY pos",
            DELETE_FILE_FIELDS,
            out_local,
        )
    finally:
        con.unregister("__deletes")


def read_delete_file(local: str, begin_snapshot: int) -> list[tuple[int, int]]:
    """(position, snapshot) pairs of a delete file; a file without the snapshot column holds
    deletions of its own begin snapshot."""
    import pyarrow.parquet as pq

    table = pq.read_table(local)
    snapshots = (
        table.column(SNAPSHOT_ID).to_pylist()
        if SNAPSHOT_ID in table.column_names
        else [begin_snapshot] * table.num_rows
    )
    return list(zip(table.column("pos").to_pylist(), snapshots, strict=False))
