"""The DuckLake 1.0 catalog tables, defined once.

``TABLE_COLUMNS`` is the DDL of ``ducklake_metadata_manager.cpp::InitializeDuckLake``
(DuckDB 1.5.5): exactly these 28 tables, five primary keys, two NOT NULLs, nothing else.
From it we derive both the SQLAlchemy ``Table`` objects used for every query and the
per-backend DDL text, which reproduces the physical types DuckDB chooses (PostgreSQL:
uuid, timestamptz, boolean; SQLite: VARCHAR for uuid and timestamps, BIGINT for booleans).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

# (table, [(column, logical type, extra)]); logical types: BIGINT VARCHAR TIMESTAMPTZ UUID BOOLEAN
TABLE_COLUMNS: list[tuple[str, list[tuple[str, str, str]]]] = [
    (
        "ducklake_metadata",
        [
            ("key", "VARCHAR", "NOT NULL"),
            ("value", "VARCHAR", "NOT NULL"),
            ("scope", "VARCHAR", ""),
            ("scope_id", "BIGINT", ""),
        ],
    ),
    (
        "ducklake_snapshot",
        [
            ("snapshot_id", "BIGINT", "PRIMARY KEY"),
            ("snapshot_time", "TIMESTAMPTZ", ""),
            ("schema_version", "BIGINT", ""),
            ("next_catalog_id", "BIGINT", ""),
            ("next_file_id", "BIGINT", ""),
        ],
    ),
    (
        "ducklake_snapshot_changes",
        [
            ("snapshot_id", "BIGINT", "PRIMARY KEY"),
            ("changes_made", "VARCHAR", ""),
            ("author", "VARCHAR", ""),
            ("commit_message", "VARCHAR", ""),
            ("commit_extra_info", "VARCHAR", ""),
        ],
    ),
    (
        "ducklake_schema",
        [
            ("schema_id", "BIGINT", "PRIMARY KEY"),
            ("schema_uuid", "UUID", ""),
            ("begin_snapshot", "BIGINT", ""),
            ("end_snapshot", "BIGINT", ""),
            ("schema_name", "VARCHAR", ""),
            ("path", "VARCHAR", ""),
            ("path_is_relative", "BOOLEAN", ""),
        ],
    ),
    (
        "ducklake_table",
        [
            ("table_id", "BIGINT", ""),
            ("table_uuid", "UUID", ""),
            ("begin_snapshot", "BIGINT", ""),
            ("end_snapshot", "BIGINT", ""),
            ("schema_id", "BIGINT", ""),
            ("table_name", "VARCHAR", ""),
            ("path", "VARCHAR", ""),
            ("path_is_relative", "BOOLEAN", ""),
        ],
    ),
    (
        "ducklake_view",
        [
            ("view_id", "BIGINT", ""),
            ("view_uuid", "UUID", ""),
            ("begin_snapshot", "BIGINT", ""),
            ("end_snapshot", "BIGINT", ""),
            ("schema_id", "BIGINT", ""),
            ("view_name", "VARCHAR", ""),
            ("dialect", "VARCHAR", ""),
            ("sql", "VARCHAR", ""),
            ("column_aliases", "VARCHAR", ""),
        ],
    ),
    (
        "ducklake_tag",
        [
            ("object_id", "BIGINT", ""),
            ("begin_snapshot", "BIGINT", ""),
            ("end_snapshot", "BIGINT", ""),
            ("key", "VARCHAR", ""),
            ("value", "VARCHAR", ""),
        ],
    ),
    (
        "ducklake_column_tag",
        [
            ("table_id", "BIGINT", ""),
            ("column_id", "BIGINT", ""),
            ("begin_snapshot", "BIGINT", ""),
            ("end_snapshot", "BIGINT", ""),
            ("key", "VARCHAR", ""),
            ("value", "VARCHAR", ""),
        ],
    ),
    (
        "ducklake_data_file",
        [
            ("data_file_id", "BIGINT", "PRIMARY KEY"),
            ("table_id", "BIGINT", ""),
            ("begin_snapshot", "BIGINT", ""),
            ("end_snapshot", "BIGINT", ""),
            ("file_order", "BIGINT", ""),
            ("path", "VARCHAR", ""),
            ("path_is_relative", "BOOLEAN", ""),
            ("file_format", "VARCHAR", ""),
            ("record_count", "BIGINT", ""),
            ("file_size_bytes", "BIGINT", ""),
            ("footer_size", "BIGINT", ""),
            ("row_id_start", "BIGINT", ""),
            ("partition_id", "BIGINT", ""),
            ("encryption_key", "VARCHAR", ""),
            ("mapping_id", "BIGINT", ""),
            ("partial_max", "BIGINT", ""),
        ],
    ),
    (
        "ducklake_file_column_stats",
        [
            ("data_file_id", "BIGINT", ""),
            ("table_id", "BIGINT", ""),
            ("column_id", "BIGINT", ""),
            ("column_size_bytes", "BIGINT", ""),
            ("value_count", "BIGINT", ""),
            ("null_count", "BIGINT", ""),
            ("min_value", "VARCHAR", ""),
            ("max_value", "VARCHAR", ""),
            ("contains_nan", "BOOLEAN", ""),
            ("extra_stats", "VARCHAR", ""),
        ],
    ),
    (
        "ducklake_file_variant_stats",
        [
            ("data_file_id", "BIGINT", ""),
            ("table_id", "BIGINT", ""),
            ("column_id", "BIGINT", ""),
            ("variant_path", "VARCHAR", ""),
            ("shredded_type", "VARCHAR", ""),
            ("column_size_bytes", "BIGINT", ""),
            ("value_count", "BIGINT", ""),
            ("null_count", "BIGINT", ""),
            ("min_value", "VARCHAR", ""),
            ("max_value", "VARCHAR", ""),
            ("contains_nan", "BOOLEAN", ""),
            ("extra_stats", "VARCHAR", ""),
        ],
    ),
    (
        "ducklake_delete_file",
        [
            ("delete_file_id", "BIGINT", "PRIMARY KEY"),
            ("table_id", "BIGINT", ""),
            ("begin_snapshot", "BIGINT", ""),
            ("end_snapshot", "BIGINT", ""),
            ("data_file_id", "BIGINT", ""),
            ("path", "VARCHAR", ""),
            ("path_is_relative", "BOOLEAN", ""),
            ("format", "VARCHAR", ""),
            ("delete_count", "BIGINT", ""),
            ("file_size_bytes", "BIGINT", ""),
            ("footer_size", "BIGINT", ""),
            ("encryption_key", "VARCHAR", ""),
            ("partial_max", "BIGINT", ""),
        ],
    ),
    (
        "ducklake_column",
        [
            ("column_id", "BIGINT", ""),
            ("begin_snapshot", "BIGINT", ""),
            ("end_snapshot", "BIGINT", ""),
            ("table_id", "BIGINT", ""),
            ("column_order", "BIGINT", ""),
            ("column_name", "VARCHAR", ""),
            ("column_type", "VARCHAR", ""),
            ("initial_default", "VARCHAR", ""),
            ("default_value", "VARCHAR", ""),
            ("nulls_allowed", "BOOLEAN", ""),
            ("parent_column", "BIGINT", ""),
            ("default_value_type", "VARCHAR", ""),
            ("default_value_dialect", "VARCHAR", ""),
        ],
    ),
    (
        "ducklake_table_stats",
        [
            ("table_id", "BIGINT", ""),
            ("record_count", "BIGINT", ""),
            ("next_row_id", "BIGINT", ""),
            ("file_size_bytes", "BIGINT", ""),
        ],
    ),
    (
        "ducklake_table_column_stats",
        [
            ("table_id", "BIGINT", ""),
            ("column_id", "BIGINT", ""),
            ("contains_null", "BOOLEAN", ""),
            ("contains_nan", "BOOLEAN", ""),
            ("min_value", "VARCHAR", ""),
            ("max_value", "VARCHAR", ""),
            ("extra_stats", "VARCHAR", ""),
        ],
    ),
    (
        "ducklake_partition_info",
        [
            ("partition_id", "BIGINT", ""),
            ("table_id", "BIGINT", ""),
            ("begin_snapshot", "BIGINT", ""),
            ("end_snapshot", "BIGINT", ""),
        ],
    ),
    (
        "ducklake_partition_column",
        [
            ("partition_id", "BIGINT", ""),
            ("table_id", "BIGINT", ""),
            ("partition_key_index", "BIGINT", ""),
            ("column_id", "BIGINT", ""),
            ("transform", "VARCHAR", ""),
        ],
    ),
    (
        "ducklake_file_partition_value",
        [
            ("data_file_id", "BIGINT", ""),
            ("table_id", "BIGINT", ""),
            ("partition_key_index", "BIGINT", ""),
            ("partition_value", "VARCHAR", ""),
        ],
    ),
    (
        "ducklake_files_scheduled_for_deletion",
        [
            ("data_file_id", "BIGINT", ""),
            ("path", "VARCHAR", ""),
            ("path_is_relative", "BOOLEAN", ""),
            ("schedule_start", "TIMESTAMPTZ", ""),
        ],
    ),
    (
        "ducklake_inlined_data_tables",
        [("table_id", "BIGINT", ""), ("table_name", "VARCHAR", ""), ("schema_version", "BIGINT", "")],
    ),
    ("ducklake_column_mapping", [("mapping_id", "BIGINT", ""), ("table_id", "BIGINT", ""), ("type", "VARCHAR", "")]),
    (
        "ducklake_name_mapping",
        [
            ("mapping_id", "BIGINT", ""),
            ("column_id", "BIGINT", ""),
            ("source_name", "VARCHAR", ""),
            ("target_field_id", "BIGINT", ""),
            ("parent_column", "BIGINT", ""),
            ("is_partition", "BOOLEAN", ""),
        ],
    ),
    (
        "ducklake_schema_versions",
        [("begin_snapshot", "BIGINT", ""), ("schema_version", "BIGINT", ""), ("table_id", "BIGINT", "")],
    ),
    (
        "ducklake_macro",
        [
            ("schema_id", "BIGINT", ""),
            ("macro_id", "BIGINT", ""),
            ("macro_name", "VARCHAR", ""),
            ("begin_snapshot", "BIGINT", ""),
            ("end_snapshot", "BIGINT", ""),
        ],
    ),
    (
        "ducklake_macro_impl",
        [
            ("macro_id", "BIGINT", ""),
            ("impl_id", "BIGINT", ""),
            ("dialect", "VARCHAR", ""),
            ("sql", "VARCHAR", ""),
            ("type", "VARCHAR", ""),
        ],
    ),
    (
        "ducklake_macro_parameters",
        [
            ("macro_id", "BIGINT", ""),
            ("impl_id", "BIGINT", ""),
            ("column_id", "BIGINT", ""),
            ("parameter_name", "VARCHAR", ""),
            ("parameter_type", "VARCHAR", ""),
            ("default_value", "VARCHAR", ""),
            ("default_value_type", "VARCHAR", ""),
        ],
    ),
    (
        "ducklake_sort_info",
        [
            ("sort_id", "BIGINT", ""),
            ("table_id", "BIGINT", ""),
            ("begin_snapshot", "BIGINT", ""),
            ("end_snapshot", "BIGINT", ""),
        ],
    ),
    (
        "ducklake_sort_expression",
        [
            ("sort_id", "BIGINT", ""),
            ("table_id", "BIGINT", ""),
            ("sort_key_index", "BIGINT", ""),
            ("expression", "VARCHAR", ""),
            ("dialect", "VARCHAR", ""),
            ("sort_direction", "VARCHAR", ""),
            ("null_order", "VARCHAR", ""),
        ],
    ),
]

# Physical type per backend for each logical type (observed on DuckDB 1.5.5 catalogs).
_PHYSICAL = {
    "postgresql": {
        "BIGINT": "BIGINT",
        "VARCHAR": "VARCHAR",
        "TIMESTAMPTZ": "TIMESTAMP WITH TIME ZONE",
        "UUID": "UUID",
        "BOOLEAN": "BOOLEAN",
    },
    "sqlite": {
        "BIGINT": "BIGINT",
        "VARCHAR": "VARCHAR",
        "TIMESTAMPTZ": "VARCHAR",
        "UUID": "VARCHAR",
        "BOOLEAN": "BIGINT",
    },
}

# SQLAlchemy types used to bind and fetch. UUIDs and times travel as text on both backends.
_SA_TYPES = {
    "BIGINT": sa.BigInteger,
    "VARCHAR": sa.String,
    "TIMESTAMPTZ": sa.String,
    "UUID": sa.String,
    "BOOLEAN": sa.Boolean,
}

metadata = sa.MetaData()


def _build_table(name: str, columns: list[tuple[str, str, str]]) -> sa.Table:
    return sa.Table(
        name,
        metadata,
        *[
            sa.Column(
                col,
                _SA_TYPES[logical](),
                primary_key="PRIMARY KEY" in extra,
                nullable="NOT NULL" not in extra,
                autoincrement=False,
                info={"logical": logical},
            )
            for col, logical, extra in columns
        ],
    )


# The catalog database's tables as SQLAlchemy sees them, by name (DuckLake's; the operator's
# own ledger is ``ingested.LEDGER``).
CATALOG_TABLES: dict[str, sa.Table] = {name: _build_table(name, cols) for name, cols in TABLE_COLUMNS}


def catalog_now(dialect: str) -> Any:
    """A timestamp column value as DuckDB writes it: the catalog's NOW() on PostgreSQL, and
    DuckDB's text form on SQLite (where timestamps are stored as VARCHAR)."""
    if dialect == "postgresql":
        return sa.func.now()
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f+00")


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def qualified(name: str, schema: str | None) -> str:
    return f"{_q(schema)}.{_q(name)}" if schema else _q(name)


def create_catalog_ddl(dialect: str, schema: str | None) -> list[str]:
    """CREATE TABLE statements for a new catalog on ``dialect`` ('postgresql' or 'sqlite')."""
    physical = _PHYSICAL[dialect]
    out = []
    for name, columns in TABLE_COLUMNS:
        cols = ", ".join(f"{_q(c)} {physical[t]}{(' ' + e) if e else ''}" for c, t, e in columns)
        out.append(f"CREATE TABLE {qualified(name, schema)}({cols})")
    return out


# ------------------------------------------------------------------ inlined data tables

INLINED_SYSTEM_COLUMNS = ("row_id", "begin_snapshot", "end_snapshot")
# Names a table may not use while inlining is on (DuckLakeUtil::IsInlinedSystemColumn).
RESERVED_INLINED_NAMES = frozenset(
    INLINED_SYSTEM_COLUMNS + ("_ducklake_internal_snapshot_id", "_ducklake_internal_row_id")
)

# Column type of an inlined-data table per backend, by DuckLake type name
# (postgres_metadata_manager.cpp / sqlite_metadata_manager.cpp, observed on 1.5.5).
_INLINED_PG = {
    "boolean": "BOOLEAN",
    "int8": "SMALLINT",
    "int16": "SMALLINT",
    "int32": "INTEGER",
    "int64": "BIGINT",
    "uint8": "INTEGER",
    "uint16": "INTEGER",
    "uint32": "BIGINT",
    "float32": "REAL",
    "float64": "DOUBLE PRECISION",
    "varchar": "BYTEA",
    "blob": "BYTEA",
    "json": "BYTEA",
    "uuid": "UUID",
    "time": "TIME",
    "timetz": "TIME WITH TIME ZONE",
    "interval": "INTERVAL",
}
_INLINED_SQLITE = {
    "boolean": "BIGINT",
    "int8": "BIGINT",
    "int16": "BIGINT",
    "int32": "BIGINT",
    "int64": "BIGINT",
    "uint8": "BIGINT",
    "uint16": "BIGINT",
    "uint32": "BIGINT",
    "blob": "BLOB",
}
# Types DuckDB never inlines on these backends: a table holding one gets no inlined table.
NOT_INLINABLE = frozenset({"variant", "geometry"})
PG_MAX_IDENTIFIER_BYTES = 63


def inlined_column_type(dialect: str, type_name: str) -> str:
    """Physical type of an inlined-data column for a ``ducklake_column.column_type`` value."""
    if dialect == "postgresql":
        if type_name.startswith("decimal("):
            return type_name.upper()
        return _INLINED_PG.get(type_name, "VARCHAR")
    return _INLINED_SQLITE.get(type_name, "VARCHAR")


def inlined_table_name(table_id: int, schema_version: int) -> str:
    return f"ducklake_inlined_data_{table_id}_{schema_version}"


def inlined_delete_table_name(table_id: int) -> str:
    return f"ducklake_inlined_delete_{table_id}"


def create_inlined_table_ddl(dialect: str, schema: str | None, name: str, columns: list[tuple[str, str]]) -> str:
    """DDL of an inlined-data table; ``columns`` are (name, catalog type name) of the
    table's top-level columns."""
    cols = [f"{c} BIGINT" for c in INLINED_SYSTEM_COLUMNS]
    cols += [f"{_q(col)} {inlined_column_type(dialect, t)}" for col, t in columns]
    return f"CREATE TABLE IF NOT EXISTS {qualified(name, schema)}({', '.join(cols)})"


def can_inline(dialect: str, columns: list[tuple[str, str]], all_type_names: list[str]) -> bool:
    """Whether DuckDB would keep an inlined-data table for a table with these columns."""
    if any(name in NOT_INLINABLE for name in all_type_names):
        return False
    if any(col in RESERVED_INLINED_NAMES for col, _ in columns):
        return False
    if dialect == "postgresql" and any(len(col.encode()) > PG_MAX_IDENTIFIER_BYTES for col, _ in columns):
        return False
    return True


Row = sa.Row[*tuple[Any, ...]]  # a row of any columns
Select = sa.Select[*tuple[Any, ...]]
OnlyTables = Callable[[sa.Table, Select], Select]  # restricts a query to the tables asked for


__all__ = [
    "CATALOG_TABLES",
    "TABLE_COLUMNS",
    "create_catalog_ddl",
    "create_inlined_table_ddl",
    "inlined_table_name",
    "inlined_delete_table_name",
    "can_inline",
]
