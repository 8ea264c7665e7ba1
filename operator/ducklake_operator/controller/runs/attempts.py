"""One attempt of a run as its launcher and its job program describe it: what was launched,
why it failed, its report and exit code, and the time an attempt may still run (pure)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ...api.v1alpha1.job import FAILED
from ...errors import NOTHING_COMMITTED
from ...model.job_marker import job_commit_report
from ..launchers.spec import Launched, Observed

FIGURES = ("filesRead", "filesWritten", "bytesRead", "bytesWritten", "rowsRead", "rowsWritten")  # report -> status


def time_left(timeout: int | None, start: float, now: float) -> int | None:
    """The seconds an attempt launched at ``now`` may run (None: no timeout). ``timeout``
    bounds the whole run, from its first attempt's start: retries, and the waits before
    them, spend it, so each attempt gets what is left (a Job's ``activeDeadlineSeconds``)."""
    if not timeout:
        return None
    return max(math.ceil(start + timeout - now), 0)


def launched_attempt(status: Mapping[str, Any]) -> Launched | None:
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
    said = str(program.get("message") or "") if program.get("state") == FAILED else ""
    said = said.replace(f"; {NOTHING_COMMITTED}", "")  # the run's message says it, from the catalog
    if not said or said in launcher:
        return launcher
    return f"{said} ({launcher})"


def run_report(landed: Any, uid: str, status: Mapping[str, Any], result: Mapping[str, Any] | None) -> dict[str, Any]:
    """The run's report: from its commit (the catalog's word), else what the program said
    (its result line, or the report it wrote to the DuckLakeJob's status)."""
    if landed is not None:
        return job_commit_report(landed.commit_extra_info, uid) or {}
    said = result or status.get("jobReport") or {}
    return dict(said.get("report") or {})


def exit_code(detail: Mapping[str, Any], status: Mapping[str, Any]) -> int | None:
    """The job program's exit code: the Local launcher's, else the one its report gives."""
    for source in (detail, detail.get("result") or {}, status.get("jobReport") or {}):
        if isinstance(source.get("exitCode"), int):
            return int(source["exitCode"])
    return None
