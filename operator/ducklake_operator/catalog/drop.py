"""Drop a whole catalog: every ``ducklake_*`` table (inlined data tables too) in one
transaction that first takes every table exclusively, so no client commits in between
and a client still attached makes it fail before anything is deleted, not queue behind it.
Every file the catalog refers to is deleted (by the caller's ``delete_file``) while the
tables are held (``reconcile.destroy_catalog``)."""

from __future__ import annotations

import os
from collections.abc import Callable

import sqlalchemy as sa

from ..errors import CatalogUnavailable
from .connect import CatalogLocation, describe_db_error
from .read_files import load_lake_paths, referenced_files
from .tables import qualified

LOCK_TIMEOUT = "10s"


def drop_catalog(
    engine: sa.Engine, location: CatalogLocation, delete_file: Callable[[str], bool]
) -> tuple[int, list[str]]:
    """Hold the catalog's tables, delete every file the catalog refers to with ``delete_file``
    (False: it was already gone), drop the tables. Returns (files deleted, tables dropped). A
    SQLite file left with no table is removed as well. ``CatalogUnavailable`` if the tables
    cannot be held within LOCK_TIMEOUT (nothing deleted)."""
    try:
        return _drop(engine, location, delete_file)
    except sa.exc.OperationalError as exc:
        raise CatalogUnavailable(
            f"could not take the catalog's tables ({describe_db_error(exc)}): clients attached to "
            "the lake still hold them; nothing was deleted"
        ) from None


def _drop(engine: sa.Engine, location: CatalogLocation, delete_file: Callable[[str], bool]) -> tuple[int, list[str]]:
    schema = location.schema if location.kind == "postgres" else None
    with engine.connect().execution_options(ducklake_write=True) as conn, conn.begin():  # SQLite: BEGIN IMMEDIATE
        names = sorted(n for n in sa.inspect(conn).get_table_names(schema=schema) if n.startswith("ducklake_"))
        if location.kind == "postgres" and names:
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
            conn.exec_driver_sql(
                "LOCK TABLE " + ", ".join(qualified(n, schema) for n in names) + " IN ACCESS EXCLUSIVE MODE"
            )
        lake = load_lake_paths(conn)
        deleted = sum(delete_file(path) for path in sorted(referenced_files(conn, lake)))
        for name in names:
            conn.exec_driver_sql(f"DROP TABLE {qualified(name, schema)}")
        others = [n for n in sa.inspect(conn).get_table_names(schema=schema) if n not in names]
    engine.dispose()
    if location.kind == "sqlite" and location.path and not others and os.path.exists(location.path):
        os.remove(location.path)
    return deleted, names
