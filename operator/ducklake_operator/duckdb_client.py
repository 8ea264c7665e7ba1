"""Open a catalog with DuckDB's ducklake extension (for ``ducklake sql`` and the tests).

The connection is a ``duckdb_session``'s (its settings, and its extensions loaded from the
``duckdb-extension-*`` wheels). Only what the catalog needs is loaded, so a SQLite catalog
never asks for postgres_scanner.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import duckdb

from .catalog.connect import CatalogLocation
from .catalog.scrub import describe_failure
from .duckdb_session import WHEELS, open_session
from .duckdb_session import extension_path as extension_path  # the tests' and the jobs'
from .errors import DuckLakeError


def extensions_for(location: CatalogLocation, data_path: str | None = None) -> tuple[str, ...]:
    """What attaching this catalog needs: ducklake, the metadata database's scanner, and httpfs
    for an ``s3://`` data path."""
    scanner = "sqlite_scanner" if location.kind == "sqlite" else "postgres_scanner"
    return ("ducklake", scanner) + (("httpfs",) if data_path and data_path.startswith("s3://") else ())


def connect(extensions: Iterable[str] = tuple(WHEELS)) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with ``extensions`` loaded (by default all of them: the tests'
    oracle; ``attach`` without a connection loads only what its catalog needs)."""
    return open_session(extensions=extensions)


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
    """A DuckDB connection with the catalog attached as ``alias`` (a new one, with only the
    extensions the catalog needs, unless ``con`` is given). A failure to attach says DuckDB's
    reason in one clause: DuckDB's own message carries the whole connection string, password
    included."""
    con = con or connect(extensions_for(location, data_path))
    opts = []
    if data_path:
        opts.append(f"DATA_PATH '{data_path}'")
    if location.schema:
        opts.append(f"METADATA_SCHEMA '{location.schema}'")
    suffix = f" ({', '.join(opts)})" if opts else ""
    target = location.duckdb_attach_target().replace("'", "''")
    try:
        con.execute(f"ATTACH '{target}' AS {alias}{suffix}")
    except duckdb.Error as exc:
        raise DuckLakeError(
            f"DuckDB cannot attach the catalog at {location.describe()}: "
            f"{describe_failure(str(exc), [location.password])}"
        ) from None
    return con
