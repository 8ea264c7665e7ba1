"""DuckDB 1.5.5 with the ducklake extension loaded from its PyPI wheel: the test oracle.

``INSTALL ducklake`` cannot download here or in CI, so the extension files are loaded by
path from the ``duckdb-extension-*`` wheels (hence ``allow_unsigned_extensions``).
"""

from __future__ import annotations

import glob
import importlib
import os

import duckdb

from ducklake_operator.catalog import CatalogLocation

EXTENSIONS = {"ducklake": "duckdb_extension_ducklake", "postgres_scanner": "duckdb_extension_postgres_scanner",
              "sqlite_scanner": "duckdb_extension_sqlite_scanner"}


def extension_path(name: str) -> str:
    package = importlib.import_module(EXTENSIONS[name])
    found = glob.glob(os.path.join(os.path.dirname(package.__file__), "extensions", "*", f"{name}.duckdb_extension"))
    if not found:
        raise RuntimeError(f"{name}.duckdb_extension not found in the {EXTENSIONS[name]} wheel")
    return found[0]


def connect() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    for name in EXTENSIONS:
        con.execute(f"LOAD '{extension_path(name)}'")
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
    con.execute(f"ATTACH '{location.duckdb_attach_target()}' AS {alias}{suffix}")
    return con


def describe(con: duckdb.DuckDBPyConnection, qualified: str) -> list[tuple]:
    return [tuple(r[:3]) for r in con.execute(f"DESCRIBE {qualified}").fetchall()]
