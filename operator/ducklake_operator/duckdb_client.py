"""Open a catalog with DuckDB's ducklake extension (for ``ducklake sql`` and the tests).

Extensions are loaded from the ``duckdb-extension-*`` wheels (the ``duckdb`` extra), else
from DuckDB's own extension directory (``INSTALL``ed by hand); never downloaded behind the
user's back (``autoinstall_known_extensions`` off: a download from a cluster without internet
hangs until it times out, and the wheels pin the extensions to DuckDB 1.5.5). Only what the
catalog needs is loaded, so a SQLite catalog never asks for postgres_scanner.
"""

from __future__ import annotations

import glob
import importlib
import os
from collections.abc import Iterable

import duckdb

from .catalog.connect import CatalogLocation
from .catalog.scrub import describe_failure
from .errors import DuckLakeError

WHEELS = {
    "ducklake": "duckdb_extension_ducklake",
    "postgres_scanner": "duckdb_extension_postgres_scanner",
    "sqlite_scanner": "duckdb_extension_sqlite_scanner",
    "httpfs": "duckdb_extension_httpfs",
}
INSTALL_HINT = "pip install 'ducklake-operator[duckdb]'"


def extension_path(name: str) -> str | None:
    """The extension file in its wheel, named as DuckDB knows the extension (``sqlite_scanner``,
    not its alias ``sqlite``: DuckDB registers a file under the file's name)."""
    try:
        package = importlib.import_module(WHEELS[name])
    except ImportError:
        return None
    found = glob.glob(
        os.path.join(os.path.dirname(package.__file__ or ""), "extensions", "*", f"{name}.duckdb_extension")
    )
    return found[0] if found else None


def extensions_for(location: CatalogLocation, data_path: str | None = None) -> tuple[str, ...]:
    """What attaching this catalog needs: ducklake, the metadata database's scanner, and httpfs
    for an ``s3://`` data path."""
    scanner = "sqlite_scanner" if location.kind == "sqlite" else "postgres_scanner"
    return ("ducklake", scanner) + (("httpfs",) if data_path and data_path.startswith("s3://") else ())


def load_extensions(con: duckdb.DuckDBPyConnection, names: Iterable[str]) -> None:
    for name in names:
        path = extension_path(name)
        try:
            con.execute(f"LOAD '{path}'" if path else f"LOAD {name}")
        except duckdb.Error as exc:
            if path is None:
                raise DuckLakeError(f"DuckDB's {name} extension is not installed: {INSTALL_HINT}") from None
            raise DuckLakeError(
                f"DuckDB's {name} extension could not be loaded from {path} ({describe_failure(str(exc))}): "
                f"{INSTALL_HINT}"
            ) from None


def connect(extensions: Iterable[str] = tuple(WHEELS)) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with ``extensions`` loaded (by default all of them: the tests'
    oracle; ``attach`` without a connection loads only what its catalog needs)."""
    con = duckdb.connect(config={"allow_unsigned_extensions": "true", "autoinstall_known_extensions": "false"})
    try:
        load_extensions(con, extensions)
    except DuckLakeError:
        con.close()
        raise
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
