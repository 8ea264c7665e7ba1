"""Open catalogs (engine pools) per DuckLakeCatalog resource, shared by every kind's
reconciler and by the runs: one engine pool, one ``StateCache`` and one ``CommitBatcher``
per catalog."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..api.v1alpha1.catalog import CatalogSpec
from ..catalog import Catalog, CommitResult
from ..catalog.batch import CommitBatcher
from ..catalog.state_cache import StateCache
from ..model.state import CatalogState
from ..use_cases import Credentials, ensure_catalog, location_for
from .metrics import CATALOG_QUERIES


class CatalogPool:
    """Open catalogs (engine pools) per catalog resource, each with its ``StateCache``: a
    reconcile asks whether anything changed (one query) and reuses the cached state when
    nothing did, so resyncing many tables costs one small query per table, not a full read.
    """

    def __init__(self, credentials: Credentials | None = None) -> None:
        self.credentials = credentials
        self._catalogs: dict[tuple[str, str], tuple[tuple[Any, ...], Catalog]] = {}
        self._states: dict[tuple[str, str], StateCache] = {}
        self._batchers: dict[tuple[str, str], tuple[Catalog, CommitBatcher]] = {}
        self._lock = threading.Lock()
        self.queries = 0  # statements sent to catalog databases (for the benchmark)

    def _key(self, spec: CatalogSpec) -> tuple[str, str]:
        return (spec.ref.namespace or "", spec.ref.name)

    def _count(self, statement: str) -> None:
        if not statement.startswith("BEGIN"):
            self.queries += 1
            CATALOG_QUERIES.inc()

    def catalog(self, spec: CatalogSpec, *, create: bool = False) -> tuple[Catalog, bool]:
        location = location_for(spec, self.credentials)
        identity = (location, spec.data_path)
        key = self._key(spec)
        with self._lock:
            cached = self._catalogs.get(key)
            if cached and cached[0] == identity:
                return cached[1], False
        if create:
            catalog, created = ensure_catalog(spec, self.credentials)
        else:
            catalog, created = Catalog.open(location, expected_data_path=spec.data_path), False
        catalog.on_statement(self._count)
        with self._lock:
            old = self._catalogs.pop(key, None)
            self._catalogs[key] = (identity, catalog)
            self._states.pop(key, None)
        if old:
            old[1].close()
        return catalog, created

    def forget(self, spec: CatalogSpec) -> None:
        with self._lock:
            old = self._catalogs.pop(self._key(spec), None)
            self._states.pop(self._key(spec), None)
            self._batchers.pop(self._key(spec), None)
        if old:
            old[1].close()

    def state(self, spec: CatalogSpec, catalog: Catalog, **freshness: Any) -> CatalogState:
        """The catalog's current state, from its ``StateCache`` (``at_least``, ``max_age``)."""
        key = self._key(spec)
        with self._lock:
            cache = self._states.get(key)
            if cache is None or cache.catalog is not catalog:
                cache = self._states[key] = StateCache(catalog)
        return cache.state(**freshness)

    def committer(self, spec: CatalogSpec, catalog: Catalog) -> Callable[..., CommitResult]:
        """``catalog.commit`` through the catalog's ``CommitBatcher``: plans reconciled at
        once (a folder applied by GitOps) share snapshots instead of colliding."""
        key = self._key(spec)
        with self._lock:
            cached = self._batchers.get(key)
            if cached is None or cached[0] is not catalog:
                cached = self._batchers[key] = (catalog, CommitBatcher(catalog.commit))
        return cached[1].commit

    def close(self) -> None:
        with self._lock:
            for _, catalog in self._catalogs.values():
                catalog.close()
            self._catalogs.clear()
            self._states.clear()
            self._batchers.clear()
