"""Every DuckDB connection the product opens: ``open_session`` and its settings, in one place.

Each is an in-memory database with the time zone UTC (TIMESTAMPTZ values are stored, and
their statistics written, normalised to UTC), no extension downloaded behind the user's back
(``autoinstall_known_extensions`` off: a download from a cluster without internet hangs until
it times out, and the ``duckdb-extension-*`` wheels pin the extensions to DuckDB 1.5.5, so
they load as unsigned files from the wheels), the threads and memory its caller may use
(a Spark task's share of its executor; DuckDB's defaults otherwise), and a spill directory in
TMPDIR: DuckDB's own default, ``.tmp`` in the working directory, is the user's directory under
``ducklake run-job`` and read-only in the operator's pod.
"""

from __future__ import annotations

import glob
import importlib
import os
import secrets
import tempfile
from collections.abc import Iterable

import duckdb

from .errors import DuckLakeError

WHEELS = {
    "ducklake": "duckdb_extension_ducklake",
    "postgres_scanner": "duckdb_extension_postgres_scanner",
    "sqlite_scanner": "duckdb_extension_sqlite_scanner",
    "httpfs": "duckdb_extension_httpfs",
}
INSTALL_HINT = "pip install 'ducklake-operator[duckdb]'"


def open_session(
    *,
    extensions: Iterable[str] = (),
    unsigned_extensions: bool = False,
    external_access: bool = True,
    threads: int | None = None,
    memory_limit_mb: int | None = None,
    spill: str | None = None,
) -> duckdb.DuckDBPyConnection:
    """A new in-memory DuckDB. ``extensions``: loaded now, from their wheels;
    ``unsigned_extensions``: the caller may load extension files itself later;
    ``external_access`` False: no file, network or extension access at all (evaluating a
    manifest's SQL expression); ``threads``, ``memory_limit_mb``: None is DuckDB's default (every
    core, 80% of the memory it sees); ``spill``: where it spills beyond its memory limit (None: a
    directory of its own in TMPDIR, ``own_spill``)."""
    extensions = tuple(extensions)
    config: dict[str, str | bool | int | float | list[str]] = {"autoinstall_known_extensions": "false"}
    if extensions or unsigned_extensions:
        config["allow_unsigned_extensions"] = "true"
    if not external_access:
        config["enable_external_access"] = "false"
    config.update(resource_config(threads, memory_limit_mb))
    config["temp_directory"] = spill or own_spill()
    con = duckdb.connect(":memory:", config=config)
    try:
        con.execute("SET TimeZone = 'UTC'")
        load_extensions(con, extensions)
    except BaseException:
        con.close()
        raise
    return con


def own_spill() -> str:
    """A directory no other connection uses, in TMPDIR; DuckDB makes it when it first spills
    and removes it, with what it spilled, when the connection closes (its parent must be)."""
    return os.path.join(tempfile.gettempdir(), f"ducklake-duckdb-{secrets.token_hex(8)}.tmp")


def resource_config(
    threads: int | None, memory_limit_mb: int | None
) -> dict[str, str | bool | int | float | list[str]]:
    """DuckDB's settings for the threads and memory it may use (None: DuckDB's default)."""
    config: dict[str, str | bool | int | float | list[str]] = {}
    if threads:
        config["threads"] = threads
    if memory_limit_mb:
        config["memory_limit"] = f"{memory_limit_mb}MB"
    return config


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


def load_extensions(con: duckdb.DuckDBPyConnection, names: Iterable[str]) -> None:
    """Load each extension from its wheel, else from DuckDB's own extension directory
    (``INSTALL``ed by hand)."""
    for name in names:
        path = extension_path(name)
        try:
            con.execute(f"LOAD '{path}'" if path else f"LOAD {name}")
        except duckdb.Error as exc:
            if path is None:
                raise DuckLakeError(f"DuckDB's {name} extension is not installed: {INSTALL_HINT}") from None
            from .catalog.scrub import describe_failure  # here: the catalog package opens sessions too

            raise DuckLakeError(
                f"DuckDB's {name} extension could not be loaded from {path} ({describe_failure(str(exc))}): "
                f"{INSTALL_HINT}"
            ) from None
