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

WHEELS = {
    "ducklake": "duckdb_extension_ducklake",
    "postgres_scanner": "duckdb_extension_postgres_scanner",
    "sqlite_scanner": "duckdb_extension_sqlite_scanner",
    "httpfs": "duckdb_extension_httpfs",
}
OPTIONAL = frozenset({"httpfs"})  # only for s3:// data paths; loaded when its wheel is installed


def extension_path(name: str) -> str | None:
    try:
        package = importlib.import_module(WHEELS[name])
    except ImportError:
        return None
    found = glob.glob(
        os.path.join(os.path.dirname(package.__file__ or ""), "extensions", "*", f"{name}.duckdb_extension")
    )
    return found[0] if found else None


def connect() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    for name in WHEELS:
        path = extension_path(name)
        if path or name not in OPTIONAL:
            con.execute(f"LOAD '{path}'" if path else f"LOAD {name}")
    return con


def configure_s3(
    con: duckdb.DuckDBPyConnection,
    *,
    key_id: str | None = None,
    secret: str | None = None,
    region: str | None = None,
    endpoint: str | None = None,
    url_style: str | None = None,
) -> None:
    """A DuckDB S3 secret (httpfs); ``endpoint`` is a URL (http:// means no TLS), as in
    AWS_ENDPOINT_URL. Unset values come from the standard AWS environment variables."""
    key_id = key_id or os.environ.get("AWS_ACCESS_KEY_ID")
    secret = secret or os.environ.get("AWS_SECRET_ACCESS_KEY")
    region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    endpoint = endpoint or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    parts = ["TYPE s3"]
    for key, value in (("KEY_ID", key_id), ("SECRET", secret), ("REGION", region)):
        if value:
            parts.append(f"{key} '{value.replace(chr(39), chr(39) * 2)}'")
    if endpoint:
        host = endpoint.split("://", 1)[-1].rstrip("/")
        parts += [
            f"ENDPOINT '{host}'",
            f"USE_SSL {'false' if endpoint.startswith('http://') else 'true'}",
            f"URL_STYLE '{url_style or 'path'}'",
        ]
    elif url_style:
        parts.append(f"URL_STYLE '{url_style}'")
    con.execute(f"CREATE OR REPLACE SECRET ducklake_s3 ({', '.join(parts)})")


def attach(
    location: CatalogLocation,
    alias: str = "lk",
    con: duckdb.DuckDBPyConnection | None = None,
    data_path: str | None = None,
) -> duckdb.DuckDBPyConnection:
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
