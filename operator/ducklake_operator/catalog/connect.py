"""Where a catalog lives, and the SQLAlchemy engine that reaches it.

PostgreSQL runs commits at REPEATABLE READ, as DuckDB does. On SQLite, commit transactions
start with ``BEGIN IMMEDIATE`` (the write lock up front, so two writers queue instead of
failing half-way), reads with a plain ``BEGIN``; the busy timeout is 5 s, DuckDB's default.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy import event

from ..errors import CatalogUnavailable, SpecError
from .scrub import describe_failure

if TYPE_CHECKING:
    import sqlite3


@dataclass(frozen=True)
class CatalogLocation:
    """A metadata database: ``sqlite`` (a file) or ``postgres`` (server, database, schema)."""

    kind: str  # "sqlite" | "postgres"
    path: str | None = None
    host: str | None = None
    port: int = 5432
    database: str | None = None
    schema: str | None = None
    user: str | None = None
    password: str | None = field(default=None, repr=False)  # never printed
    sslmode: str | None = None
    # PostgreSQL's application_name: a job's sessions carry its uid (model/job_marker.py), so
    # the controller can wait them out before it concludes a stopped run committed nothing
    application_name: str = "ducklake-operator"

    def __post_init__(self) -> None:
        if self.kind == "sqlite" and not self.path:
            raise SpecError("a sqlite catalog needs a path")
        if self.kind == "postgres" and not (self.host and self.database):
            raise SpecError("a postgres catalog needs host and database")
        if self.kind not in ("sqlite", "postgres"):
            raise SpecError(f"catalog kind {self.kind!r} is not supported; use sqlite or postgres")

    @property
    def dialect(self) -> str:
        return "sqlite" if self.kind == "sqlite" else "postgresql"

    def sqlalchemy_url(self) -> sa.URL:
        if self.kind == "sqlite":
            return sa.URL.create("sqlite+pysqlite", database=os.path.abspath(self.path or ""))
        query = {"sslmode": self.sslmode} if self.sslmode else {}
        return sa.URL.create(
            "postgresql+psycopg2",
            username=self.user,
            password=self.password,
            host=self.host,
            port=self.port,
            database=self.database,
            query=query,
        )

    def libpq_dsn(self) -> str:
        """libpq key=value string, as DuckDB's ``ducklake:postgres:`` attach expects."""
        parts = {
            "host": self.host,
            "port": str(self.port),
            "dbname": self.database,
            "user": self.user,
            "password": self.password,
            "sslmode": self.sslmode,
        }
        return " ".join(f"{k}={_libpq_quote(v)}" for k, v in parts.items() if v)

    def duckdb_attach_target(self) -> str:
        """The ``ducklake:...`` string for DuckDB's ATTACH."""
        if self.kind == "sqlite":
            return f"ducklake:sqlite:{os.path.abspath(self.path or '')}"
        return f"ducklake:postgres:{self.libpq_dsn()}"

    def describe(self) -> str:
        """A credential-free description for messages and logs."""
        if self.kind == "sqlite":
            return f"sqlite:{self.path}"
        schema = f" schema {self.schema}" if self.schema else ""
        return f"postgres://{self.host}:{self.port}/{self.database}{schema}"


def _libpq_quote(value: str) -> str:
    if value and all(c not in value for c in " '\\"):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def create_engine(location: CatalogLocation, *, connect_timeout: int = 10) -> sa.Engine:
    if location.kind == "sqlite":
        engine = sa.create_engine(location.sqlalchemy_url(), poolclass=sa.pool.NullPool)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: sqlite3.Connection, _record: object) -> None:
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
            dbapi_conn.execute("PRAGMA busy_timeout = 5000")

        @event.listens_for(engine, "begin")
        def _on_begin(conn: sa.Connection) -> None:
            # commits take the write lock up front; reads must not block writers
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("ducklake_write") else "BEGIN")

        return engine
    engine = sa.create_engine(
        location.sqlalchemy_url(),
        isolation_level="REPEATABLE READ",
        pool_pre_ping=True,
        pool_size=2,
        max_overflow=2,
        connect_args={"connect_timeout": connect_timeout, "application_name": location.application_name},
    )
    if location.schema:
        engine = engine.execution_options(schema_translate_map={None: location.schema})
    return engine


def describe_db_error(exc: sa.exc.DBAPIError) -> str:
    """The driver's error as one clause, never with credentials (``scrub.describe_failure``)."""
    return describe_failure(str(exc.orig) if exc.orig is not None else type(exc).__name__)


@contextmanager
def safe_to_rerun(what: str) -> Iterator[None]:
    """Work outside a snapshot commit (which settles its own failures): a catalog database
    failure is ``CatalogUnavailable`` saying that running ``what`` again is safe."""
    try:
        yield
    except sa.exc.DBAPIError as exc:
        raise CatalogUnavailable(
            f"{what}: the catalog database failed: {describe_db_error(exc)}; running it again is safe"
        ) from None
