"""Initialise a catalog exactly as DuckDB 1.5.5's ``InitializeDuckLake`` does, or adopt one.

One transaction: the 28 tables, the metadata rows, snapshot 0 with its
``created_schema:"main"`` change, and the ``main`` schema. Global options are then
written as ``set_option`` writes them.
"""

from __future__ import annotations

from collections.abc import Mapping

import sqlalchemy as sa
from uuid6 import uuid7

from .. import __version__
from ..errors import SpecError
from ..model.options import normalize_option
from .read_metadata import check_format_version, load_metadata
from .tables import CATALOG_TABLES, create_catalog_ddl

CREATED_BY = f"ducklake-operator {__version__}"


def catalog_exists(conn: sa.Connection, pg_schema: str | None) -> bool:
    return sa.inspect(conn).has_table("ducklake_metadata", schema=pg_schema)


def normalize_data_path(data_path: str) -> str:
    if not data_path:
        raise SpecError("dataPath must not be empty")
    return data_path if data_path.endswith("/") else data_path + "/"


def initialize_catalog(
    conn: sa.Connection,
    *,
    dialect: str,
    pg_schema: str | None,
    data_path: str,
    options: Mapping[str, object] | None = None,
) -> None:
    """Create a new catalog in the current transaction (the caller commits)."""
    settings = [normalize_option(k, v) for k, v in (options or {}).items()]
    if pg_schema:
        conn.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{pg_schema.replace(chr(34), chr(34) * 2)}"')
    for ddl in create_catalog_ddl(dialect, pg_schema):
        conn.exec_driver_sql(ddl)
    now: object = (
        sa.func.now() if dialect == "postgresql" else sa.text("strftime('%Y-%m-%d %H:%M:%f', 'now') || '000+00'")
    )
    conn.execute(
        CATALOG_TABLES["ducklake_snapshot"]
        .insert()
        .values(snapshot_id=0, snapshot_time=now, schema_version=0, next_catalog_id=1, next_file_id=0)
    )
    conn.execute(
        CATALOG_TABLES["ducklake_snapshot_changes"].insert().values(snapshot_id=0, changes_made='created_schema:"main"')
    )
    conn.execute(
        CATALOG_TABLES["ducklake_metadata"]
        .insert()
        .values(
            [
                dict(key="version", value="1.0", scope=None, scope_id=None),
                dict(key="created_by", value=CREATED_BY, scope=None, scope_id=None),
                dict(key="data_path", value=normalize_data_path(data_path), scope=None, scope_id=None),
                dict(key="encrypted", value="false", scope=None, scope_id=None),
            ]
            + [dict(key=k, value=v, scope=None, scope_id=None) for k, v in settings]
        )
    )
    conn.execute(
        CATALOG_TABLES["ducklake_schema"]
        .insert()
        .values(
            schema_id=0,
            schema_uuid=str(uuid7()),
            begin_snapshot=0,
            end_snapshot=None,
            schema_name="main",
            path="main/",
            path_is_relative=True,
        )
    )


def adopt_catalog(conn: sa.Connection, where: str, expected_data_path: str | None = None) -> str:
    """Check an existing catalog's format version (and data path); return the version."""
    metadata = load_metadata(conn)
    version = check_format_version(metadata, where)
    if expected_data_path is not None:
        stored = next((v for k, v, s, _ in metadata if k == "data_path" and s is None), None)
        if stored is not None and stored != normalize_data_path(expected_data_path):
            raise SpecError(
                f"{where} stores data_path {stored!r} but the manifest says {normalize_data_path(expected_data_path)!r}; "
                "DuckDB clients use the stored path, so make spec.dataPath match it"
            )
    return version
