"""DuckLakeJob runs: one tick of a run's life, no kopf.

``Pending → Running → Succeeded | Failed | Cancelled``. Each tick looks at where the run is
and does the next thing: check the request (operation and parameters, catalog Ready, table
present, launcher installed), wait while its policy's window is closed, take the table's
lock and a catalog slot, launch an attempt, follow it, and end it. The catalog is the
source of truth for "did it commit": before launching, after a failure, a timeout or a
cancellation, and after a restart, the run asks the catalog for a snapshot carrying its
uid, so a landed run is never run again and is reported Succeeded.

Nothing is concluded about an attempt while it may still run: a cancelled or timed-out
attempt is stopped first (its process group, or its pods), then the catalog's sessions of
the job are waited out, and only then is the catalog asked whether it landed and are the
files no catalog row refers to deleted. A failed attempt that committed nothing is retried
with backoff while ``retries`` allows. The tick returns the status fields to write, the
events to post and when to look again; the kopf daemon writes them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from ...api.v1alpha1.catalog import CatalogSpec
from ...api.v1alpha1.job import CANCELLED, ENDED_STATES, FAILED, PENDING, RUNNING, SUCCEEDED, JobSpec
from ...api.v1alpha1.names import COMPLETE, FAILED_CONDITION
from ...catalog.job_commits import (
    delete_uncommitted_files,
    end_job_sessions,
    find_job_commit,
    job_commits,
    job_sessions_ended,
    uncommitted_files,
)
from ...errors import DuckLakeError, LauncherBusy
from ...model.job_marker import EXIT_UNKNOWN, ends_run, file_marker, job_commit_report
from ...model.job_params import OPERATIONS
from ...model.names import fold
from ...model.state import CatalogState, SnapshotRecord, TableState
from ...use_cases import s3_settings
from ..catalog_pool import CatalogPool
from ..launchers.spec import Launched, Launcher, Observed
from ..status import condition, table_health
from .attempts import FIGURES, attempt_failure, exit_code, failure_reason, launched_attempt, run_report, time_left
from .locks import Holder, Leases, lease_name, slot_names
from .run_context import RunContext
from .run_document import attempt_spec
from .tick import RETRY_BACKOFF, RETRY_BACKOFF_CAP, WAIT_INTERVAL, Tick, parse_stamp, stamp, with_duration
from .waiting import waits_for

log = logging.getLogger(__name__)


CATALOG_GONE = "DuckLakeCatalog {!r} no longer exists, so whether it committed was not checked and its files were kept"
ORPHANS = "deleteOrphanFiles removes them"
NOT_RETRIED = "not retried: another attempt would fail the same way"


@dataclass(frozen=True)
class After:
    """What the catalog says of an attempt that has stopped: the commit that ended the run,
    else what it committed (sentence) and what became of its files (sentence)."""

    landed: SnapshotRecord | None
    committed: str
    files: str


class Runs:
    def __init__(
        self,
        pool: CatalogPool,
        leases: Leases,
        launchers: Mapping[str, Launcher],
        *,
        clock: Callable[[], float] = time.time,
        scrub: Callable[[str], str] = lambda text: text,
        retry_backoff: float = RETRY_BACKOFF,
        settle_seconds: float = 10.0,
    ) -> None:
        self.pool = pool
        self.leases = leases
        self.launchers = launchers
        self.clock = clock
        self.scrub = scrub
        self.retry_backoff = retry_backoff
        self.settle_seconds = settle_seconds

    # ------------------------------------------------------------------ one tick

    def tick(
        self, spec: JobSpec, uid: str, status: Mapping[str, Any], ctx: RunContext, cancel: str | None = None
    ) -> Tick:
        """``cancel``: why the run is to stop (``spec.cancel``, the DuckLakeJob deleted), or None."""
        now = self.clock()
        state = status.get("state") or ""
        if state in ENDED_STATES:
            return Tick(again_in=None)
        if cancel:
            tick = self._stop(spec, uid, status, ctx, now, CANCELLED, cancel)
        elif state == RUNNING:
            tick = self._follow(spec, uid, status, ctx, now)
        else:
            tick = self._start(spec, uid, status, ctx, now)
        return with_duration(tick, status, now)

    def _start(self, spec: JobSpec, uid: str, status: Mapping[str, Any], ctx: RunContext, now: float) -> Tick:
        tick, generation = Tick(), spec.ref.generation
        if not status.get("state"):  # new: say so first (the check below reads the catalog), go on at once
            return Tick(status={"state": PENDING}, again_in=0.0)
        if status.get("attempts") is None:  # not checked yet: check the request once, before anything is taken
            tick.status.update(attempts=0, observedGeneration=generation, conditions=[
                condition(COMPLETE, False, PENDING, "", generation),
                condition(FAILED_CONDITION, False, PENDING, "", generation)])  # fmt: skip
            problem = self._invalid(spec, ctx)
            if problem is not None:
                return tick.end(FAILED, problem + "; nothing was launched", now, generation)
        retry_at = parse_stamp(status.get("nextAttemptAt"))
        if retry_at is not None and now < retry_at:
            tick.again_in = retry_at - now
            return tick
        attempt = int(status.get("attempts") or 0) + 1
        start = parse_stamp(status.get("startTime")) or now  # a retry's run started with its first attempt
        left = time_left(spec.timeout_seconds, start, now)
        if left == 0:  # a retry that waited (for its table, a slot, its window) past the run's deadline
            return self._stop(spec, uid, status, ctx, now, FAILED, f"timed out after {spec.timeout_seconds} s "
                              f"(retries included) before attempt {attempt} could start")  # fmt: skip
        busy = waits_for(spec, uid, ctx, now, holding=bool(status.get("locks")))
        if busy is not None:  # a waiting run holds nothing (its window closed while it held them)
            self._unlock(spec, uid, tick, status)
            return self._waiting(tick, status, busy)
        if ctx.catalog is None:  # deleted since the run was accepted
            return self._stop(spec, uid, status, ctx, now, FAILED, f"DuckLakeCatalog {spec.catalog!r} no longer exists")
        waiting = self._lock(spec, uid, status, ctx, tick)
        if waiting is not None:
            return self._waiting(tick, status, waiting)
        name = str(ctx.spark.get("launcher"))
        stopping = self._stop_stray(spec, uid, status, ctx, attempt, name)
        if stopping is not None:  # looked at again as a stopping run is
            tick.status["message"] = stopping
            return tick
        if tick.status["locks"] != list(status.get("locks") or []) or status.get("launcher") not in (None, name):
            # the Leases taken now and the launcher: written to the status before anything is
            # launched, so a launch the API server fails (the tick raises, its writes are lost)
            # leaves them listed, and a cancel finds what it left (``_leftover``). A status
            # without the launcher is not waited on: a CRD from before the field (Helm
            # upgrades no CRD) drops it, and the run must still launch
            tick.status.update(waitingFor=None, launcher=name, message=f"launching attempt {attempt}")
            tick.again_in = 0.0
            return tick
        catalog, _ = self.pool.catalog(ctx.catalog)
        landed = find_job_commit(catalog, uid)
        if landed is not None:
            self._unlock(spec, uid, tick, status)
            return self._succeeded(tick, spec, uid, status, ctx, landed, now)
        state = self.pool.state(ctx.catalog, catalog)  # the base the run plans against: checked now
        table = self._table(state, spec)
        try:
            deadline = start + spec.timeout_seconds if spec.timeout_seconds else None
            launched = self.launchers[name].launch(attempt_spec(spec, uid, ctx, attempt, left, deadline))
        except LauncherBusy as exc:  # no room for it now: wait, holding nothing
            self._unlock(spec, uid, tick, status)
            return self._waiting(tick, status, str(exc))
        except DuckLakeError as exc:
            self._unlock(spec, uid, tick, status)
            return tick.end(FAILED, self.scrub(f"could not launch: {exc}"), now, generation)
        timeout = spec.timeout_seconds
        tick.status.update(
            state=RUNNING,
            attempts=attempt,
            startTime=stamp(start),
            deadline=stamp(start + timeout) if timeout else None,
            baseSnapshot=state.snapshot.snapshot_id,
            launched={"kind": launched.kind, "name": launched.name, "detail": launched.detail},
            message=f"attempt {attempt} launched as {launched.kind} {launched.name}",
            waitingFor=None,
            nextAttemptAt=None,
            progress="launched",
            conditions=[
                condition(COMPLETE, False, RUNNING, "", generation),
                condition(FAILED_CONDITION, False, RUNNING, "", generation),
            ],  # fmt: skip
        )
        if attempt > 1:
            tick.status["jobReport"] = None  # the last attempt's: this one's program writes its own
        if attempt == 1 and table is not None:
            tick.status["before"] = table_health(table)
        tick.events.append(("Normal", "Launched", tick.status["message"]))
        return tick

    def _follow(self, spec: JobSpec, uid: str, status: Mapping[str, Any], ctx: RunContext, now: float) -> Tick:
        deadline = parse_stamp(status.get("deadline"))
        failure = status.get("attemptFailure")
        if deadline is not None and now >= deadline:
            why = f"timed out after {spec.timeout_seconds} s"
            if failure:  # the attempt had failed already; its objects were still going
                why += f" (its attempt had failed: {failure.get('message')})"
            return self._stop(spec, uid, status, ctx, now, FAILED, why)
        launched = launched_attempt(status)
        if launched is None:  # Running without an attempt: not written by this controller
            return Tick(status={"state": PENDING}, again_in=0.0)
        launcher = self._launcher(launched)
        if failure:  # seen failed while its objects ran: they are being stopped
            observed = Observed(FAILED, str(failure.get("message") or "failed"),
                                retriable=bool(failure.get("retriable", True)), stop=True)  # fmt: skip
        else:
            observed = launcher.observe(launched)
        if observed.state in (PENDING, RUNNING):
            tick = Tick()
            if observed.state == PENDING and status.get("progress") in (None, "launched"):
                tick.status["message"] = observed.message  # e.g. what the pod waits for
            return tick
        tick = Tick()
        if observed.stop:  # e.g. a pod that cannot start: nothing else ends it
            tick.status["attemptFailure"] = attempt_failure(observed)
            launcher.cancel(launched)
        if not launcher.stopped(launched):  # e.g. a deleted Job whose pod is still terminating
            tick.status["message"] = (
                f"{self.scrub(observed.message)}; waiting for {launched.kind} {launched.name} to stop"
            )
            return tick
        result = observed.detail.get("result")
        said = run_report(None, uid, status, result)  # the program's own word on the attempt
        tick = Tick(attempt_report=said, status={"attemptFailure": None})
        self._unlock(spec, uid, tick, status)
        if ctx.catalog is None:  # the catalog's manifest was deleted meanwhile: the catalog cannot be asked
            state = SUCCEEDED if observed.state == SUCCEEDED else FAILED
            why = f"{self.scrub(observed.message)}; {CATALOG_GONE.format(spec.catalog)}"
            return tick.end(state, why, now, spec.ref.generation)
        program = result or status.get("jobReport") or {}
        keep = "its commit's outcome is unknown" if exit_code(observed.detail, status) == EXIT_UNKNOWN else None
        after = self._after(ctx.catalog, spec, uid, keep=keep, program=program)
        if after.landed is not None:
            return self._succeeded(tick, spec, uid, status, ctx, after.landed, now)
        if observed.state == SUCCEEDED:  # nothing to commit (a dry run, nothing to do)
            return self._succeeded(tick, spec, uid, status, ctx, None, now, result=observed.detail.get("result"))
        reason = self.scrub(failure_reason(observed, program))
        committed, files = after.committed, after.files
        attempts = int(status.get("attempts") or 1)
        wait = min(self.retry_backoff * 2 ** (attempts - 1), RETRY_BACKOFF_CAP)
        if attempts <= spec.retries and not observed.retriable:
            return tick.end(FAILED, f"{reason}; {committed}, {files}; {NOT_RETRIED}", now, spec.ref.generation)
        if attempts <= spec.retries and deadline is not None and now + wait >= deadline:
            why = f"not retried: the run's timeout ({spec.timeout_seconds} s, retries included) ends before a retry"
            return tick.end(FAILED, f"{reason}; {committed}, {files}; {why}", now, spec.ref.generation)
        if attempts <= spec.retries:
            tick.status.update(
                state=PENDING,
                nextAttemptAt=stamp(now + wait),
                progress=None,
                message=f"attempt {attempts} failed ({reason}); {committed}, {files}; retrying in {wait:.0f} s",
            )
            tick.events.append(("Warning", "AttemptFailed", tick.status["message"]))
            tick.again_in = wait
            return tick
        return tick.end(FAILED, f"{reason}; {committed}, {files}", now, spec.ref.generation)

    def _stop(
        self, spec: JobSpec, uid: str, status: Mapping[str, Any], ctx: RunContext, now: float, state: str, why: str
    ) -> Tick:
        """Cancel or time out: stop what runs, wait until it has stopped, then ask the
        catalog whether it landed anyway. Past the run's deadline nothing is waited for: the
        job program refuses to commit from then on (``commit_guard``), its catalog sessions
        are ended, and the catalog decides at once, even while its pods have not stopped
        (their node unreachable: they go when it is back)."""
        tick = Tick(status={"attemptFailure": None})
        leftover = None
        if status.get("state") != RUNNING and status.get("locks"):  # a launch may have begun and never returned
            leftover = self._leftover(spec, uid, status, ctx)
        launched = leftover or launched_attempt(status)  # else its last attempt's (a retry's), if any
        running = False
        if launched is not None:
            launcher = self._launcher(launched)
            launcher.cancel(launched)
            if not launcher.stopped(launched):
                deadline = parse_stamp(status.get("deadline"))
                if deadline is None or now < deadline:
                    tick.status["message"] = f"{why}: stopping {launched.kind} {launched.name}"
                    return tick
                running = True
        # a run whose status shows no launch may hold a Lease it does not list: taken in a tick
        # that failed before writing it (the API server failing the slot's Lease after the table's)
        self._unlock(spec, uid, tick, status, also=self._lock_names(spec, ctx) if launched in (None, leftover) else ())
        if launched is None:
            return tick.end(state, f"{why}; nothing was launched", now, spec.ref.generation)
        if leftover is not None:  # deleted above; the run's status never showed it running
            self._launcher(launched).release(launched)
            why += f"; what its unfinished launch of {launched.kind} {launched.name} had created was deleted"
        if ctx.catalog is None:
            return tick.end(state, f"{why}; {CATALOG_GONE.format(spec.catalog)}", now, spec.ref.generation)
        keep = None
        if running:
            keep = (
                f"{launched.kind} {launched.name} has not stopped yet (its node may be unreachable; it cannot commit)"
            )
        after = self._after(ctx.catalog, spec, uid, keep=keep, program=status.get("jobReport") or {})
        if after.landed is not None:
            return self._succeeded(tick, spec, uid, status, ctx, after.landed, now, note=f"{why}, but it had committed")
        return tick.end(state, f"{why}; {after.committed}, {after.files}", now, spec.ref.generation)

    def _leftover(self, spec: JobSpec, uid: str, status: Mapping[str, Any], ctx: RunContext) -> Launched | None:
        """What a launch of the run's next attempt that never returned left behind, if anything:
        looked for with the launcher its status says it went to, then with the one its
        settings name, then with the others the cluster serves (a status an earlier version
        of the operator wrote does not say)."""
        attempt = attempt_spec(spec, uid, ctx, int(status.get("attempts") or 0) + 1, None)
        first = [str(n) for n in (status.get("launcher"), ctx.spark.get("launcher")) if n in self.launchers]
        for name in dict.fromkeys([*first, *self.launchers]):
            launcher = self.launchers[name]
            if name not in first and launcher.available() is not None:
                continue
            found = launcher.leftover(attempt)
            if found is not None:
                return found
        return None

    def _stop_stray(
        self, spec: JobSpec, uid: str, status: Mapping[str, Any], ctx: RunContext, attempt: int, name: str
    ) -> str | None:
        """The run's settings name launcher ``name`` now; its status says its launch went to
        another (its policy's ``spark.launcher`` edited since). What a launch of ``attempt``
        there that never returned left is stopped before the attempt goes to ``name``, so no
        two programs run it: the message while it stops, None once nothing of it is left."""
        before = status.get("launcher")
        if not before or before == name or before not in self.launchers:
            return None
        launcher = self.launchers[str(before)]
        stray = launcher.leftover(attempt_spec(spec, uid, ctx, attempt, None))
        if stray is None:
            return None
        launcher.cancel(stray)
        if not launcher.stopped(stray):
            return (
                f"launching attempt {attempt} with {name}, as the run's settings say now: stopping {stray.kind} "
                f"{stray.name}, which its launch with {before} had created"
            )
        launcher.release(stray)
        return None

    def published(self, before: Mapping[str, Any], after: Mapping[str, Any]) -> None:
        """The run's status went from ``before`` to ``after`` on the API server: an attempt
        it showed running and no longer does gives back what its launcher held for it (a
        Local program's place), so no more runs show ``Running`` than there are places."""
        launched = launched_attempt(before)
        if launched is None or before.get("state") != RUNNING or after.get("state") == RUNNING:
            return
        launcher = self.launchers.get(launched.kind)
        if launcher is not None:
            launcher.release(launched)

    # ------------------------------------------------------------------ pieces

    def _invalid(self, spec: JobSpec, ctx: RunContext) -> str | None:
        op = OPERATIONS.get(spec.operation)
        if op is None or not op.available:
            available = ", ".join(n for n, o in OPERATIONS.items() if o.available)
            return f"operation {spec.operation} is not available (available: {available})"
        # parameters and the table's presence were checked with the manifest (api.load)
        if ctx.catalog is None:
            return f"DuckLakeCatalog {spec.catalog!r} does not exist in namespace {spec.ref.namespace}"
        if not ctx.catalog_ready:
            return f"DuckLakeCatalog {spec.catalog!r} is not Ready"
        name = str(ctx.spark.get("launcher"))
        launcher = self.launchers.get(name)
        if launcher is None:
            return f"spark.launcher {name!r} is not one of {', '.join(self.launchers)}"
        problem = launcher.available()
        if problem is not None:
            return problem
        if spec.table:
            catalog, _ = self.pool.catalog(ctx.catalog)
            # a state checked within the last second is trusted for a table that is there; a
            # missing one fails the run for good, so a fresh read confirms it (the table may
            # have been created since: by DuckDB, just before this run)
            if self._table(self.pool.state(ctx.catalog, catalog, max_age=1.0), spec) is None and (
                self._table(self.pool.state(ctx.catalog, catalog), spec) is None
            ):
                return f"table {spec.table} does not exist in catalog {spec.catalog}"
        return None

    def _waiting(self, tick: Tick, status: Mapping[str, Any], what: str) -> Tick:
        if status.get("waitingFor") != what:
            tick.status.update(state=PENDING, waitingFor=what, message=f"waiting for {what}")
            tick.events.append(("Normal", "Waiting", tick.status["message"]))
        tick.again_in = WAIT_INTERVAL
        return tick

    @staticmethod
    def _table(state: CatalogState, spec: JobSpec) -> TableState | None:
        if not spec.table:
            return None
        schema, _, name = spec.table.partition(".")
        return state.table(schema, name)

    def _launcher(self, launched: Launched) -> Launcher:
        return self.launchers[launched.kind]

    def _after(
        self, catalog_spec: CatalogSpec, spec: JobSpec, uid: str, *, keep: str | None, program: Mapping[str, Any]
    ) -> After:
        """What the catalog says of an attempt that has stopped (or can no longer commit).
        First the job's catalog sessions are ended and waited out (a COMMIT sent just before
        its process died is then decided); then its commit is looked for; if it did not land,
        the files it wrote that no catalog row refers to are deleted, unless ``keep`` says why
        not (its commit's outcome is unknown, its pods still run) or a session would not go.
        ``program``: what the job program reported (its files it deleted itself)."""
        catalog, _ = self.pool.catalog(catalog_spec)
        try:
            end_job_sessions(catalog, uid)
        except DuckLakeError as exc:  # not the job's role: its sessions end when its process does
            log.warning("%s: %s", spec.ref, self.scrub(str(exc)))
        settled = job_sessions_ended(catalog, uid, timeout=self.settle_seconds)
        commits = job_commits(catalog, uid)
        ending = [s for s in commits if ends_run(job_commit_report(s.commit_extra_info, uid) or {})]
        if ending:
            return After(ending[0], "", "")
        committed = (
            f"{len(commits)} of its commits landed (snapshots {', '.join(str(s.snapshot_id) for s in commits)}; "
            "run it again to finish)" if commits else "nothing was committed"
        )  # fmt: skip
        if not spec.table:
            return After(None, committed, "it writes no files")
        return After(None, committed, self._files(catalog_spec, catalog, spec, uid, keep or (
            None if settled else "a catalog session of it did not end"), program))  # fmt: skip

    def _files(
        self, catalog_spec: CatalogSpec, catalog: Any, spec: JobSpec, uid: str, keep: str | None,
        program: Mapping[str, Any],
    ) -> str:  # fmt: skip
        """What became of the attempt's uncommitted files, as it is: deleted by the operator
        now, deleted by the job program before (none left), or kept (``keep``: why), and which."""
        table, s3 = str(spec.table), s3_settings(catalog_spec, self.pool.credentials)
        where = f"named *-{file_marker(uid)}.parquet under table {table}'s directory"
        try:
            if keep is not None:
                left = uncommitted_files(catalog, table, uid, s3=s3)
                if not left:
                    return f"it left no uncommitted files ({keep})"
                return f"its {len(left)} uncommitted files were kept, as {keep} ({where}; {ORPHANS})"
            deleted = delete_uncommitted_files(catalog, table, uid, s3=s3)
        except (DuckLakeError, OSError) as exc:
            log.warning("the uncommitted files of %s: %s", spec.ref, self.scrub(str(exc)))
            return f"its uncommitted files ({where}) could not be listed or deleted ({self.scrub(str(exc))}; {ORPHANS})"
        if deleted:
            return f"the operator deleted its {deleted} uncommitted files"
        if (program.get("report") or {}).get("uncommittedFiles") == "deleted":
            return "the job program deleted the files it wrote"
        return "it left no uncommitted files"

    def _lock(self, spec: JobSpec, uid: str, status: Mapping[str, Any], ctx: RunContext, tick: Tick) -> str | None:
        """Take the table's Lease (a catalog-wide run: the catalog's), then a catalog slot;
        None when all are ours, else what the run waits for (holding nothing). Leases the
        status lists are ours already: written by an earlier tick of this run once taken."""
        namespace, holder = spec.ref.namespace or "default", Holder(uid, spec.ref.name)
        held = list(status.get("locks") or [])
        what = f"table {spec.table}" if spec.table else f"catalog-wide maintenance of {spec.catalog}"
        table, *slots = self._lock_names(spec, ctx)
        if table not in held:
            other = self.leases.acquire(namespace, table, holder, what)
            if other is not None:
                self._unlock(spec, uid, tick, status)
                return f"DuckLakeJob {other.name}, which holds {what}"
            held.append(table)
        if slots and not set(slots) & set(held):
            taken = {name for o in ctx.others if o.uid != uid for name in o.locks}  # tried last
            slot = self.leases.acquire_slot(namespace, slots, holder, f"catalog {spec.catalog}", taken)
            if slot is None:
                tick.status["locks"] = held
                self._unlock(spec, uid, tick, status)
                return f"a slot in catalog {spec.catalog}: {ctx.max_jobs} runs (maxJobsPerCatalog) running"
            held.append(slot)
        tick.status["locks"] = held
        return None

    @staticmethod
    def _lock_names(spec: JobSpec, ctx: RunContext) -> list[str]:
        """Every Lease the run may take: its table's (a catalog-wide run: the catalog's)
        first, then its catalog's slots."""
        namespace = spec.ref.namespace or "default"
        table = lease_name("table", namespace, spec.catalog, fold(spec.table) if spec.table else "*")
        return [table, *slot_names((namespace, spec.catalog), ctx.max_jobs or 0)]

    def _unlock(
        self, spec: JobSpec, uid: str, tick: Tick, status: Mapping[str, Any], also: Collection[str] = ()
    ) -> None:
        """Release the Leases the status lists, those this tick took, and ``also`` these (each
        only if the run holds it)."""
        names = dict.fromkeys([*(status.get("locks") or []), *(tick.status.get("locks") or []), *also])
        self._release(spec.ref.namespace or "default", list(names), uid)
        tick.status["locks"] = []

    def _release(self, namespace: str, names: list[str], uid: str) -> None:
        for name in names:
            self.leases.release(namespace, name, uid)

    def _succeeded(
        self, tick: Tick, spec: JobSpec, uid: str, status: Mapping[str, Any], ctx: RunContext, landed: Any,
        now: float, note: str | None = None, result: Mapping[str, Any] | None = None,
    ) -> Tick:  # fmt: skip
        report = run_report(landed, uid, status, result)
        figures = {k: report.get(k) for k in FIGURES}
        tick.status.update({k: v for k, v in figures.items() if v is not None})
        if landed is not None:
            tick.status["committedSnapshot"] = landed.snapshot_id
        if report.get("ranOn"):
            tick.status["ranOn"] = report["ranOn"]
        if spec.table and ctx.catalog is not None:
            catalog, _ = self.pool.catalog(ctx.catalog)
            at_least = landed.snapshot_id if landed is not None else None
            table = self._table(self.pool.state(ctx.catalog, catalog, at_least=at_least), spec)
            if table is not None:
                tick.status["after"] = table_health(table)
        said = result or status.get("jobReport") or {}
        what = f"committed snapshot {landed.snapshot_id}" if landed is not None else (
            said.get("message") or "nothing to commit")  # fmt: skip
        message = f"{note}: {what}" if note else what
        if figures.get("filesRead") is not None:
            message += f"; {figures['filesRead']} files read, {figures.get('filesWritten') or 0} written"
        return tick.end(SUCCEEDED, message, now, spec.ref.generation)
