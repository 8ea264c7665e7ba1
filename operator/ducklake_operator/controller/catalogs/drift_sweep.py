"""Drift of every table of a catalog, checked in one pass on the catalog's timer.

Someone may change a table outside the operator (an ALTER in DuckDB, a set_option), and its
files change all the time; status follows both. One pass per catalog reads the catalog
once and plans every table against it, where a timer per table would read it once per
table and keep a task and a finalizer on every table. Only what changed is written, as a
merge patch guarded by the resourceVersion the pass saw, so a pass never overwrites what a
table's own handler wrote meanwhile (that table waits for the next pass). Tables that are
not Ready are left to their handlers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...api.load import parse_manifest
from ...api.v1alpha1.catalog import CatalogSpec
from ...api.v1alpha1.names import DRIFTED, GROUP, READY, TABLES, VERSION
from ...api.v1alpha1.table import TableSpec
from ...errors import SpecError
from ..catalog_pool import CatalogPool
from ..status import Event, publication
from ..tables.reconciler import check_table_drift

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TableUpdate:
    """What a pass writes for one table."""

    body: dict[str, Any]  # enough of the object to post events about it
    status: dict[str, Any]
    events: list[Event]


@dataclass
class SpecCache:
    """Parsed table manifests by uid, parsed again when the generation changes."""

    _specs: dict[str, tuple[int | None, TableSpec | None]] = field(default_factory=dict)

    def spec(self, doc: dict[str, Any]) -> TableSpec | None:
        meta = doc.get("metadata", {})
        uid, generation = str(meta.get("uid")), meta.get("generation")
        cached = self._specs.get(uid)
        if cached is not None and cached[0] == generation:
            return cached[1]
        try:
            parsed = parse_manifest(doc, source=f"{meta.get('namespace')}/{meta.get('name')}")
        except SpecError:
            parsed = None
        spec = parsed if isinstance(parsed, TableSpec) else None
        self._specs[uid] = (generation, spec)
        return spec


def _condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions") or [] if c.get("type") == type_), {})


def sweep(
    catalog: CatalogSpec,
    docs: list[dict[str, Any]],
    pool: CatalogPool,
    specs: SpecCache,
    write_status: Callable[[dict[str, Any], dict[str, Any]], bool],
    scrub: Callable[[str], str],
) -> list[TableUpdate]:
    """Check each Ready table of ``catalog`` (``docs``: the table objects as last seen);
    write what changed with ``write_status(doc, fields)`` (False: the object moved on,
    skipped); return what was written and the events to post."""
    updates = []
    started = time.monotonic()  # every check after the first trusts the catalog read since then
    for doc in docs:
        status = dict(doc.get("status") or {})
        spec = specs.spec(doc)
        if spec is None or _condition(status, READY).get("status") != "True":
            continue
        outcome = check_table_drift(spec, catalog, pool, max_age=time.monotonic() - started)
        fields, events = publication(
            status, outcome.status, outcome.conditions, outcome.events, outcome.failure is not None, scrub
        )
        if _condition(status, DRIFTED).get("status") == "True":
            events = [e for e in events if e[1] != DRIFTED]  # said when it appeared
        if fields and not write_status(doc, fields):
            continue
        if fields or events:
            updates.append(TableUpdate(doc, fields, events))
    return updates


class StatusWriter:
    """Merge patches of the status subresource, guarded by resourceVersion."""

    def __init__(self, custom_objects_api: Callable[[], Any]) -> None:
        self._api = custom_objects_api

    def __call__(self, doc: dict[str, Any], fields: dict[str, Any]) -> bool:
        from kubernetes.client.exceptions import ApiException

        meta = doc["metadata"]
        body = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "status": fields}
        try:
            self._api().patch_namespaced_custom_object_status(
                GROUP, VERSION, meta["namespace"], TABLES, meta["name"], body
            )
        except ApiException as exc:
            if exc.status in (404, 409):  # gone, or changed since the pass saw it
                return False
            log.warning("writing the status of %s/%s failed: %s", meta["namespace"], meta["name"], exc.reason)
            return False
        return True
