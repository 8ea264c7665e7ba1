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
import time
from dataclasses import dataclass

import sqlalchemy as sa

from ..model.state import CatalogState
from .catalog import Catalog
from .changes_made import parse_changes
from .read_metadata import Metadata, load_freshness, table_ids_from, with_options
from .read_snapshots import load_snapshots
from .read_state import load_catalog_state

_SCHEMA_TOKENS = {"created_schema", "dropped_schema"}


@dataclass(frozen=True)
class _Cached:
    state: CatalogState
    metadata: Metadata
    checked: float  # time.monotonic() of the freshness check that produced it


class StateCache:
    """The latest state of one catalog; safe to share between threads. One caller reads at a
    time: callers that arrive while a read is in flight wait for it and take its result, so a
    storm of reconciles reads the catalog once per change, not once per caller."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._cached: _Cached | None = None
        self._reading = threading.Lock()

    def state(self, *, at_least: int | None = None, max_age: float = 0.0) -> CatalogState:
        """The current state. ``at_least``: a snapshot the caller knows exists (its own
        commit); a cached state that has it needs no round trip. ``max_age``: seconds for
        which a freshness check (by any caller) is trusted; 0 checks every time."""
        asked = time.monotonic()
        cached = self._cached
        if cached is not None and _fresh_enough(cached, at_least, max_age, asked):
            return cached.state
        with self._reading:
            cached = self._cached
            if cached is not None and (cached.checked >= asked or _fresh_enough(cached, at_least, max_age, asked)):
                return cached.state  # read by another caller while this one waited
            checked = time.monotonic()
            with self.catalog.reading() as conn:
                latest, metadata = load_freshness(conn)
                if cached is None:
                    state = load_catalog_state(conn)
                elif cached.state.snapshot.snapshot_id == latest:
                    state = cached.state if cached.metadata == metadata else with_options(cached.state, metadata)
                elif cached.metadata == metadata:  # the tables read again have the options in force
                    state = _refresh(conn, cached.state)
                else:
                    state = with_options(_refresh(conn, cached.state), metadata)
            self._cached = _Cached(state, metadata, checked)
            return state

    def clear(self) -> None:
        with self._reading:
            self._cached = None


def _fresh_enough(cached: _Cached, at_least: int | None, max_age: float, now: float) -> bool:
    if at_least is not None and cached.state.snapshot.snapshot_id >= at_least:
        return True
    return max_age > 0 and now - cached.checked < max_age


def _refresh(conn: sa.Connection, cached: CatalogState) -> CatalogState:
    """The cached state brought to the latest snapshot by reading only the tables that the
    change tokens of the snapshots since name."""
    ids: set[int] = set()
    created = False
    for snap in load_snapshots(conn, after=cached.snapshot.snapshot_id):
        for token in parse_changes(snap.changes_made):
            if token.token in ("created_table", "created_view"):
                created = True
            elif token.id is not None and token.token not in _SCHEMA_TOKENS:
                ids.add(token.id)
            else:
                return load_catalog_state(conn)  # schemas changed: read everything
    if created:  # a new table takes a catalog id no earlier snapshot gave out (not its name: one may be taken again)
        ids |= table_ids_from(conn, cached.snapshot.next_catalog_id, cached.snapshot.snapshot_id)
    fresh = load_catalog_state(conn, table_ids=ids)
    return cached.refreshed(ids | {t.table_id for t in fresh.tables.values()}, fresh)
