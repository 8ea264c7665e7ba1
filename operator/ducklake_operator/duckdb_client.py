"""Open a catalog with DuckDB's ducklake extension (for ``ducklake sql`` and the tests).

The extension is loaded from the ``duckdb-extension-*`` wheels when they are installed
(the ``duckdb`` extra; ``INSTALL`` needs the internet, which CI and many clusters lack),
with ``allow_unsigned_extensions``; otherwise DuckDB's own ``LOAD ducklake`` is tried.
"""

from __future__ import annotations

import glob
import importlib
import os

import duckdb

from .catalog.connect import CatalogLocation

WHEELS = {"ducklake": "duckdb_extension_ducklake", "postgres_scanner": "duckdb_extension_postgres_scanner",
          "sqlite_scanner": "duckdb_extension_sqlite_scanner"}


def extension_path(name: str) -> str | None:
    try:
        package = importlib.import_module(WHEELS[name])
    except ImportError:
        return None
    found = glob.glob(os.path.join(os.path.dirname(package.__file__ or ""), "extensions", "*", f"{name}.duckdb_extension"))
    return found[0] if found else None


def connect() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    for name in WHEELS:
        path = extension_path(name)
        con.execute(f"LOAD '{path}'" if path else f"LOAD {name}")
    return con


def attach(location: CatalogLocation, alias: str = "lk", con: duckdb.DuckDBPyConnection | None = None,
           data_path: str | None = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the catalog attached as ``alias``."""
    con = con or connect()
    opts = []
    if data_path:
        opts.append(f"DATA_PATH '{data_path}'")
    if location.schema:
        opts.append(f"METADATA_SCHEMA '{location.schema}'")
    suffix = f" ({', '.join(opts)})" if opts else ""
    target = location.duckdb_attach_target().replace("'", "''")
    con.execute(f"ATTACH '{target}' AS {alias}{suffix}")
    return con
