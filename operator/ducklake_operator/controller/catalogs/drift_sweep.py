"""Drift of every table of a catalog, checked in one pass on the catalog's timer.

Someone may change a table outside the operator (an ALTER in DuckDB, a set_option), and its
files change all the time; status follows both. One pass per catalog reads the catalog
once and plans every table against it, where a timer per table would read it once per
table and keep a task and a finalizer on every table. A table is planned again only when its
object or its catalog entries changed since a check that found nothing (``QuietTables``): a
pass over a catalog where little changed is one freshness query and a comparison per table.
Only what changed is written, as a merge patch guarded by the resourceVersion the pass saw,
so a pass never overwrites what a table's own handler wrote meanwhile (that table waits for the next pass). Tables that are
not Ready are left to their handlers, but for those a pass itself made not Ready because it
could not read the catalog (an outage after their manifest was applied): no handler runs for
them, so the next pass that reads the catalog checks them and makes them Ready again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...api.load import parse_manifest
from ...api.v1alpha1.catalog import CatalogSpec
from ...api.v1alpha1.names import DRIFTED, GROUP, PROGRESSING, READY, TABLES, UP_TO_DATE, VERSION
from ...api.v1alpha1.table import TableSpec
from ...errors import DuckLakeError, SpecError
from ...evolution.manifest_plans import plan_table_names
from ...model.state import CatalogState
from ..boundary import OUTAGE_REASONS
from ..catalog_pool import CatalogPool
from ..outcome import Outcome, failed
from ..status import Event, condition, publication
from ..tables.reconciler import check_table_drift

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TableUpdate:
    """What a pass writes for one table."""

    body: Mapping[str, Any]  # enough of the object to post events about it
    status: dict[str, Any]
    events: list[Event]


@dataclass
class SpecCache:
    """Parsed table manifests by uid, parsed again when the generation changes."""

    _specs: dict[str, tuple[int | None, TableSpec | None]] = field(default_factory=dict)

    def spec(self, doc: Mapping[str, Any]) -> TableSpec | None:
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


@dataclass
class QuietTables:
    """Tables whose last check wrote nothing and said nothing, by uid, with what it was
    made from: the object's resourceVersion (its manifest and status as the check saw them)
    and the catalog entries it was planned from (its schema, itself, the tables it may be
    renamed from). While all are the same, a check would find the same: it is not made
    again. (The state cache keeps the objects of entries that did not change, so comparing
    them is mostly an identity check; nothing else is held per table.)"""

    _seen: dict[str, tuple[object, tuple[object, ...]]] = field(default_factory=dict)

    @staticmethod
    def inputs(spec: TableSpec, state: CatalogState) -> tuple[object, ...]:
        return (state.schema(spec.schema), *(state.table(s, n) for s, n in plan_table_names(spec)))

    def unchanged(self, uid: str, version: object, inputs: tuple[object, ...]) -> bool:
        return self._seen.get(uid) == (version, inputs)

    def record(self, uid: str, version: object, inputs: tuple[object, ...] | None) -> None:
        """``inputs`` None: the check wrote or said something (or failed): made again next time."""
        if inputs is None:
            self._seen.pop(uid, None)
        else:
            self._seen[uid] = (version, inputs)


def _condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions") or [] if c.get("type") == type_), {})


def _after_outage(status: dict[str, Any], generation: int | None) -> bool:
    """Not Ready because the catalog could not be read after this generation was applied."""
    ready = _condition(status, READY)
    return (
        ready.get("status") != "True"
        and ready.get("reason") in OUTAGE_REASONS
        and status.get("observedGeneration") == generation
    )


def _ready_again(outcome: Outcome, generation: int | None) -> None:
    """A table a failed read made not Ready, checked: Ready again (unless the check says
    otherwise itself: a revert's apply)."""
    if outcome.failure is None and not any(c["type"] == READY for c in outcome.conditions):
        outcome.conditions += [
            condition(
                READY,
                True,
                UP_TO_DATE,
                f"the catalog can be read again; generation {generation} is applied",
                generation,
            ),  # fmt: skip
            condition(PROGRESSING, False, "Reconciled", "", generation),
        ]


def sweep(
    catalog: CatalogSpec,
    docs: Sequence[Mapping[str, Any]],
    pool: CatalogPool,
    specs: SpecCache,
    quiet: QuietTables,
    write_status: Callable[[Mapping[str, Any], dict[str, Any]], bool],
    scrub: Callable[[str], str],
) -> list[TableUpdate]:
    """Check each Ready table of ``catalog`` (``docs``: the table objects as last seen)
    against the catalog read once; write what changed with ``write_status(doc, fields)``
    (False: the object moved on, skipped); return what was written and the events to post."""
    state: CatalogState | None = None
    unreadable: DuckLakeError | None = None
    try:
        state = pool.state(catalog, pool.catalog(catalog)[0])
    except DuckLakeError as exc:
        unreadable = exc
    updates = []
    for doc in docs:
        spec = specs.spec(doc)
        if spec is None:
            continue
        uid, version = str(doc["metadata"].get("uid")), doc["metadata"].get("resourceVersion")
        inputs = QuietTables.inputs(spec, state) if state is not None else None
        if inputs is not None and quiet.unchanged(uid, version, inputs):
            continue  # before its status is read: the same version has the status that check saw
        status = dict(doc.get("status") or {})
        recovering = _after_outage(status, spec.ref.generation)
        if not (recovering and state is not None) and _condition(status, READY).get("status") != "True":
            continue  # (one that waits for the catalog to read again is said to once)
        if state is None:
            outcome = failed(unreadable or DuckLakeError("unreadable"), spec.ref.generation)
        else:
            outcome = check_table_drift(spec, catalog, pool, state=state)
            if recovering:
                _ready_again(outcome, spec.ref.generation)
        fields, events = publication(
            status, outcome.status, outcome.conditions, outcome.events, outcome.failure is not None, scrub
        )
        if _condition(status, DRIFTED).get("status") == "True":
            events = [e for e in events if e[1] != DRIFTED]  # said when it appeared
        quiet.record(uid, version, inputs if not fields and not events and outcome.failure is None else None)
        if fields and not write_status(doc, fields):
            continue
        if fields or events:
            updates.append(TableUpdate(doc, fields, events))
    return updates


class StatusWriter:
    """Merge patches of the status subresource, guarded by resourceVersion."""

    def __init__(self, custom_objects_api: Callable[[], Any]) -> None:
        self._api = custom_objects_api

    def __call__(self, doc: Mapping[str, Any], fields: dict[str, Any]) -> bool:
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
