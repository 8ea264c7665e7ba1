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
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..catalog.job_commits import find_job_commit
from ..errors import NOTHING_COMMITTED, DuckLakeError, LauncherBusy
from ..maintenance.windows import closed_until, describe_instant, describe_window, in_window, window_zone
from ..model import timestamps
from ..model.job_marker import EXIT_UNKNOWN, ends_run, file_marker, job_commit_report
from ..model.job_params import OPERATIONS
from ..model.names import fold, same_name
from ..model.run_env import CATALOG_PASSWORD, CATALOG_USERNAME, S3_KEY_ID, S3_SECRET_KEY
from ..model.spec import (
    CATALOG_LABEL,
    DEFAULT_SCHEMA,
    EVOLUTION_MODE,
    OPERATION_LABEL,
    CatalogSpec,
    JobSpec,
    PostgresSpec,
    Window,
)
from ..model.state import CatalogState, SnapshotRecord, TableState
from ..reconcile import s3_settings
from .launchers.spec import Launched, Launcher, LaunchSpec, Observed, launch_spec
from .locks import Holder, Leases, lease_name
from .reconcilers import CatalogPool
from .status import condition, table_health

log = logging.getLogger(__name__)
ACTIVE = ("", "Pending", "Running")
TERMINAL = ("Succeeded", "Failed", "Cancelled")
RETRY_BACKOFF = 10.0  # seconds before the first retry; doubles per attempt
RETRY_BACKOFF_CAP = 600.0
FOLLOW_INTERVAL = 2.0  # seconds between looks at a running attempt (a Local one also wakes its run on exit)
FIGURES = ("filesRead", "filesWritten", "bytesRead", "bytesWritten", "rowsRead", "rowsWritten")  # report -> status
WAIT_INTERVAL = 10.0  # a waiting run looks again at least this often (it is woken when a run of its catalog ends)


@dataclass
class Tick:
    """What one tick decided: status fields to merge, events to post, and when to look again."""

    status: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, str, str]] = field(default_factory=list)
    again_in: float | None = FOLLOW_INTERVAL  # None: the run has ended
    attempt_report: Mapping[str, Any] | None = None  # the program's report of an attempt that ended (for metrics)

    def end(self, state: str, message: str, now: float, generation: int | None) -> Tick:
        ok = state == "Succeeded"
        self.status.update(state=state, message=message, completionTime=stamp(now), waitingFor=None,
                           nextAttemptAt=None)  # fmt: skip
        if ok:
            self.status["progress"] = "done"
        self.status["conditions"] = [
            condition("Complete", ok, state, message if ok else "", generation),
            condition("Failed", state == "Failed", state, message if state == "Failed" else "", generation),
        ]
        self.events.append(("Warning" if state == "Failed" else "Normal", state, message))
        self.again_in = None
        return self


def stamp(t: float) -> str:
    return timestamps.stamp(datetime.fromtimestamp(t, UTC))


def parse_stamp(text: str | None) -> float | None:
    parsed = timestamps.parse(text)
    return parsed.timestamp() if parsed is not None else None


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


@dataclass(frozen=True)
class OtherRun:
    """Another run of the same catalog that has not ended, as the controller last saw it."""

    name: str
    uid: str
    table: str | None
    state: str  # Pending | Running
    created: str  # creationTimestamp: waiting runs go in this order
    holds: bool  # it holds locks (Running, or between taking them and launching)
    retry_at: str | None = None  # a failed attempt's retry waits until then
    locks: tuple[str, ...] = ()  # the Leases it holds
    policy: str | None = None  # the uid of the policy that created it (its window applies)


@dataclass(frozen=True)
class PolicyWindow:
    """The window of a policy: its runs start only inside it."""

    name: str  # the policy's, for messages
    window: Window


@dataclass(frozen=True)
class RunContext:
    """Everything a tick needs besides the job itself."""

    catalog: CatalogSpec | None
    catalog_doc: dict[str, Any] | None  # the catalog manifest as in the cluster (for the run document)
    catalog_ready: bool
    max_jobs: int | None  # the catalog's limit of concurrent runs (None: no limit)
    spark: Mapping[str, Any]  # the effective spark settings (job over policy over defaults)
    others: tuple[OtherRun, ...] = ()
    created: str = ""  # this run's creationTimestamp
    policy: str | None = None  # the uid of the policy that created this run
    windows: Mapping[str, PolicyWindow] = field(default_factory=dict)  # by policy uid: the catalog's policies' windows
    table_evolution: str | None = None  # evolution.mode of the DuckLakeTable declaring the table (None: none)


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
        if state in TERMINAL:
            return Tick(again_in=None)
        if cancel:
            tick = self._stop(spec, uid, status, ctx, now, "Cancelled", cancel)
        elif state == "Running":
            tick = self._follow(spec, uid, status, ctx, now)
        else:
            tick = self._start(spec, uid, status, ctx, now)
        return _with_duration(tick, status, now)

    def _start(self, spec: JobSpec, uid: str, status: Mapping[str, Any], ctx: RunContext, now: float) -> Tick:
        tick, generation = Tick(), spec.ref.generation
        if not status.get("state"):  # new: say so first (the check below reads the catalog), go on at once
            return Tick(status={"state": "Pending"}, again_in=0.0)
        if status.get("attempts") is None:  # not checked yet: check the request once, before anything is taken
            tick.status.update(attempts=0, observedGeneration=generation, conditions=[
                condition("Complete", False, "Pending", "", generation),
                condition("Failed", False, "Pending", "", generation)])  # fmt: skip
            problem = self._invalid(spec, ctx)
            if problem is not None:
                return tick.end("Failed", problem + "; nothing was launched", now, generation)
        retry_at = parse_stamp(status.get("nextAttemptAt"))
        if retry_at is not None and now < retry_at:
            tick.again_in = retry_at - now
            return tick
        attempt = int(status.get("attempts") or 0) + 1
        start = parse_stamp(status.get("startTime")) or now  # a retry's run started with its first attempt
        left = time_left(spec.timeout_seconds, start, now)
        if left == 0:  # a retry that waited (for its table, a slot, its window) past the run's deadline
            return tick.end("Failed", f"timed out after {spec.timeout_seconds} s (retries included) before attempt "
                            f"{attempt} could start; it was not launched", now, generation)  # fmt: skip
        busy = waits_for(spec, uid, ctx, now)
        if busy is not None:
            return self._waiting(tick, status, busy)
        if ctx.catalog is None:  # deleted since the run was accepted
            return tick.end("Failed", f"DuckLakeCatalog {spec.catalog!r} no longer exists; nothing was launched", now,
                            generation)  # fmt: skip
        waiting = self._lock(spec, uid, status, ctx, tick)
        if waiting is not None:
            return self._waiting(tick, status, waiting)
        catalog, _ = self.pool.catalog(ctx.catalog)
        landed = find_job_commit(catalog, uid)
        if landed is not None:
            self._unlock(spec, uid, tick, status)
            return self._succeeded(tick, spec, uid, status, ctx, landed, now)
        state = self.pool.state(ctx.catalog, catalog)  # the base the run plans against: checked now
        table = self._table(state, spec)
        name = str(ctx.spark.get("launcher"))
        try:
            deadline = start + spec.timeout_seconds if spec.timeout_seconds else None
            launched = self.launchers[name].launch(attempt_spec(spec, uid, ctx, attempt, left, deadline))
        except LauncherBusy as exc:  # no room for it now: wait, holding nothing
            self._unlock(spec, uid, tick, status)
            return self._waiting(tick, status, str(exc))
        except DuckLakeError as exc:
            self._unlock(spec, uid, tick, status)
            return tick.end("Failed", self.scrub(f"could not launch: {exc}"), now, generation)
        timeout = spec.timeout_seconds
        tick.status.update(
            state="Running",
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
                condition("Complete", False, "Running", "", generation),
                condition("Failed", False, "Running", "", generation),
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
            return self._stop(spec, uid, status, ctx, now, "Failed", why)
        launched = _launched(status)
        if launched is None:  # Running without an attempt: not written by this controller
            return Tick(status={"state": "Pending"}, again_in=0.0)
        launcher = self._launcher(launched)
        if failure:  # seen failed while its objects ran: they are being stopped
            observed = Observed("Failed", str(failure.get("message") or "failed"),
                                retriable=bool(failure.get("retriable", True)), stop=True)  # fmt: skip
        else:
            observed = launcher.observe(launched)
        if observed.state in ("Pending", "Running"):
            tick = Tick()
            if observed.state == "Pending" and status.get("progress") in (None, "launched"):
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
        said = _report(None, uid, status, result)  # the program's own word on the attempt
        tick = Tick(attempt_report=said, status={"attemptFailure": None})
        self._unlock(spec, uid, tick, status)
        if ctx.catalog is None:  # the catalog's manifest was deleted meanwhile: the catalog cannot be asked
            state = "Succeeded" if observed.state == "Succeeded" else "Failed"
            why = f"{self.scrub(observed.message)}; {CATALOG_GONE.format(spec.catalog)}"
            return tick.end(state, why, now, spec.ref.generation)
        program = result or status.get("jobReport") or {}
        keep = "its commit's outcome is unknown" if _exit_code(observed.detail, status) == EXIT_UNKNOWN else None
        after = self._after(ctx.catalog, spec, uid, keep=keep, program=program)
        if after.landed is not None:
            return self._succeeded(tick, spec, uid, status, ctx, after.landed, now)
        if observed.state == "Succeeded":  # nothing to commit (a dry run, nothing to do)
            return self._succeeded(tick, spec, uid, status, ctx, None, now, result=observed.detail.get("result"))
        reason = self.scrub(failure_reason(observed, program))
        committed, files = after.committed, after.files
        attempts = int(status.get("attempts") or 1)
        wait = min(self.retry_backoff * 2 ** (attempts - 1), RETRY_BACKOFF_CAP)
        if attempts <= spec.retries and not observed.retriable:
            return tick.end("Failed", f"{reason}; {committed}, {files}; {NOT_RETRIED}", now, spec.ref.generation)
        if attempts <= spec.retries and deadline is not None and now + wait >= deadline:
            why = f"not retried: the run's timeout ({spec.timeout_seconds} s, retries included) ends before a retry"
            return tick.end("Failed", f"{reason}; {committed}, {files}; {why}", now, spec.ref.generation)
        if attempts <= spec.retries:
            tick.status.update(
                state="Pending",
                nextAttemptAt=stamp(now + wait),
                progress=None,
                message=f"attempt {attempts} failed ({reason}); {committed}, {files}; retrying in {wait:.0f} s",
            )
            tick.events.append(("Warning", "AttemptFailed", tick.status["message"]))
            tick.again_in = wait
            return tick
        return tick.end("Failed", f"{reason}; {committed}, {files}", now, spec.ref.generation)

    def _stop(
        self, spec: JobSpec, uid: str, status: Mapping[str, Any], ctx: RunContext, now: float, state: str, why: str
    ) -> Tick:
        """Cancel or time out: stop what runs, wait until it has stopped, then ask the
        catalog whether it landed anyway. Past the run's deadline nothing is waited for: the
        job program refuses to commit from then on (``commit_guard``), its catalog sessions
        are ended, and the catalog decides at once, even while its pods have not stopped
        (their node unreachable: they go when it is back)."""
        tick = Tick(status={"attemptFailure": None})
        launched = _launched(status)
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
        self._unlock(spec, uid, tick, status)
        if launched is None:
            return tick.end(state, f"{why}; nothing was launched", now, spec.ref.generation)
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
            tick.status.update(state="Pending", waitingFor=what, message=f"waiting for {what}")
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
        from ..catalog.job_commits import end_job_sessions, job_commits, job_sessions_ended

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
        from ..catalog.job_commits import delete_uncommitted_files, uncommitted_files

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
        None when all are ours, else what the run waits for (holding nothing)."""
        namespace, holder = spec.ref.namespace or "default", Holder(uid, spec.ref.name)
        held = [n for n in status.get("locks") or []]
        what = f"table {spec.table}" if spec.table else f"catalog-wide maintenance of {spec.catalog}"
        name = lease_name("table", namespace, spec.catalog, fold(spec.table) if spec.table else "*")
        other = self.leases.acquire(namespace, name, holder, what)
        if other is not None:
            self._release(namespace, held, uid)
            return f"DuckLakeJob {other.name}, which holds {what}"
        held += [name] if name not in held else []
        if ctx.max_jobs:
            taken = {name for o in ctx.others if o.uid != uid for name in o.locks}  # tried last
            slot = self.leases.acquire_slot(
                namespace, (namespace, spec.catalog), ctx.max_jobs, holder, f"catalog {spec.catalog}", taken
            )
            if slot is None:
                self._release(namespace, held, uid)
                return f"a slot in catalog {spec.catalog}: {ctx.max_jobs} runs (maxJobsPerCatalog) running"
            held += [slot] if slot not in held else []
        tick.status["locks"] = held
        return None

    def _unlock(self, spec: JobSpec, uid: str, tick: Tick, status: Mapping[str, Any]) -> None:
        self._release(spec.ref.namespace or "default", list(status.get("locks") or []), uid)
        tick.status["locks"] = []

    def _release(self, namespace: str, names: list[str], uid: str) -> None:
        for name in names:
            self.leases.release(namespace, name, uid)

    def _succeeded(
        self, tick: Tick, spec: JobSpec, uid: str, status: Mapping[str, Any], ctx: RunContext, landed: Any,
        now: float, note: str | None = None, result: Mapping[str, Any] | None = None,
    ) -> Tick:  # fmt: skip
        report = _report(landed, uid, status, result)
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
        return tick.end("Succeeded", message, now, spec.ref.generation)


def time_left(timeout: int | None, start: float, now: float) -> int | None:
    """The seconds an attempt launched at ``now`` may run (None: no timeout). ``timeout``
    bounds the whole run, from its first attempt's start: retries, and the waits before
    them, spend it, so each attempt gets what is left (a Job's ``activeDeadlineSeconds``)."""
    if not timeout:
        return None
    return max(math.ceil(start + timeout - now), 0)


def attempt_spec(
    spec: JobSpec, uid: str, ctx: RunContext, attempt: int, timeout_seconds: int | None, deadline: float | None = None
) -> LaunchSpec:
    """What the launcher gets for one attempt; ``timeout_seconds``: its share (``time_left``);
    ``deadline``: the run's (seconds since the epoch), past which its program commits nothing."""
    return launch_spec(
        job_name=spec.ref.name,
        namespace=spec.ref.namespace or "default",
        uid=uid,
        attempt=attempt,
        run_document=run_document(spec, uid, attempt, ctx, deadline),
        spark=ctx.spark,
        env_from_secrets=env_from_secrets(ctx.catalog) if ctx.catalog else [],
        timeout_seconds=timeout_seconds,
        labels={CATALOG_LABEL: spec.catalog, OPERATION_LABEL: spec.operation},
    )


def _with_duration(tick: Tick, status: Mapping[str, Any], now: float) -> Tick:
    """Every end of a run that started says how long it took, whatever the end (kubectl's
    DURATION column): from its first attempt's start, retries included."""
    if tick.status.get("state") in TERMINAL:
        start = parse_stamp(tick.status.get("startTime") or status.get("startTime"))
        if start is not None:
            tick.status["duration"] = duration(now - start)
    return tick


def window_wait(policy: PolicyWindow | None, now: float) -> str | None:
    """What a run created by a policy with a window waits for while the window is closed
    (None: it may start): nothing starts outside the window, neither a first attempt nor a
    retry, however long the run waited for its table or a slot inside it."""
    if policy is None:
        return None
    opens = closed_until(policy.window, datetime.fromtimestamp(now, UTC))
    if opens is None:
        return None
    return (f"the maintenance window {describe_window(policy.window)} of DuckLakeMaintenancePolicy {policy.name}, "
            f"closed until {describe_instant(opens, window_zone(policy.window))}")  # fmt: skip


def waits_for(spec: JobSpec, uid: str, ctx: RunContext, now: float) -> str | None:
    """What the controller's own view of the catalog's runs says a run waits for (None: try
    the Leases), so waiting runs cost no API calls; the Leases decide when this says go.
    A run of a policy whose window is closed waits for it to open (``window_wait``). A run
    waits for the run holding its table (a catalog-wide run: the catalog-wide one), and for
    a slot when the runs holding slots and the runs waiting for one, created before it, fill
    ``maxJobsPerCatalog``; a run waiting for a table, a retry or its window does not count
    as ahead."""
    closed = window_wait(ctx.windows.get(ctx.policy or ""), now)
    if closed is not None:
        return closed
    others = [o for o in ctx.others if o.uid != uid]
    held = {fold(o.table) if o.table else "*": o for o in others if o.holds}
    holder = held.get(fold(spec.table) if spec.table else "*")
    if holder is not None:
        what = f"table {spec.table}" if spec.table else f"catalog-wide maintenance of {spec.catalog}"
        return f"DuckLakeJob {holder.name}, which holds {what}"
    if not ctx.max_jobs:
        return None
    running = sum(1 for o in others if o.holds)
    ahead = sum(
        1
        for o in others
        if not o.holds
        and (o.created, o.name) < (ctx.created, spec.ref.name)
        and (fold(o.table) if o.table else "*") not in held
        and (parse_stamp(o.retry_at) or 0) <= now
        and _window_open(ctx.windows.get(o.policy or ""), now)
    )
    if running + ahead < ctx.max_jobs:
        return None
    return (f"a slot in catalog {spec.catalog}: {running} of {ctx.max_jobs} runs (maxJobsPerCatalog) running, "
            f"{ahead} waiting before this one")  # fmt: skip


def _window_open(policy: PolicyWindow | None, now: float) -> bool:
    return policy is None or in_window(policy.window, datetime.fromtimestamp(now, UTC))


def _launched(status: Mapping[str, Any]) -> Launched | None:
    launched = status.get("launched") or {}
    if not launched.get("kind"):
        return None
    return Launched(kind=launched["kind"], name=launched.get("name", ""), detail=dict(launched.get("detail") or {}))


def attempt_failure(observed: Observed) -> dict[str, Any]:
    """``status.attemptFailure``: a failure seen while the attempt's objects still ran, kept
    while they are stopped (the object, once deleted, no longer says why)."""
    return {"message": observed.message, "retriable": observed.retriable}


def failure_reason(observed: Observed, program: Mapping[str, Any]) -> str:
    """Why an attempt failed: the job program's own words first (it saw the error: Spark's,
    the catalog's), then what its launcher saw (the Job's condition, a pod's state), each once."""
    launcher = observed.message or "failed"
    said = str(program.get("message") or "") if program.get("state") == "Failed" else ""
    said = said.replace(f"; {NOTHING_COMMITTED}", "")  # the run's message says it, from the catalog
    if not said or said in launcher:
        return launcher
    return f"{said} ({launcher})"


def _report(landed: Any, uid: str, status: Mapping[str, Any], result: Mapping[str, Any] | None) -> dict[str, Any]:
    """The run's report: from its commit (the catalog's word), else what the program said
    (its result line, or the report it wrote to the DuckLakeJob's status)."""
    if landed is not None:
        return job_commit_report(landed.commit_extra_info, uid) or {}
    said = result or status.get("jobReport") or {}
    return dict(said.get("report") or {})


def _exit_code(detail: Mapping[str, Any], status: Mapping[str, Any]) -> int | None:
    """The job program's exit code: the Local launcher's, else the one its report gives."""
    for source in (detail, detail.get("result") or {}, status.get("jobReport") or {}):
        if isinstance(source.get("exitCode"), int):
            return int(source["exitCode"])
    return None


def duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def env_from_secrets(catalog: CatalogSpec) -> list[tuple[str, str, str]]:
    """(env name, Secret name, key) for the credentials a run needs: never values."""
    out = []
    if isinstance(catalog.backend, PostgresSpec) and catalog.backend.credentials is not None:
        c = catalog.backend.credentials
        out += [(CATALOG_USERNAME, c.name, c.username_key), (CATALOG_PASSWORD, c.name, c.password_key)]
    if catalog.s3 is not None and catalog.s3.credentials is not None:
        c = catalog.s3.credentials
        out += [(S3_KEY_ID, c.name, c.username_key), (S3_SECRET_KEY, c.name, c.password_key)]
    return out


def run_document(
    spec: JobSpec, uid: str, attempt: int, ctx: RunContext, deadline: float | None = None
) -> dict[str, Any]:
    """What the job program reads (no credentials: they come as env from Secrets); with the
    run's ``deadline``, past which the program refuses to commit."""
    spark = ctx.spark
    job: dict[str, Any] = {"name": spec.ref.name, "namespace": spec.ref.namespace, "uid": uid, "attempt": attempt}
    if deadline is not None:
        job["deadline"] = stamp(deadline)
    return {
        "job": job,
        "catalog": ctx.catalog_doc,
        "table": spec.table,
        "operation": spec.operation,
        "params": run_params(spec, ctx),
        "inProcessBelow": spark.get("inProcessBelow"),
        "spark": {"master": spark.get("master"), "conf": dict(spark.get("conf") or {})},
    }


def run_params(spec: JobSpec, ctx: RunContext) -> dict[str, Any]:
    """The job's parameters as the run gets them: an ingest into a table whose DuckLakeTable
    does not have ``evolution.mode: auto`` may only append into the columns the table has
    (``evolve: false``, whatever the DuckLakeJob says): columns it added would be drift, and
    ``onDrift: revert`` could drop them with their data."""
    params = dict(spec.params)
    if spec.operation == "ingest" and ctx.table_evolution not in (None, "auto"):
        params["evolve"] = False
    return params


def table_evolution(table: str, docs: Iterable[Mapping[str, Any]]) -> str | None:
    """The ``spec.evolution.mode`` of the DuckLakeTable manifests (as the controller's index
    holds them) that declare ``table`` (``schema.name``, or a name in their ``renamedFrom``,
    matched as DuckDB matches names); None when none does. When several do, any mode but
    ``auto`` wins."""
    schema, _, name = table.partition(".")
    modes = []
    for doc in docs:
        spec = doc.get("spec") or {}
        names = [spec.get("name"), *(spec.get("renamedFrom") or [])]
        if same_name(str(spec.get("schema") or DEFAULT_SCHEMA), schema) and any(
            isinstance(n, str) and same_name(n, name) for n in names
        ):
            modes.append(str((spec.get("evolution") or {}).get("mode") or EVOLUTION_MODE.default))
    return next((m for m in modes if m != "auto"), "auto" if modes else None)
