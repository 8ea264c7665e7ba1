"""kopf handlers of DuckLakeMaintenancePolicies: a timer per policy reads the tables it selects
from the catalog (``reconciler``), asks the pure planner (``maintenance.policy_runs``) what is due, creates
those runs as its children (DuckLakeJobs owned by the policy), trims their history to
``historyLimit`` per table and operation, and publishes when each operation last ran and
runs next.

A run records the cron time it pays in an annotation as well as in the policy's status, so
a cron time is never paid twice even when the status write after creating it was lost.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import kopf

from ...api.load import parse_manifest
from ...api.v1alpha1.job import ENDED_STATES, PENDING
from ...api.v1alpha1.names import (
    API_VERSION,
    GROUP,
    INVALID_SPEC,
    JOB_KIND,
    JOBS,
    OPERATION_LABEL,
    POLICIES,
    POLICY_KIND,
    POLICY_LABEL,
    READY,
    REASON_ANNOTATION,
    SCHEDULE_TIME_ANNOTATION,
    TABLE_LABEL,
    VERSION,
)
from ...api.v1alpha1.policy import MaintenancePolicySpec
from ...errors import DuckLakeError, SpecError
from ...maintenance.policy_runs import (
    HistoryKey,
    PlannedRun,
    plan_policy_runs,
    policy_status,
    with_created_run,
)
from ...maintenance.selection import catalog_wide_owner
from ...model import timestamps
from ..context import Controller
from ..kube_clients import custom_objects_api
from ..manifests import CatalogKey, ManifestIndex, TableIndex, body_manifest, catalog_for, parsed_policy, policy_uid
from ..status import condition, merge_conditions
from .reconciler import maintained_tables, min_trigger_interval, run_history

log = logging.getLogger(__name__)
POLICY_TICK = float(os.environ.get("DUCKLAKE_POLICY_INTERVAL", "15"))


@kopf.index(GROUP, VERSION, POLICIES)
async def policy_manifests(namespace: str | None, body: kopf.Body, **_: Any) -> dict[CatalogKey, dict[str, Any]]:
    meta = body.get("metadata", {})
    doc = {"apiVersion": body.get("apiVersion"), "kind": body.get("kind"), "spec": dict(body.get("spec", {})),
           "metadata": {k: meta.get(k) for k in ("name", "namespace", "uid", "generation", "creationTimestamp")}}  # fmt: skip
    return {(namespace, str(body.get("spec", {}).get("catalogRef", {}).get("name"))): doc}


@kopf.index(GROUP, VERSION, JOBS)
async def policy_runs(namespace: str | None, name: str, body: kopf.Body, **_: Any) -> dict[CatalogKey, dict[str, Any]]:
    """Runs by the policy (uid) that created them: its history."""
    meta = body.get("metadata", {})
    owner = policy_uid(meta)
    if owner is None:
        return {}
    spec, annotations = body.get("spec", {}), meta.get("annotations") or {}
    return {
        (namespace, str(owner)): {
            "name": name,
            "created": meta.get("creationTimestamp"),
            "state": (body.get("status") or {}).get("state") or PENDING,
            "table": spec.get("table"),
            "operation": spec.get("operation"),
            "scheduleTime": annotations.get(SCHEDULE_TIME_ANNOTATION),
        }
    }


@kopf.timer(GROUP, VERSION, POLICIES, interval=POLICY_TICK, backoff=POLICY_TICK)  # a failed tick: again at the next
async def policy_tick(
    body: kopf.Body, status: kopf.Status, patch: kopf.Patch, memo: kopf.Memo, namespace: str | None, uid: str,
    **kwargs: Any,
) -> None:  # fmt: skip
    """Create the runs that are due, trim the history, publish the operations' status."""
    ctl: Controller = memo.controller
    catalog_manifests: ManifestIndex = kwargs["catalog_manifests"]
    table_manifests: TableIndex = kwargs["table_manifests"]
    policy_manifests: ManifestIndex = kwargs["policy_manifests"]
    policy_runs: ManifestIndex = kwargs["policy_runs"]
    generation = body.get("metadata", {}).get("generation")

    def ready(ok: bool, reason: str, message: str = "") -> list[dict[str, Any]]:
        return [condition(READY, ok, reason, message, generation)]

    try:
        policy = parse_manifest(body_manifest(body))
        assert isinstance(policy, MaintenancePolicySpec)
    except SpecError as exc:
        _set_conditions(patch, status, ready(False, INVALID_SPEC, "; ".join(exc.problems)))
        return
    catalog = catalog_for(policy, catalog_manifests)
    if catalog is None:
        _set_conditions(patch, status, ready(False, "CatalogNotFound", f"DuckLakeCatalog {policy.catalog!r} not found"))
        return
    now = datetime.now(UTC)
    created = timestamps.parse(body.get("metadata", {}).get("creationTimestamp")) or now
    tables = list(table_manifests.get((namespace, policy.catalog)) or [])
    siblings = [
        (p, timestamps.parse(d["metadata"].get("creationTimestamp")) or now)
        for d in policy_manifests.get((namespace, policy.catalog)) or []
        if (p := parsed_policy(d)) is not None
    ]
    owner = catalog_wide_owner(siblings)
    try:
        maintained = await ctl.call(maintained_tables, ctl, catalog, policy, tables)
    except DuckLakeError as exc:
        _set_conditions(patch, status, ready(False, "CatalogUnreachable", ctl.scrub(str(exc))))
        return
    runs = list(policy_runs.get((namespace, uid)) or [])
    history = run_history(runs, dict(status.get("operations") or {}))
    planned = plan_policy_runs(policy, created=created, tables=maintained, history=history, now=now,
                               catalog_owner=owner, min_trigger_interval=min_trigger_interval())  # fmt: skip
    for run in planned.runs:
        name = await ctl.call(create_run, body, policy, run)
        history = with_created_run(history, run, name, now)
        kopf.event(body, type="Normal", reason="RunCreated",
                   message=f"{name}: {run.operation} of {run.table or 'the catalog'} ({run.reason})")  # fmt: skip
    await ctl.call(trim_history, namespace, policy.history_limit, runs)
    operations = policy_status(policy, created=created, tables=maintained, history=history, now=now,
                               catalog_owner=owner)  # fmt: skip
    if operations != status.get("operations"):
        patch.status["operations"] = operations
    conflict = planned.conflict
    _set_conditions(patch, status, [
        *ready(True, "Suspended" if policy.suspend else "Scheduling", "; ".join(planned.not_available)),
        condition("Conflict", conflict is not None, "CatalogWideOwner" if conflict else "NoConflict", conflict or "",
                  generation),
    ])  # fmt: skip
    if status.get("observedGeneration") != generation:
        patch.status["observedGeneration"] = generation


def _set_conditions(patch: kopf.Patch, status: kopf.Status, conditions: list[dict[str, Any]]) -> None:
    merged = merge_conditions(status.get("conditions"), conditions)
    if merged != list(status.get("conditions") or []):
        patch.status["conditions"] = merged


def create_run(body: kopf.Body, policy: MaintenancePolicySpec, run: PlannedRun) -> str:
    """The DuckLakeJob for ``run``, owned by the policy (deleted with it); its name."""
    meta = body.get("metadata", {})
    owner = {"apiVersion": API_VERSION, "kind": POLICY_KIND, "name": meta["name"], "uid": meta["uid"],
             "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    annotations = {REASON_ANNOTATION: run.reason[:1000]}
    if run.table:
        annotations[TABLE_LABEL] = run.table
    if run.schedule_time is not None:
        annotations[SCHEDULE_TIME_ANNOTATION] = timestamps.stamp(run.schedule_time)
    job = {
        "apiVersion": API_VERSION,
        "kind": JOB_KIND,
        "metadata": {
            "generateName": f"{meta['name']}-{run.operation.lower()}-"[:50],
            "ownerReferences": [owner],
            "labels": {POLICY_LABEL: meta["name"][:63], OPERATION_LABEL: run.operation},
            "annotations": annotations,
        },
        "spec": {
            "catalogRef": {"name": policy.catalog},
            "operation": run.operation,
            "params": dict(run.params),
            **({"table": run.table} if run.table else {}),
        },
    }
    created = custom_objects_api().create_namespaced_custom_object(GROUP, VERSION, meta["namespace"], JOBS, job)
    return str(created["metadata"]["name"])


def trim_history(namespace: str, limit: int, runs: Sequence[Mapping[str, Any]]) -> None:
    """Keep the newest ``limit`` ended runs per table and operation; delete older ones."""
    from kubernetes.client.exceptions import ApiException

    ended: dict[HistoryKey, list[Mapping[str, Any]]] = {}
    for run in runs:
        if run["state"] in ENDED_STATES:
            ended.setdefault((run.get("table"), str(run.get("operation"))), []).append(run)
    for kept in ended.values():
        kept.sort(key=lambda r: (r.get("created") or "", r["name"]), reverse=True)
        for old in kept[limit:]:
            try:
                custom_objects_api().delete_namespaced_custom_object(GROUP, VERSION, namespace, JOBS, old["name"])
            except ApiException as exc:
                if exc.status != 404:  # gone already; anything else: the next tick tries again
                    log.warning("deleting the old run %s/%s: HTTP %s", namespace, old["name"], exc.status)
