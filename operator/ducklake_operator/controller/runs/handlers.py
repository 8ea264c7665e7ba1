"""kopf handlers of DuckLakeJob runs (``state_machine.Runs`` does the work).

A run that has not ended has a daemon: it ticks the run, writes what changed to its status,
and sleeps until the next look is due or something wakes it: its Local program exited, a
run of its catalog gave back its locks (a waiting run may go), its catalog became Ready or
reachable, ``spec.cancel`` was set. A
restarted operator starts the daemons of the runs it finds and re-attaches to what they
launched. Deleting a run that has not ended cancels it (a finalizer holds the deletion
until what it launched has stopped and its uncommitted files are gone).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import kopf

from ...api.load import parse_manifest
from ...api.v1alpha1.job import ENDED_STATES, FAILED, PENDING, RUNNING, JobSpec
from ...api.v1alpha1.names import GROUP, JOBS, VERSION
from ...errors import CatalogUnavailable, DuckLakeError, SpecError
from .. import metrics
from ..context import Controller, catalog_channel
from ..kube_clients import custom_objects_api
from ..launchers.api_errors import api_error
from ..launchers.local_spare import WARM_SPARE_ENV, warm_spare_enabled
from ..launchers.settings import SparkDefaults, effective_spark
from ..manifests import CatalogKey, ManifestIndex, TableIndex, body_manifest, catalog_for, parsed_policy, policy_uid
from ..status import merge_conditions
from .locks import Leases
from .run_context import OtherRun, PolicyWindow, RunContext
from .run_document import table_evolution
from .state_machine import Runs
from .tick import ACTIVE, RETRY_BACKOFF, WAIT_INTERVAL, Tick, parse_stamp
from .waiting import waits_for

log = logging.getLogger(__name__)
DELETED = "cancelled: the DuckLakeJob was deleted"
CANCELLED = "cancelled: spec.cancel is true"
PROGRAM_FIELDS = ("progress", "jobReport")  # status fields the job program writes, not the controller


def run_channel(uid: str) -> Hashable:
    return ("run", uid)


def catalog_runs_channel(namespace: str | None, catalog: str) -> Hashable:
    return ("runs", namespace or "", catalog)


def _active(status: kopf.Status, **_: Any) -> bool:
    return (status.get("state") or "") in ACTIVE


# ------------------------------------------------------------------ indexes

RunIndex = kopf.Index[CatalogKey, OtherRun]


@dataclass(frozen=True)
class Indexes:
    """The indexes a run reads (kopf passes them to every handler as keyword arguments)."""

    catalog_manifests: ManifestIndex
    policy_manifests: ManifestIndex
    active_runs: RunIndex
    table_manifests: TableIndex

    @classmethod
    def of(cls, kwargs: Mapping[str, Any]) -> Indexes:
        return cls(
            kwargs["catalog_manifests"], kwargs["policy_manifests"], kwargs["active_runs"], kwargs["table_manifests"]
        )


@kopf.index(GROUP, VERSION, JOBS)
async def active_runs(
    namespace: str | None, name: str, body: kopf.Body, memo: kopf.Memo, **_: Any
) -> dict[CatalogKey, OtherRun]:
    """Runs that have not ended, by catalog: waiting runs read who holds what from here.
    When what a run holds is given back (it ended, or released its locks), the runs waiting
    in its catalog are woken: the index, not the releasing run's own signal, is what they
    read, so the signal goes out as the index learns it."""
    meta, spec, status = body.get("metadata", {}), body.get("spec", {}), body.get("status", {})
    catalog: CatalogKey = (namespace, str(spec.get("catalogRef", {}).get("name")))
    state = status.get("state") or ""
    holds = state == RUNNING or bool(status.get("locks"))
    if not holds and "controller" in memo:
        memo.controller.signals.notify(catalog_runs_channel(*catalog))
    if state in ENDED_STATES:
        return {}
    run = OtherRun(
        name=name,
        uid=str(meta.get("uid")),
        table=spec.get("table"),
        state=status.get("state") or PENDING,
        created=str(meta.get("creationTimestamp") or ""),
        holds=holds,
        retry_at=status.get("nextAttemptAt"),
        locks=tuple(status.get("locks") or ()),
        policy=policy_uid(meta),
    )
    return {catalog: run}


# ------------------------------------------------------------------ the daemon


@dataclass
class _SharedRuns:
    """The operator's one ``Runs``. kopf hands each object's handlers a shallow copy of the
    operator's memo, so what a handler stores on ``memo`` stays with that one object: a
    ``Runs`` made there was one per DuckLakeJob (launchers, API clients and all, ~0.6 MB
    each). This holder is put on the operator's memo at start, and every copy shares it."""

    runs: Runs | None = None


@kopf.on.cleanup()
def close_launchers(memo: kopf.Memo, **_: Any) -> None:
    """What the launchers keep for runs to come (the Local launcher's warm spare) goes with the operator."""
    shared: _SharedRuns | None = memo.get("shared_runs")
    if shared is not None and shared.runs is not None:
        for launcher in shared.runs.launchers.values():
            launcher.close()


def _runs(memo: kopf.Memo) -> Runs:
    shared: _SharedRuns = memo.shared_runs
    if shared.runs is None:  # made on the event loop's thread, once
        from kubernetes import client

        from ..launchers import launchers  # the kubernetes client is loaded only when runs exist

        ctl: Controller = memo.controller

        def alive(namespace: str, name: str, uid: str) -> bool:
            """Whether the Lease holder ``uid`` still runs (its DuckLakeJob is there and has not ended)."""
            try:
                job = custom_objects_api().get_namespaced_custom_object(GROUP, VERSION, namespace, JOBS, name)
            except Exception:  # noqa: BLE001 - gone (404) or unreadable: holding nothing
                return False
            state = (job.get("status") or {}).get("state") or ""
            return bool(job["metadata"]["uid"] == uid and state in ACTIVE)

        shared.runs = Runs(
            ctl.pool,
            Leases(lambda: client.CoordinationV1Api(), alive),
            launchers(secret_value=memo.secrets.value, on_exit=lambda uid: ctl.signals.notify(run_channel(uid))),
            scrub=ctl.scrub,
            retry_backoff=float(os.environ.get("DUCKLAKE_RETRY_BACKOFF", RETRY_BACKOFF)),
        )
    return shared.runs


@kopf.on.startup()
def spark_defaults(memo: kopf.Memo, **_: Any) -> None:
    """The chart's defaults for runs, read once: a value that does not read stops the start."""
    memo.spark_defaults = SparkDefaults.from_env()
    warm_spare_enabled(os.environ.get(WARM_SPARE_ENV))  # the Local launcher's, made with the first run
    memo.shared_runs = _SharedRuns()


def run_context(spec: JobSpec, body: kopf.Body, indexes: Indexes, defaults: SparkDefaults) -> RunContext:
    namespace = spec.ref.namespace
    catalog_manifests, policy_manifests = indexes.catalog_manifests, indexes.policy_manifests
    catalog = catalog_for(spec, catalog_manifests)
    doc = next(iter(catalog_manifests.get((namespace, spec.catalog)) or []), None)
    meta = body.get("metadata", {})
    owner_uid = policy_uid(meta)
    policies = [(d, parsed_policy(d)) for d in policy_manifests.get((namespace, spec.catalog)) or []]
    owner = next((p for d, p in policies if d["metadata"].get("uid") == owner_uid and p is not None), None)
    limits = [p.max_jobs_per_catalog for _, p in policies if p is not None and p.max_jobs_per_catalog]
    windows = {str(d["metadata"].get("uid")): PolicyWindow(str(d["metadata"].get("name")), p.window)
               for d, p in policies if p is not None and p.window is not None}  # fmt: skip
    catalog_doc = {k: doc.get(k) for k in ("apiVersion", "kind", "metadata", "spec")} if doc else None
    tables = list(indexes.table_manifests.get((namespace, spec.catalog)) or ())  # an ingest's evolve: its table's mode
    return RunContext(
        catalog=catalog,
        catalog_doc=catalog_doc,
        catalog_ready=bool(doc and doc.get("ready")),
        max_jobs=min(limits) if limits else None,  # the strictest of the catalog's policies
        spark=effective_spark(spec.spark, owner.spark if owner else None, defaults),
        others=tuple(indexes.active_runs.get((namespace, spec.catalog)) or ()),
        created=str(meta.get("creationTimestamp") or ""),
        policy=owner_uid,
        windows=windows,
        table_evolution=table_evolution(spec.table, tables) if spec.table else None,
    )


_parsed_jobs: dict[tuple[str, Any], JobSpec] = {}


def parsed_job(body: kopf.Body) -> JobSpec:
    """The run's manifest, parsed once per generation (a waiting run is looked at often)."""
    meta = body.get("metadata", {})
    key = (str(meta.get("uid")), meta.get("generation"))
    cached = _parsed_jobs.get(key)
    if cached is None:
        parsed = parse_manifest(body_manifest(body))
        assert isinstance(parsed, JobSpec)
        if len(_parsed_jobs) > 4096:
            _parsed_jobs.clear()
        cached = _parsed_jobs[key] = parsed
    return cached


def still_waiting(spec: JobSpec, uid: str, status: Mapping[str, Any], ctx: RunContext, now: float) -> bool:
    """A Pending run that would only wait again for what it already says it waits for (its
    retry not due, or the index showing its table or the slots still taken)."""
    if status.get("state") != PENDING:
        return False
    retry_at = parse_stamp(status.get("nextAttemptAt"))
    if retry_at is not None and now < retry_at:
        return True
    return bool(status.get("waitingFor")) and waits_for(spec, uid, ctx, now) == status.get("waitingFor")


def write_status(body: kopf.Body, current: Mapping[str, Any], tick: Tick) -> dict[str, Any]:
    """Merge-patch what the tick changed into the run's status; the status as the server
    has it afterwards (the job program writes ``progress`` and ``jobReport`` alongside)."""
    fields: dict[str, Any] = {}
    for key, value in tick.status.items():
        if key == "conditions":
            value = merge_conditions(current.get("conditions"), value)
        if current.get(key) != value:
            fields[key] = value
    if not fields:
        return dict(current)
    meta = body["metadata"]
    written = custom_objects_api().patch_namespaced_custom_object_status(
        GROUP, VERSION, meta["namespace"], JOBS, meta["name"], {"status": fields}
    )
    return dict(written.get("status") or {})


async def tick_once(
    body: kopf.Body, status: dict[str, Any], memo: kopf.Memo, cancel: str | None, indexes: Indexes
) -> tuple[Tick, dict[str, Any]]:
    """One tick of the run and its publication: (the tick, the status afterwards)."""
    ctl: Controller = memo.controller
    meta = body.get("metadata", {})
    uid = str(meta.get("uid"))
    now = time.time()
    try:
        spec = parsed_job(body)
    except SpecError as exc:  # the CRD lets little through; what does fails the run at once
        tick = Tick().end(FAILED, "; ".join(exc.problems) + "; nothing was launched", now, meta.get("generation"))
        return tick, await ctl.call(write_status, body, status, tick)
    ctx = run_context(spec, body, indexes, memo.spark_defaults)
    runs = _runs(memo)
    if cancel is None and not spec.cancel and still_waiting(spec, uid, status, ctx, now):
        return Tick(again_in=WAIT_INTERVAL), status  # nothing new: no worker thread, no write
    try:
        tick = await ctl.call(runs.tick, spec, uid, status, ctx, cancel or (CANCELLED if spec.cancel else None))
    except DuckLakeError as exc:  # the catalog unreachable, its credentials missing: the run waits
        tick = Tick(status={"message": ctl.scrub(f"waiting: {exc}")}, again_in=5.0)
        if isinstance(exc, CatalogUnavailable) and ctx.catalog is not None:
            pool, target = ctl.pool, ctx.catalog
            ctl.probe(catalog_channel(spec.ref.namespace, spec.catalog), lambda: pool.catalog(target)[0].snapshot())
    except Exception as exc:  # noqa: BLE001 - the API server's trouble (a Lease, a launch): look again soon
        said = ctl.scrub(_one_line(exc))
        log.warning("run %s/%s: %s", spec.ref.namespace, spec.ref.name, said)
        tick = Tick(again_in=5.0)
        if (status.get("state") or "") != RUNNING:  # e.g. a webhook refused the launch
            # what it waited for before (its table, a slot) is not what holds it up now
            tick.status.update(waitingFor=None, message=f"waiting: a request to the API server failed, trying again "
                                                        f"in 5 s: {said}")  # fmt: skip
    written = await ctl.call(write_status, body, status, tick)
    runs.published(status, written)
    for type_, reason, message in tick.events:
        kopf.event(body, type=type_, reason=reason, message=ctl.scrub(message))
    state = written.get("state") or ""
    metrics.run_seen(uid, spec.operation, state, parse_stamp(written.get("startTime")), now)
    if tick.attempt_report:
        metrics.job_commits(spec.operation, tick.attempt_report)
    if state in ENDED_STATES:  # a table waiting for its heavy change's run looks again
        ctl.signals.notify(catalog_channel(spec.ref.namespace, spec.catalog))
    return tick, written


async def _sleep(
    ctl: Controller, seen: dict[Hashable, int], seconds: float, stopped: kopf.DaemonStopped, body: kopf.Body
) -> None:
    """Until ``seconds`` pass, a channel in ``seen`` moves, ``spec.cancel`` is set (the body
    is kept current by the watch), or the daemon is stopped."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not stopped and loop.time() < deadline and not body.get("spec", {}).get("cancel"):
        if await ctl.signals.wait(seen, timeout=min(1.0, max(deadline - loop.time(), 0.0))):
            return


# kopf stops a daemon whose ``when`` stops matching, and the run's own terminal status does
# that as soon as the watch brings it back: often while the tick that wrote it is still
# awaiting the write. Without a grace period kopf cancels at once, and the tick's events,
# metrics and wake-ups were lost (a ``Succeeded`` run without its ``Succeeded`` event). The
# grace lets the tick end (the loop checks ``stopped`` at least once a second), and the
# shield below keeps a tick whole even when kopf does cancel (at the end of the grace).
STOP_GRACE = 10.0


@kopf.daemon(GROUP, VERSION, JOBS, when=_active, cancellation_backoff=STOP_GRACE, cancellation_timeout=60.0)
async def run_job(body: kopf.Body, stopped: kopf.DaemonStopped, memo: kopf.Memo, **kwargs: Any) -> None:
    """A run's life until it ends (``Runs.tick`` after ``Runs.tick``)."""
    ctl: Controller = memo.controller
    indexes = Indexes.of(kwargs)
    meta, spec = body.get("metadata", {}), body.get("spec", {})
    uid, catalog = str(meta.get("uid")), str(spec.get("catalogRef", {}).get("name"))
    channels = [run_channel(uid), catalog_runs_channel(meta.get("namespace"), catalog),
                catalog_channel(meta.get("namespace"), catalog)]  # fmt: skip
    status = dict(body.get("status") or {})
    while not stopped:
        live = body.get("status") or {}
        status.update({k: live[k] for k in PROGRAM_FIELDS if k in live})
        seen = ctl.note(channels)
        tick, status = await asyncio.shield(tick_once(body, status, memo, None, indexes))
        if tick.again_in is None or status.get("state") in ENDED_STATES:
            return
        await _sleep(ctl, seen, tick.again_in, stopped, body)


@kopf.on.delete(GROUP, VERSION, JOBS, when=_active)
async def run_deleted(body: kopf.Body, status: kopf.Status, memo: kopf.Memo, **kwargs: Any) -> None:
    """Deleting a run that has not ended cancels it: what it launched is stopped, its files
    go unless its commit landed, its locks are released; then the deletion proceeds."""
    tick, written = await tick_once(body, dict(status), memo, DELETED, Indexes.of(kwargs))
    if tick.again_in is not None and written.get("state") not in ENDED_STATES:
        raise kopf.TemporaryError(written.get("message") or "stopping the run", delay=1)


def _one_line(exc: BaseException) -> str:
    said = api_error(exc)  # the kubernetes client's ApiException: its text is the whole response
    if said is not None:
        return said
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
