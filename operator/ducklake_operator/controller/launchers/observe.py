"""What a launched attempt's own record says, as an ``Observed``: a batch Job's conditions,
a SparkApplication's ``status.applicationState``, the job program's final JSON line, and
what the attempt's pods add to them (``with_pods``). Pure."""

from __future__ import annotations

import dataclasses
import json
import signal
from collections.abc import Iterable, Mapping
from typing import Any

from ...api.v1alpha1.job import FAILED, PENDING, RUNNING, SUCCEEDED
from ...model.jvm_errors import innermost_jvm_error
from ...model.out_of_memory import describe
from .pods import PodsView
from .spec import Observed

# Kubeflow Spark Operator states (api/v1beta2 ApplicationStateType) that end an application
SPARK_SUCCEEDED = ("COMPLETED",)
SPARK_FAILED = ("FAILED", "SUBMISSION_FAILED")
SPARK_PENDING = ("", "NEW", "SUBMITTED", "SUSPENDING", "SUSPENDED", "RESUMING")


def observe_job(job: Mapping[str, Any]) -> Observed:
    """``Complete`` or ``Failed`` (True) end a Job; a deadline is a timeout. Anything else
    runs (its pod ready, or terminating) or waits for its pod."""
    name = job.get("metadata", {}).get("name", "")
    status = job.get("status") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or [] if c.get("status") == "True"}
    if "Complete" in conditions:
        return Observed(SUCCEEDED, f"Job {name} completed")
    failed = conditions.get("Failed")
    if failed is not None:
        if failed.get("reason") == "DeadlineExceeded":
            return Observed(FAILED, f"timed out: Job {name} ran past its activeDeadlineSeconds")
        why = ": ".join(p for p in (failed.get("reason"), failed.get("message")) if p)
        return Observed(FAILED, f"Job {name} failed" + (f" ({why})" if why else ""))
    if status.get("ready") or status.get("terminating"):
        return Observed(RUNNING, f"Job {name} is running")
    if status.get("active"):  # created, not running yet (scheduling, pulling the image)
        return Observed(PENDING, f"Job {name}'s pod is not running yet")
    return Observed(PENDING, f"Job {name} waits for its pod")


def observe_spark_application(app: Mapping[str, Any]) -> Observed:
    name = app.get("metadata", {}).get("name", "")
    state_record = (app.get("status") or {}).get("applicationState") or {}
    state = str(state_record.get("state") or "")
    if state in SPARK_SUCCEEDED:
        return Observed(SUCCEEDED, f"SparkApplication {name} completed")
    if state in SPARK_FAILED:
        error = str(state_record.get("errorMessage") or "")
        # spark-submit's whole output when the submission failed: its one line that says why
        said = innermost_jvm_error(error) if "\n" in error else None
        return Observed(FAILED, f"SparkApplication {name} {state}" + (f": {said or error}" if error else ""))
    if state in SPARK_PENDING:
        return Observed(PENDING, f"SparkApplication {name} is {state or 'not submitted yet'}")
    return Observed(RUNNING, f"SparkApplication {name} is {state}")


def with_pods(observed: Observed, pods: PodsView) -> Observed:
    """The object's state, with what its pods say: a pod that cannot run fails an attempt
    that has not ended (its objects still there: the controller stops them); a pending
    one says what it waits for; containers killed for memory explain a failure."""
    problem = pods.problem
    if observed.state in (PENDING, RUNNING) and problem is not None:
        detail = {"pod": problem.pod, "reason": problem.reason}
        return Observed(FAILED, problem.describe(), detail, retriable=problem.retriable, stop=True)
    if observed.state == PENDING and pods.waiting:
        return dataclasses.replace(observed, message=pods.waiting)
    if observed.state == FAILED and pods.out_of_memory:
        return dataclasses.replace(observed, message=f"{observed.message}; {describe(pods.out_of_memory)}")
    return observed


def last_result(lines: Iterable[str]) -> dict[str, Any] | None:
    """The job program's final ``{"event": "result", ...}`` line, if it wrote one."""
    found = None
    for line in lines:
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a line cut short by a kill
        if isinstance(event, dict) and event.get("event") == "result":
            found = event
    return found


def observe_finished_program(result: Mapping[str, Any] | None, exit_code: int | None, last_error: str) -> Observed:
    """A job program that is no longer running: its result line decides; without one, it
    failed (its exit code known: it was this process's child) or is gone (after a restart
    of the operator, its exit code is lost)."""
    detail: dict[str, Any] = {"exitCode": exit_code} if exit_code is not None else {}
    if result is not None:
        state = SUCCEEDED if result.get("state") == SUCCEEDED else FAILED
        return Observed(state, str(result.get("message") or ""), {**detail, "result": dict(result)})
    tail = f": {last_error}" if last_error else ""
    if exit_code is None:
        return Observed("Gone", f"the job program ended without a result{tail}", detail)
    if exit_code == -signal.SIGKILL:  # in a pod, most often the kernel's OOM killer
        return Observed(FAILED, f"the job program was killed (SIGKILL) without a result{tail}: in a container "
                        "this is most often its memory limit (the Local launcher's programs share the operator "
                        "pod's: resources.limits.memory, jobs.local.maxRuns)", detail)  # fmt: skip
    return Observed(FAILED, f"the job program exited with code {exit_code} without a result{tail}", detail)
