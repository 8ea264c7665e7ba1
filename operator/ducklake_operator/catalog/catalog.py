"""``Catalog``: the handle the CLI, the controller and the Spark driver share.

It knows nothing of Kubernetes. Connection failures become ``CatalogUnavailable`` with a
credential-free description of the location.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

from ..errors import CatalogNotFound, CatalogUnavailable, CommitConflict, SchemaNotFound, TableNotFound
from ..model.state import CatalogState, SnapshotInfo, SnapshotRecord, TableState
from .bootstrap import adopt_catalog, catalog_exists, initialize_catalog, normalize_data_path
from .commit import DEFAULT_AUTHOR, Changes, CommitResult, LateChanges, commit_changes
from .connect import CatalogLocation, create_engine, describe_db_error
from .drop import drop_catalog
from .read_metadata import DATA_PATH_OPTION, check_format_version, load_metadata
from .read_snapshots import load_snapshot, load_snapshots
from .read_state import load_catalog_state


class Catalog:
    def __init__(
        self, location: CatalogLocation, engine: sa.Engine | None = None, *, data_path: str | None = None
    ) -> None:
        """``data_path``: where the lake's files are when they moved away from the data path
        the catalog stores (DuckDB's ``OVERRIDE_DATA_PATH``, which never rewrites it): every
        path is then resolved, and every new file written, under it."""
        self.location = location
        self.engine = engine or create_engine(location)
        # this handle's commits so far, for a job's report: attempts that collided with a
        # concurrent writer and were retried, and commits refused by a concurrent change
        self.commit_retries = 0
        self.commit_conflicts = 0
        # run inside each commit's transaction right before COMMIT (after the caller's own
        # ``before_commit``); raising rolls the commit back: a job refuses to commit past its
        # run's deadline
        self.commit_guard: Callable[[], None] | None = None
        if data_path is not None:
            self.engine = self.engine.execution_options(**{DATA_PATH_OPTION: normalize_data_path(data_path)})

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def create(cls, location: CatalogLocation, data_path: str, options: Mapping[str, object] | None = None) -> Catalog:
        """Initialise a new catalog; fails if one already exists there."""
        if location.kind == "sqlite":
            os.makedirs(os.path.dirname(os.path.abspath(location.path or "")), exist_ok=True)
        catalog = cls(location)
        with catalog._connection() as conn, conn.begin():
            if catalog_exists(conn, location.schema):
                from ..errors import AlreadyExists

                raise AlreadyExists(f"{location.describe()} already holds a DuckLake catalog")
            initialize_catalog(
                conn, dialect=location.dialect, pg_schema=location.schema, data_path=data_path, options=options
            )
        return catalog

    @classmethod
    def open(
        cls, location: CatalogLocation, *, expected_data_path: str | None = None, override_data_path: bool = False
    ) -> Catalog:
        """Adopt an existing catalog after checking its format version and that it stores
        ``expected_data_path``; ``override_data_path``: the lake moved there instead (as
        DuckDB's ATTACH option of that name)."""
        if location.kind == "sqlite" and not os.path.exists(location.path or ""):
            raise CatalogNotFound(f"{location.describe()} does not exist")  # and do not create an empty file
        catalog = cls(location, data_path=expected_data_path if override_data_path else None)
        with catalog._connection() as conn:
            if not catalog_exists(conn, location.schema):
                raise CatalogNotFound(f"{location.describe()} holds no DuckLake catalog")
            adopt_catalog(conn, location.describe(), None if override_data_path else expected_data_path)
        return catalog

    @classmethod
    def open_or_create(
        cls,
        location: CatalogLocation,
        data_path: str,
        options: Mapping[str, object] | None = None,
    ) -> tuple[Catalog, bool]:
        """Adopt the catalog at ``location`` or create it; returns (catalog, created)."""
        if location.kind == "sqlite" and not os.path.exists(location.path or ""):
            return cls.create(location, data_path, options), True
        catalog = cls(location)
        with catalog._connection() as conn:
            exists = catalog_exists(conn, location.schema)
            if exists:
                adopt_catalog(conn, location.describe(), data_path)
        if exists:
            return catalog, False
        catalog.engine.dispose()
        return cls.create(location, data_path, options), True

    def close(self) -> None:
        self.engine.dispose()

    def drop(self, delete_file: Callable[[str], bool]) -> tuple[int, list[str]]:
        """Delete the lake: every file the catalog refers to, then its tables (``drop_catalog``);
        returns (files deleted, tables dropped)."""
        return drop_catalog(self.engine, self.location, delete_file)

    def on_statement(self, listener: Callable[[str], None]) -> None:
        """Call ``listener`` with every statement sent to the catalog database (metrics)."""
        sa.event.listen(self.engine, "before_cursor_execute", lambda _c, _cur, statement, *_: listener(statement))

    # ------------------------------------------------------------------ reads

    @contextmanager
    def reading(self) -> Iterator[sa.Connection]:
        """One read transaction (a consistent view of the catalog) for the library's readers."""
        with self._connection() as conn, conn.begin():
            yield conn

    def state(self, snapshot_id: int | None = None, **kwargs: Any) -> CatalogState:
        with self.reading() as conn:
            return load_catalog_state(conn, snapshot_id, **kwargs)

    def snapshot(self, snapshot_id: int | None = None) -> SnapshotInfo:
        with self.reading() as conn:
            return load_snapshot(conn, snapshot_id)

    def health(self) -> tuple[SnapshotInfo, str]:
        """The latest snapshot and the format version (checked), in one read: what a
        catalog's periodic health check needs, without reading its tables."""
        with self.reading() as conn:
            return load_snapshot(conn, None), check_format_version(load_metadata(conn), "the catalog")

    def snapshots(self, after: int | None = None) -> list[SnapshotRecord]:
        with self.reading() as conn:
            return load_snapshots(conn, after)

    def table(self, schema: str, name: str, snapshot_id: int | None = None) -> TableState:
        state = self.state(snapshot_id)
        if state.schema(schema) is None:
            raise SchemaNotFound(f"schema {schema!r} does not exist")
        table = state.table(schema, name)
        if table is None:
            raise TableNotFound(f"table {schema}.{name} does not exist")
        return table

    # ------------------------------------------------------------------ writes

    def commit(
        self,
        changes: Changes | LateChanges,
        *,
        author: str | None = DEFAULT_AUTHOR,  # None: none, as DuckDB commits
        message: str | None = None,
        extra_info: str | Callable[[], str | None] | None = None,
        base_snapshot: int | None = None,
        **kwargs: Any,
    ) -> CommitResult:
        """Commit ``changes`` as one snapshot (see ``catalog.commit``)."""
        guard, given = self.commit_guard, kwargs.get("before_commit")
        if guard is not None:
            kwargs["before_commit"] = guard if given is None else lambda: (given(), guard())
        try:
            result = commit_changes(
                self.engine,
                changes,
                dialect=self.location.dialect,
                pg_schema=self.location.schema,
                author=author,
                message=message,
                extra_info=extra_info,
                base_snapshot=base_snapshot,
                **kwargs,
            )
        except CommitConflict:
            self.commit_conflicts += 1
            raise
        self.commit_retries += result.attempts - 1
        return result

    # ------------------------------------------------------------------ plumbing

    @contextmanager
    def _connection(self) -> Iterator[sa.Connection]:
        try:
            conn = self.engine.connect()
        except sa.exc.DBAPIError as exc:
            raise CatalogUnavailable(
                f"cannot reach the catalog at {self.location.describe()}: {describe_db_error(exc)}"
            ) from None
        try:
            yield conn
        except sa.exc.DBAPIError as exc:
            raise CatalogUnavailable(f"catalog at {self.location.describe()}: {describe_db_error(exc)}") from None
        finally:
            conn.close()
