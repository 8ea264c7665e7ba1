"""The frame every schema, table and catalog handler runs in: parse the body, wait if the
last try waits for a dependency, call the kind's reconciler on a worker thread, write what
changed to status and events, and turn a failure into a kopf retry.

A handler whose dependency is missing waits for it to change (``context``): the catalog's
channel, and the channels of the Secrets the catalog reads.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import kopf

from ..api.v1alpha1.catalog import CatalogSpec, PostgresSpec
from ..api.v1alpha1.names import INVALID_SPEC, PROGRESSING, READY, TABLE_KIND
from ..errors import SpecError
from . import metrics
from .context import Controller, catalog_channel
from .manifests import parse_body
from .outcome import Outcome
from .status import condition, publication


def secret_channel(namespace: str, name: str) -> Hashable:
    return ("secret", namespace, name)


def channels(catalog: CatalogSpec | None, namespace: str | None, name: str) -> list[Hashable]:
    """What a handler of an object using catalog ``name`` waits on: the catalog, and the
    Secrets the catalog reads."""
    channels = [catalog_channel(namespace, name)]
    if catalog is not None:
        refs = [catalog.s3.credentials if catalog.s3 else None]
        if isinstance(catalog.backend, PostgresSpec):
            refs.append(catalog.backend.credentials)
        channels += [secret_channel(namespace or "", r.name) for r in refs if r is not None]
    return channels


def publish(ctl: Controller, outcome: Outcome, body: kopf.Body, patch: kopf.Patch, status: Any, kind: str) -> None:
    """Write what changed to status and post the events (``status.publication``)."""
    fields, events = publication(
        dict(status), outcome.status, outcome.conditions, outcome.events, outcome.failure is not None, ctl.scrub
    )
    for key, value in fields.items():
        patch.status[key] = value
    if kind == TABLE_KIND:
        meta = body.get("metadata", {})
        metrics.table_seen(str(meta.get("uid")), meta.get("namespace", ""), meta.get("name", ""), {**status, **fields})
    for type_, reason, message in events:
        kopf.event(body, type=type_, reason=reason, message=message)
    metrics.RECONCILES.labels(kind=kind, result=outcome.failure.reason if outcome.failure else "ok").inc()


def invalid_outcome(exc: SpecError, body: kopf.Body) -> Outcome:
    """An invalid manifest: said in status and an event; not retried until it changes."""
    generation = body.get("metadata", {}).get("generation")
    message = "; ".join(exc.problems)
    return Outcome(
        status={"observedGeneration": generation},
        conditions=[
            condition(READY, False, INVALID_SPEC, message, generation),
            condition(PROGRESSING, False, INVALID_SPEC, "", generation),
        ],
        events=[("Warning", INVALID_SPEC, message)],
    )


async def handle(
    kind: str,
    body: kopf.Body,
    patch: kopf.Patch,
    status: Any,
    memo: kopf.Memo,
    retry: int,
    reconcile: Callable[[Any], Outcome],
    *,
    catalog: Callable[[Any], CatalogSpec | None],
    on_invalid: str = "report",
    after: Callable[[Any, Outcome], None] | None = None,
    timer: bool = False,
) -> None:
    """Parse, wait if the last try waits for a dependency, reconcile on a worker thread,
    publish, and turn a failure into a kopf retry. An invalid manifest is reported
    (``on_invalid="report"``), or on deletion said to have been never applied
    (``"delete"``), or left to the change handlers (``"skip"``, timers). A timer neither
    waits nor retries: its next tick is its retry."""
    ctl: Controller = memo.controller
    uid = str(body.get("metadata", {}).get("uid"))
    try:
        spec = parse_body(body)
    except SpecError as exc:
        if on_invalid == "report":
            publish(ctl, invalid_outcome(exc, body), body, patch, status, kind)
        elif on_invalid == "delete":
            kopf.event(body, type="Warning", reason=INVALID_SPEC, message="the manifest is invalid, so it was never "
                       "applied; nothing to delete in the lake")  # fmt: skip
        return
    if not timer:
        await ctl.wait_if_blocked(uid, retry)
    catalog_spec = spec if isinstance(spec, CatalogSpec) else catalog(spec)
    catalog_name = spec.ref.name if isinstance(spec, CatalogSpec) else spec.catalog
    seen = ctl.note(channels(catalog_spec, spec.ref.namespace, catalog_name))
    with metrics.RECONCILE_SECONDS.labels(kind=kind).time():
        outcome = await ctl.call(reconcile, spec)
    publish(ctl, outcome, body, patch, status, kind)
    if after is not None:
        after(spec, outcome)
    failure = outcome.failure
    if timer:
        return
    if failure is None:
        ctl.forget(uid)
        return
    message = ctl.scrub(failure.message)
    if failure.waits:
        ctl.block(uid, seen)
        if failure.reason == "CatalogUnreachable" and catalog_spec is not None:
            pool, target = ctl.pool, catalog_spec
            ctl.probe(catalog_channel(spec.ref.namespace, catalog_name), lambda: pool.catalog(target)[0].snapshot())
        raise kopf.TemporaryError(message, delay=0)
    raise kopf.TemporaryError(message, delay=failure.delay(retry))


def notify_catalog(ctl: Controller, spec: Any) -> None:
    name = spec.ref.name if isinstance(spec, CatalogSpec) else spec.catalog
    ctl.signals.notify(catalog_channel(spec.ref.namespace, name))


def after_commit(ctl: Controller) -> Callable[[Any, Outcome], None]:
    """After a schema or table reconcile: a commit may be what others wait for (a schema)."""

    def after(spec: Any, outcome: Outcome) -> None:
        if outcome.failure is None and (outcome.status.get("lastPlan") or {}).get("snapshot") is not None:
            notify_catalog(ctl, spec)

    return after
