"""A catalog's state kept current between reads, for callers that ask often (the controller,
the CLI, the job scheduler) while the catalog mostly stays as it was.

One round trip says whether anything changed: the latest snapshot id and the
``ducklake_metadata`` rows. Both are needed, because options are written without a
snapshot (DuckDB's ``set_option`` and an options-only commit alike). Nothing changed: the
cached state. Options only: the cached state with the new options. New snapshots: only the
tables their change tokens name are read again (a schema change or an unknown token reads
everything), in the same read transaction; every table then takes its options from the
metadata just read.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

import sqlalchemy as sa

from ..model.state import CatalogState
from .catalog import Catalog
from .changes_made import parse_changes
from .read import Metadata, load_catalog_state, load_freshness, load_snapshots, with_options

_SCHEMA_TOKENS = {"created_schema", "dropped_schema"}


@dataclass(frozen=True)
class _Cached:
    state: CatalogState
    metadata: Metadata


class StateCache:
    """The latest state of one catalog; safe to share between threads."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._cached: _Cached | None = None
        self._lock = threading.Lock()

    def state(self) -> CatalogState:
        cached = self._cached
        with self.catalog.reading() as conn:
            latest, metadata = load_freshness(conn)
            if cached is None:
                state = load_catalog_state(conn)
            elif cached.state.snapshot.snapshot_id == latest:
                if cached.metadata == metadata:
                    return cached.state
                state = with_options(cached.state, metadata)
            else:
                state = with_options(_refresh(conn, cached.state), metadata)
        with self._lock:
            if self._cached is None or self._cached.state.snapshot.snapshot_id <= state.snapshot.snapshot_id:
                self._cached = _Cached(state, metadata)
        return state

    def clear(self) -> None:
        with self._lock:
            self._cached = None


def _refresh(conn: sa.Connection, cached: CatalogState) -> CatalogState:
    """The cached state brought to the latest snapshot by reading only the tables that the
    change tokens of the snapshots since name."""
    ids: set[int] = set()
    names: set[tuple[str, str]] = set()
    for snap in load_snapshots(conn, after=cached.snapshot.snapshot_id):
        for token in parse_changes(snap.changes_made):
            if token.token in ("created_table", "created_view"):
                names.add((token.schema or "", token.name or ""))
            elif token.id is not None and token.token not in _SCHEMA_TOKENS:
                ids.add(token.id)
            else:
                return load_catalog_state(conn)  # schemas changed: read everything
    fresh = load_catalog_state(conn, table_ids=ids, table_names=names)
    fresh_ids = {t.table_id for t in fresh.tables.values()}
    tables = {k: t for k, t in cached.tables.items() if t.table_id not in ids | fresh_ids}
    tables.update(fresh.tables)
    return replace(fresh, tables=tables)
