"""The job program every launcher runs (``python -m ducklake_jobs run --run-file PATH``, or
the ``ducklake-job`` console script): read the run document, open its catalog with
credentials from the environment, run the operation with the job's identity (which marks
its files and its commit), and say how it went in JSON lines.

The catalog decides whether a run landed: a run whose commit is already there (an earlier
attempt's, after a lost pod) is reported Succeeded from that snapshot and never run again,
and a failure is checked against the catalog before it is called one. Past the run's
deadline (less ``COMMIT_MARGIN``) the program commits nothing: checked inside each commit's
transaction, right before COMMIT, so the controller can end the run at its deadline.

Exit codes: 0 succeeded (committed, nothing to do, or a dry run); 1 failed, nothing
committed (its files deleted); 3 the commit's outcome is unknown (its files kept).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import json
import logging
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from ducklake_operator import storage
from ducklake_operator.api.load import parse_args
from ducklake_operator.api.v1alpha1.catalog import CatalogSpec
from ducklake_operator.api.v1alpha1.job import FAILED, SUCCEEDED
from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.catalog.job_commits import find_job_commit
from ducklake_operator.catalog.scrub import scrub
from ducklake_operator.errors import CommitStateUnknown, CredentialsInvalid, DuckLakeError, JobFailed, SpecError
from ducklake_operator.lake_access import location_for, s3_settings
from ducklake_operator.model import timestamps
from ducklake_operator.model.job_marker import (
    EXIT_FAILED,
    EXIT_SUCCEEDED,
    EXIT_UNKNOWN,
    job_commit_report,
    session_name,
)
from ducklake_operator.model.out_of_memory import OutOfMemory, describe, from_spark_error
from ducklake_operator.model.state import SnapshotRecord

from .executor_pods import follow_executors
from .job_status import JobStatus, api_job_status
from .job_steps import reason
from .job_template import run_operation
from .job_timings import PhaseClock
from .run_context import JobRun
from .run_document_reader import RunDocument, read_run_document
from .task_runners import OnDone, run_on_spark

W = TypeVar("W")
R = TypeVar("R")
log = logging.getLogger(__name__)

USERNAME_ENV, PASSWORD_ENV = "DUCKLAKE_CATALOG_USERNAME", "DUCKLAKE_CATALOG_PASSWORD"
SECRET_ENV = (PASSWORD_ENV, "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
# a commit must begin this long before the run's deadline: covers the clocks of the driver's node
# and of the controller's differing, and the COMMIT's round trip; a tenth of the time left at the
# program's start when that is less (a run given seconds must still be able to commit)
COMMIT_MARGIN = 10.0
PYSPARK_MISSING = (
    "this run's file groups are Spark tasks, but pyspark is not installed in this image: "
    "install ducklake-operator[spark], or set spark.inProcessBelow above the table's size"
)


class Events:
    """What the program says: JSON lines through ``write``, and its DuckLakeJob's status on
    the API server when there is one. No secret the environment holds is ever written."""

    def __init__(self, write: Callable[[str], None], secrets: set[str]) -> None:
        self._write, self._secrets = write, secrets
        self.status: JobStatus | None = None

    def progress(self, phase: str, done: int, total: int) -> None:
        self._line({"event": "progress", "phase": phase, "done": done, "total": total})
        if self.status is not None:
            self.status.progress(f"{phase} {done}/{total} file groups" if phase == "writing" else phase)

    def result(self, outcome: Outcome) -> int:
        result = {
            "state": outcome.state,
            "committedSnapshot": outcome.committed_snapshot,
            "ranOn": outcome.report.get("ranOn"),  # None: it failed before its work ran anywhere
            "report": outcome.report,
            "message": scrub(outcome.message, self._secrets),
            "exitCode": outcome.exit_code,
        }
        self._line({"event": "result", **result})
        if self.status is not None:
            self.status.result(result)
        return outcome.exit_code

    def _line(self, event: dict[str, Any]) -> None:
        self._write(scrub(json.dumps(event, default=str), self._secrets))


@dataclass(frozen=True)
class Outcome:
    state: str  # Succeeded | Failed
    exit_code: int
    message: str
    report: dict[str, Any]
    committed_snapshot: int | None = None


def run_job(run_file: str, write: Callable[[str], None], env: Mapping[str, str], *, warm_session: bool = False) -> int:
    """Run the job ``run_file`` describes; every event goes through ``write`` (one JSON
    object per call); returns the exit code. ``warm_session``: a spare runs it, its Spark
    session started before the run (its report says so: ``sparkSession: warm``)."""
    events = Events(write, {v for k in SECRET_ENV if (v := env.get(k))})
    try:
        doc = read_run_document(run_file)
    except SpecError as exc:
        return events.result(Outcome(FAILED, EXIT_FAILED, str(exc), {}))
    events.status = api_job_status(doc.job, env)
    try:
        outcome = _run(doc, env, events)
        if warm_session and outcome.report.get("ranOn") == "spark":
            outcome = dataclasses.replace(outcome, report={**outcome.report, "sparkSession": "warm"})
    except Exception as exc:  # a bug: still one result line, and the traceback on stderr for whoever fixes it
        log.exception("the job program failed")
        outcome = Outcome(FAILED, EXIT_FAILED, reason(exc), {"operation": doc.operation})
    return events.result(outcome)


def _run(doc: RunDocument, env: Mapping[str, str], events: Events) -> Outcome:
    what = f"{doc.operation} {doc.table}" if doc.table else doc.operation
    started = {"operation": doc.operation, **({"table": doc.table} if doc.table else {})}
    clock = PhaseClock()  # the report's timings: opening the catalog is part of its planning
    try:
        args = parse_args(doc.operation, doc.params)  # once; every parameter problem before touching the catalog
        location = dataclasses.replace(catalog_location(doc.catalog, env), application_name=session_name(doc.job.uid))
        catalog = Catalog.open(location, expected_data_path=doc.catalog.data_path)
    except DuckLakeError as exc:
        return Outcome(FAILED, EXIT_FAILED, f"{what}: {exc}", started)
    if doc.deadline is not None:
        catalog.commit_guard = deadline_guard(doc.deadline)
    with closing(catalog):
        try:
            landed = find_job_commit(catalog, doc.job.uid)
        except DuckLakeError as exc:
            return Outcome(FAILED, EXIT_FAILED, f"{what}: {exc}", started)
        if landed is not None:
            return _landed(landed, doc, what, "an earlier attempt committed it; not run again")
        storage.configure(s3_settings(doc.catalog))  # shipped to Spark tasks with their work
        executors = follow_executors(doc.job, doc.spark_master)  # what Spark's error may not say
        try:
            report = run_operation(
                catalog,
                doc.operation,
                doc.table,
                args,
                runner=functools.partial(_on_spark, master=doc.spark_master, conf=doc.spark_conf),
                run=JobRun(doc.job, doc.in_process_below, events.progress),
                clock=clock,
            )
        except Exception as exc:
            killed = executors.out_of_memory() if executors is not None else []
            return outcome_of_failure(catalog, doc, what, {**started, **commit_counts(catalog)}, exc, killed)
        finally:
            storage.configure(None)
    committed = _committed_snapshot(report)
    report = {**report, **commit_counts(catalog)}
    return Outcome(SUCCEEDED, EXIT_SUCCEEDED, _summary(what, report, committed), report, committed)


def deadline_guard(deadline: float, clock: Callable[[], float] = time.time) -> Callable[[], None]:
    """A ``Catalog.commit_guard`` that refuses (``JobFailed``: nothing committed, the files
    deleted) a commit later than ``COMMIT_MARGIN`` seconds (at most a tenth of the time left
    now) before the run's ``deadline``."""
    margin = min(COMMIT_MARGIN, max(deadline - clock(), 0.0) / 10)

    def guard() -> None:
        late = clock() - (deadline - margin)
        if late >= 0:
            at = timestamps.stamp(datetime.fromtimestamp(deadline, UTC))
            raise JobFailed(
                f"not committed: the run's deadline is {at}, and a commit must end {margin:.0f} s before it "
                f"(this one was {late:.0f} s too late)"
            )

    return guard


def commit_counts(catalog: Catalog) -> dict[str, int]:
    """The run's own commit retries and conflicts (each conflict made it plan again, or
    fail): the controller adds them to its commit metrics."""
    return {"commitRetries": catalog.commit_retries, "commitConflicts": catalog.commit_conflicts}


def catalog_location(spec: CatalogSpec, env: Mapping[str, str]) -> CatalogLocation:
    """The catalog's location; credentials only from the environment the launcher filled
    from the catalog's Secret."""

    def credentials(secret: str, _user_key: str, _password_key: str, _namespace: str | None) -> tuple[str, str]:
        user, password = env.get(USERNAME_ENV), env.get(PASSWORD_ENV)
        if not user or not password:
            missing = " and ".join(k for k, v in ((USERNAME_ENV, user), (PASSWORD_ENV, password)) if not v)
            raise CredentialsInvalid(
                f"the catalog's credentials are in Secret {secret!r}, but {missing} is not set "
                "(the launcher passes them to the job as environment variables)"
            )
        return user, password

    return location_for(spec, credentials)


def _on_spark(
    fn: Callable[[W], R],
    items: list[W],
    on_done: OnDone | None = None,
    *,
    master: str,
    conf: tuple[tuple[str, str], ...],
) -> list[R]:
    if items and importlib.util.find_spec("pyspark") is None:
        raise JobFailed(PYSPARK_MISSING)
    return run_on_spark(fn, items, on_done, master=master, conf=conf)


def outcome_of_failure(
    catalog: Catalog,
    doc: RunDocument,
    what: str,
    started: dict[str, Any],
    exc: Exception,
    killed: Sequence[OutOfMemory] = (),
) -> Outcome:
    """A run that raised: Succeeded if its commit is in the catalog after all, unknown if
    the commit's fate could not be learnt, else Failed (its files are already deleted).
    ``killed``: executor containers seen killed for memory (their pods, as they ended),
    else Spark's error is read for them."""
    try:
        landed = find_job_commit(catalog, doc.job.uid)
    except DuckLakeError:
        landed = None
    if landed is not None:
        return _landed(landed, doc, what, "its commit landed before the failure")
    message = str(exc) if isinstance(exc, DuckLakeError) else reason(exc)
    memory = describe(killed or from_spark_error(failure_text(exc), _executor_memory()))
    if memory:  # the reason, before Spark's words
        message = f"{memory}; {message}"
    if isinstance(exc, CommitStateUnknown):
        report = {**started, "uncommittedFiles": "kept"}
        return Outcome(FAILED, EXIT_UNKNOWN, f"{what}: {message}; its files were kept", report)
    return Outcome(FAILED, EXIT_FAILED, f"{what}: {message}", {**started, "uncommittedFiles": "deleted"})


def failure_text(exc: BaseException) -> str:
    """The whole text of a failure and of what caused it (Spark's error arrives as a Python
    exception whose text holds the Java one, often as the cause of a ``JobFailed``)."""
    texts: list[str] = []
    seen: BaseException | None = exc
    while seen is not None and len(texts) < 10:
        try:
            texts.append(str(seen))
        except Exception:  # noqa: BLE001 - a Py4J error asks the JVM for its text, which may be gone
            texts.append(type(seen).__name__)
        seen = seen.__cause__ or seen.__context__
    return "\n".join(texts)


def _executor_memory() -> str | None:
    """The executors' pod memory as this run's Spark session has it (JVM + overhead: the
    launcher sets both), when a session ran; None otherwise."""
    if "pyspark" not in sys.modules:
        return None
    context = sys.modules["pyspark"].SparkContext._active_spark_context
    if context is None:
        return None
    conf = context.getConf()
    memory, overhead = conf.get("spark.executor.memory"), conf.get("spark.executor.memoryOverhead")
    return f"{memory} + {overhead} overhead" if memory and overhead else None


def _landed(snapshot: SnapshotRecord, doc: RunDocument, what: str, why: str) -> Outcome:
    report = job_commit_report(snapshot.commit_extra_info, doc.job.uid) or {}
    report = {**report, "committedSnapshot": snapshot.snapshot_id}
    message = f"{what}: committed snapshot {snapshot.snapshot_id} ({why})"
    return Outcome(SUCCEEDED, EXIT_SUCCEEDED, message, report, snapshot.snapshot_id)


def _committed_snapshot(report: Mapping[str, Any]) -> int | None:
    if report.get("committedSnapshot") is not None:
        return int(report["committedSnapshot"])
    several = report.get("committedSnapshots") or []  # a catalog-wide flush commits per table
    return int(several[-1]) if several else None


def _summary(what: str, report: Mapping[str, Any], committed: int | None) -> str:
    if report.get("dryRun"):
        return f"{what}: dry run, nothing committed"
    if committed is not None:
        files = (
            f" ({report['filesRead']} files read, {report['filesWritten']} written)" if "filesRead" in report else ""
        )
        return f"{what}: committed snapshot {committed}{files}"
    if "expired" in report:
        return f"{what}: {len(report['expired'])} snapshots expired"
    if "deleted" in report:
        return f"{what}: {len(report['deleted'])} files deleted"
    return f"{what}: nothing to do"
