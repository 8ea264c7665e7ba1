"""A table's heavy changes as a DuckLakeJob (``evolution.heavy``): the table's handler starts
the one job its plan needs, owned by the DuckLakeTable, and says how it goes in the table's
conditions. The job rewrites every column the plan retypes and commits the plan's other
changes in the same snapshot (its ``manifest`` param is the DuckLakeTable; the handler
commits none of the plan itself), so the table goes from its old schema to the declared one
in one snapshot.

A job is named after the table, its generation and the change, so reconciling again finds
it instead of starting a second. While it runs the table is ``Progressing`` (``Ready`` is
False with reason ``Rewriting``) and its handler waits to be woken when a run of its catalog
ends. A job that failed is said (``RewriteFailed``, its message) and not started again for
the same generation: change the manifest (e.g. ``onCastError: null``), or delete the failed
DuckLakeJob to run it once more.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from ...api.v1alpha1.job import CANCELLED, FAILED, PENDING
from ...api.v1alpha1.names import (
    API_VERSION,
    GROUP,
    JOB_KIND,
    JOBS,
    OPERATION_LABEL,
    PROGRESSING,
    READY,
    TABLE_KIND,
    TABLE_LABEL,
    VERSION,
)
from ...api.v1alpha1.table import TableSpec
from ...evolution.heavy import HeavyJob
from ..boundary import Failure
from ..outcome import Outcome
from ..status import condition

ENDED_BADLY = (FAILED, CANCELLED)
MAX_NAME = 63


def job_name(table: str, generation: int | None, job: HeavyJob) -> str:
    """A DNS name for the job of ``job`` at this generation of the table: the same on every
    reconcile, another when the manifest changes."""
    digest = hashlib.sha1(json.dumps([generation, job.operation, job.params], sort_keys=True).encode()).hexdigest()
    suffix = f"-{job.operation.lower()[:9]}-g{generation or 0}-{digest[:8]}"
    base = re.sub("-+", "-", re.sub("[^a-z0-9-]", "-", table.lower())).strip("-") or "table"
    return base[: MAX_NAME - len(suffix)].rstrip("-") + suffix


def job_manifest(
    spec: TableSpec, owner: Mapping[str, Any], job: HeavyJob, name: str, table: Mapping[str, Any]
) -> dict[str, Any]:
    """The DuckLakeJob, owned by the DuckLakeTable (``owner``: its apiVersion, kind, name, uid;
    ``table``: the DuckLakeTable as read, the job's ``manifest`` when the plan has other changes)."""
    manifest = {"manifest": table_document(table)} if job.with_plan else {}
    return {
        "apiVersion": API_VERSION,
        "kind": JOB_KIND,
        "metadata": {
            "name": name,
            "labels": {TABLE_LABEL: str(owner["name"])[:63], OPERATION_LABEL: job.operation},
            "ownerReferences": [{**owner, "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {
            "catalogRef": {"name": spec.catalog},
            "table": job.table,
            "operation": job.operation,
            "params": {**job.params, **manifest},
        },  # fmt: skip
    }


def table_document(table: Mapping[str, Any]) -> dict[str, Any]:
    """What of a DuckLakeTable the job plans from: its kind, identity and spec (not its status)."""
    meta = table.get("metadata") or {}
    return {
        "apiVersion": table.get("apiVersion", API_VERSION),
        "kind": TABLE_KIND,
        "metadata": {k: meta[k] for k in ("name", "namespace", "generation") if k in meta},
        "spec": dict(table.get("spec") or {}),
    }


def heavy_outcome(outcome: Outcome, spec: TableSpec, name: str, job: HeavyJob, run: Mapping[str, Any]) -> Outcome:
    """The table's conditions while its heavy change runs as ``run`` (the DuckLakeJob as read). Pure."""
    generation = spec.ref.generation
    status = run.get("status") or {}
    state = status.get("state") or PENDING
    outcome.status["heavyJob"] = {"name": name, "operation": job.operation, "params": dict(job.params),
                                  "state": state}  # fmt: skip
    if state in ENDED_BADLY:
        message = (f"DuckLakeJob {name} ({job.describe()}) {state.lower()}: {status.get('message', '')}; nothing "
                   "changed. Change the manifest (e.g. onCastError: null) or delete the DuckLakeJob to run it again")  # fmt: skip
        reason = "RewriteFailed"
        progressing = condition(PROGRESSING, False, reason, "", generation)
        outcome.events.append(("Warning", reason, message))
    else:
        progress = f", {status['progress']}" if status.get("progress") else ""
        message = f"DuckLakeJob {name} does the heavy change: {job.describe()} ({state}{progress})"
        reason = "Rewriting"
        progressing = condition(PROGRESSING, True, reason, message, generation)
        if not status:
            outcome.events.append(("Normal", "RewriteStarted", message))
    outcome.conditions = [c for c in outcome.conditions if c["type"] not in (READY, PROGRESSING)]
    outcome.conditions += [condition(READY, False, reason, message, generation), progressing]
    # woken when a run of the catalog ends (runs.handlers), else looks again within the heartbeat
    outcome.failure = Failure(reason, message, True, cap=30.0, waits=True)
    return outcome


def with_heavy_runs(
    outcome: Outcome, spec: TableSpec, owner: Mapping[str, Any], custom_api: Callable[[], Any], table: Mapping[str, Any]
) -> Outcome:
    """Start (or find) the job of the outcome's heavy changes and say how it goes (``table``:
    the DuckLakeTable as the handler read it)."""
    if not outcome.heavy or outcome.failure is not None:
        outcome.status.setdefault("heavyJob", None)
        return outcome
    from kubernetes.client.exceptions import ApiException

    job = outcome.heavy[0]
    name = job_name(spec.ref.name, spec.ref.generation, job)
    namespace = spec.ref.namespace or "default"
    api = custom_api()
    try:
        run = api.get_namespaced_custom_object(GROUP, VERSION, namespace, JOBS, name)
    except ApiException as exc:
        if exc.status != 404:
            raise
        try:
            run = api.create_namespaced_custom_object(GROUP, VERSION, namespace, JOBS,
                                                      job_manifest(spec, owner, job, name, table))  # fmt: skip
        except ApiException as again:
            if again.status != 409:
                raise
            run = api.get_namespaced_custom_object(GROUP, VERSION, namespace, JOBS, name)
    return heavy_outcome(outcome, spec, name, job, run)
