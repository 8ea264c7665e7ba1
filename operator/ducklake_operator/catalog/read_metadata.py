"""The catalog's ``ducklake_metadata`` rows: its format version, its options (global,
per schema, per table) and its data path (the stored one, or the one it is attached with
when the lake moved)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Any

import sqlalchemy as sa

from ..errors import DuckLakeError, UnsupportedCatalog
from ..model.state import (
    CatalogState,
)
from .tables import CATALOG_TABLES

FORMAT_VERSION = "1.0"


DATA_PATH_OPTION = "ducklake_data_path"  # engine execution option: the data path attached with


Metadata = list[tuple[str, str, str | None, int | None]]  # ducklake_metadata rows: key, value, scope, scope id


def load_metadata(conn: sa.Connection) -> Metadata:
    m = CATALOG_TABLES["ducklake_metadata"]
    return [tuple(r) for r in conn.execute(sa.select(m.c.key, m.c.value, m.c.scope, m.c.scope_id))]


def table_ids_from(conn: sa.Connection, first_id: int, after_snapshot: int) -> set[int]:
    """Ids of the tables given ``first_id`` or a later catalog id (live or not): the tables
    created since the snapshot whose ``next_catalog_id`` that was; and of those with a row
    begun after ``after_snapshot`` (DuckDB renames a table as a new row, its id kept, that
    its snapshot's changes call ``created_table``)."""
    tb = CATALOG_TABLES["ducklake_table"]
    query = sa.select(tb.c.table_id).where(sa.or_(tb.c.table_id >= first_id, tb.c.begin_snapshot > after_snapshot))
    return set(conn.execute(query).scalars())


def load_freshness(conn: sa.Connection) -> tuple[int, Metadata]:
    """The latest snapshot id and the metadata rows, in one round trip: together they say
    whether a cached state is still current (options change without a snapshot)."""
    m, s = CATALOG_TABLES["ducklake_metadata"], CATALOG_TABLES["ducklake_snapshot"]
    latest = sa.select(sa.func.max(s.c.snapshot_id)).scalar_subquery()
    rows = conn.execute(
        sa.select(latest, m.c.key, m.c.value, m.c.scope, m.c.scope_id).order_by(
            m.c.scope, m.c.scope_id, m.c.key, m.c.value
        )
    ).all()
    if not rows:
        raise DuckLakeError("the catalog has no ducklake_metadata rows")
    return int(rows[0][0]), [tuple(r[1:]) for r in rows]


def options_by_scope(metadata: Metadata) -> tuple[dict[str, str], dict[tuple[str, int], dict[str, str]]]:
    """Global options, and those of each (scope, scope id)."""
    global_opts = {k: v for k, v, scope, _ in metadata if scope is None}
    scoped: dict[tuple[str, int], dict[str, str]] = defaultdict(dict)
    for k, v, scope, scope_id in metadata:
        if scope is not None and scope_id is not None:
            scoped[(scope, scope_id)][k] = v
    return global_opts, scoped


def with_options(state: CatalogState, metadata: Metadata) -> CatalogState:
    """``state`` with every option (global, schema, table) as ``metadata`` has it."""
    global_opts, scoped = options_by_scope(metadata)

    def scoped_options(kind: str, obj: Any) -> Any:
        options = scoped.get((kind, obj.schema_id if kind == "schema" else obj.table_id), {})
        return obj if obj.options == options else replace(obj, options=options)  # most keep theirs

    return replace(
        state,
        version=check_format_version(metadata, "the catalog"),
        options=global_opts,
        schemas={n: scoped_options("schema", s) for n, s in state.schemas.items()},
        tables={k: scoped_options("table", t) for k, t in state.tables.items()},
    )


def check_format_version(metadata: Metadata, where: str) -> str:
    version = next((v for k, v, scope, _ in metadata if k == "version" and scope is None), None)
    if version != FORMAT_VERSION:
        raise UnsupportedCatalog(
            f"{where} is a DuckLake catalog at format version {version!r}; this operator reads and writes "
            f"version {FORMAT_VERSION} only. "
            + (
                "Migrate it first by attaching it once from DuckDB 1.5.5 with ATTACH '...' (AUTOMATIC_MIGRATION TRUE)."
                if version and version < FORMAT_VERSION
                else "It was written by a newer DuckLake; upgrade the operator."
            )
        )
    return version


def metadata_schema(conn: sa.Connection) -> str | None:
    """The PostgreSQL schema holding the catalog (dynamic tables are not covered by the
    engine's schema translation, so they are qualified explicitly)."""
    return (conn.get_execution_options().get("schema_translate_map") or {}).get(None)


def with_slash(path: str) -> str:
    return path if path.endswith("/") else path + "/"


def stored_data_path(conn: sa.Connection) -> str:
    """The data path the catalog stores, ending in '/'."""
    return with_slash(next(v for k, v, s, _ in load_metadata(conn) if k == "data_path" and s is None))


def attached_data_path(conn: sa.Connection) -> str | None:
    """The data path the catalog is attached with when its lake moved (``Catalog(data_path=...)``,
    DuckDB's OVERRIDE_DATA_PATH); DuckDB never rewrites the stored one."""
    return conn.get_execution_options().get(DATA_PATH_OPTION)


def data_path(conn: sa.Connection) -> str:
    """Where the lake's files are: the data path attached with, else the stored one."""
    return attached_data_path(conn) or stored_data_path(conn)
