"""Drop a whole catalog: every ``ducklake_*`` table (inlined data tables too) in one
transaction that first takes every table exclusively, so no client commits in between
and a client still attached makes it fail before anything is deleted, not queue behind it.
The caller deletes the files while the tables are held (``reconcile.destroy_catalog``)."""

from __future__ import annotations

import os
from collections.abc import Callable

import sqlalchemy as sa

from .connect import CatalogLocation
from .tables import qualified

LOCK_TIMEOUT = "10s"


def drop_catalog(
    engine: sa.Engine, location: CatalogLocation, before_drop: Callable[[sa.Connection], int]
) -> tuple[int, list[str]]:
    """Hold the catalog's tables, run ``before_drop`` (it deletes the files; returns how many),
    drop the tables. Returns (``before_drop``'s result, the tables dropped). A SQLite file left
    with no table is removed as well. Raises ``sa.exc.OperationalError`` if the tables cannot
    be held within LOCK_TIMEOUT."""
    schema = location.schema if location.kind == "postgres" else None
    with engine.connect().execution_options(ducklake_write=True) as conn, conn.begin():  # SQLite: BEGIN IMMEDIATE
        names = sorted(n for n in sa.inspect(conn).get_table_names(schema=schema) if n.startswith("ducklake_"))
        if location.kind == "postgres" and names:
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
            conn.exec_driver_sql(
                "LOCK TABLE " + ", ".join(qualified(n, schema) for n in names) + " IN ACCESS EXCLUSIVE MODE"
            )
        result = before_drop(conn)
        for name in names:
            conn.exec_driver_sql(f"DROP TABLE {qualified(name, schema)}")
        others = [n for n in sa.inspect(conn).get_table_names(schema=schema) if n not in names]
    engine.dispose()
    if location.kind == "sqlite" and location.path and not others and os.path.exists(location.path):
        os.remove(location.path)
    return result, names
