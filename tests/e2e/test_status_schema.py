"""Every status field the operator writes is declared in its CRD: the real API server prunes
undeclared fields silently. The statuses come from the reconcilers themselves (real
catalogs, each kind in its typical states), are written to the status subresource as the
operator writes them, and read back unchanged. A DuckLakeJob's status is every field its
controller and its job program write over a run's life (all its CRD declares), a policy's
is what the policy planner publishes."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from ducklake_jobs.job_status import JobStatus, without_nulls
from ducklake_jobs.launched_program import Events, Outcome
from ducklake_operator.api.load import parse_manifest
from ducklake_operator.controller.catalog_pool import CatalogPool
from ducklake_operator.controller.catalogs.reconciler import reconcile_catalog
from ducklake_operator.controller.crds import job_schema
from ducklake_operator.controller.launchers.observe import with_pods
from ducklake_operator.controller.launchers.pods import read_pods
from ducklake_operator.controller.launchers.spec import Observed
from ducklake_operator.controller.runs.attempts import FIGURES, attempt_failure
from ducklake_operator.controller.runs.tick import Tick, duration, stamp
from ducklake_operator.controller.status import condition, merge_conditions, table_health
from ducklake_operator.controller.tables.reconciler import check_table_drift, reconcile_schema, reconcile_table
from ducklake_operator.maintenance.policy_params import MaintainedTable
from ducklake_operator.maintenance.policy_runs import LastRun, OperationHistory, policy_status
from ducklake_operator.model.job_marker import EXIT_SUCCEEDED
from ducklake_operator.model.state import TableState
from support.manifests import manifest, sqlite_catalog, table


def parsed(doc: dict[str, Any], namespace: str) -> Any:
    return parse_manifest({**doc, "metadata": {**doc["metadata"], "namespace": namespace, "generation": 1}})


def statuses(namespace: str, directory: str) -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """(kind, name, manifest, status) for each kind in the states the operator reports."""
    pool = CatalogPool()
    lake = sqlite_catalog("lake", directory)
    gone = sqlite_catalog("gone", directory, metadata={"sqlite": {"path": "/nonexistent/dir/x.sqlite"}})
    sales = manifest("DuckLakeSchema", "sales", {"catalogRef": {"name": "lake"}, "name": "sales"})
    orders = table("orders", "lake", schema="sales")
    narrowed = table("orders", "lake", schema="sales", columns=[{"name": "id", "type": "int64"}])
    out = []
    try:
        lake_spec = parsed(lake, namespace)
        out.append(("DuckLakeCatalog", "lake", lake, reconcile_catalog(lake_spec, pool)))
        out.append(("DuckLakeCatalog", "gone", gone, reconcile_catalog(parsed(gone, namespace), pool)))
        out.append(("DuckLakeSchema", "sales", sales, reconcile_schema(parsed(sales, namespace), lake_spec, pool)))
        out.append(("DuckLakeTable", "orders", orders, reconcile_table(parsed(orders, namespace), lake_spec, pool)))
        blocked = reconcile_table(parsed(narrowed, namespace), lake_spec, pool)  # a drop: blocked
        out.append(("DuckLakeTable", "blocked", {**narrowed, "metadata": {"name": "blocked"}}, blocked))
        drifted = check_table_drift(parsed(narrowed, namespace), lake_spec, pool)
        out.append(("DuckLakeTable", "drifted", {**narrowed, "metadata": {"name": "drifted"}}, drifted))
        waiting = reconcile_table(parsed(orders, namespace), None, pool)
        out.append(("DuckLakeTable", "waiting", {**orders, "metadata": {"name": "waiting"}}, waiting))
        catalog, _ = pool.catalog(lake_spec)
        table_state = pool.state(lake_spec, catalog).table("sales", "orders")
    finally:
        pool.close()
    assert table_state is not None
    return [
        (kind, name, doc, {**o.status, "conditions": merge_conditions([], o.conditions)}) for kind, name, doc, o in out
    ] + [run_status(table_state), policy_status_of(namespace, table_state)]


def run_status(table_state: TableState) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    """A DuckLakeJob's status with every field written over a run's life: the controller's
    (waiting, launched, retried, ended) and the job program's own patches (progress, jobReport)."""
    # cancelled from the start: an operator running in the same session ends it without launching
    # anything, so it writes no object field (launched, before) that the patch below would merge into
    doc = manifest("DuckLakeJob", "compact-1", {"catalogRef": {"name": "lake"}, "table": "sales.orders",
                                                "operation": "compact", "cancel": True})  # fmt: skip
    start = datetime(2026, 1, 1, 2, 0, tzinfo=UTC).timestamp()
    report = {"operation": "compact", "table": "sales.orders", "ranOn": "spark", "committedSnapshot": 7,
              **{k: 10 + i for i, k in enumerate(FIGURES)}}  # fmt: skip
    patches: list[dict[str, Any]] = []
    events = Events(lambda line: None, set())
    events.status = JobStatus(patches.append)
    events.progress("writing", 1, 2)
    events.result(Outcome("Succeeded", EXIT_SUCCEEDED, "compact sales.orders: committed snapshot 7", report, 7))
    ended = Tick().end("Succeeded", "committed snapshot 7; 10 files read, 11 written", start + 95, 1).status
    never_pulled = {"metadata": {"name": "compact-1-a1-x7k2p"}, "spec": {"nodeName": "node-1"},
                    "status": {"phase": "Pending", "containerStatuses": [{"name": "driver", "state": {"waiting": {
                        "reason": "ErrImageNeverPull",
                        "message": 'Container image "ducklake:1" is not present with pull policy of Never'}}}]}}  # fmt: skip
    stuck = with_pods(
        Observed("Pending", "Job compact-1-a1's pod is not running yet"), read_pods([never_pulled], start)
    )
    status: dict[str, Any] = {
        "observedGeneration": 1,
        "attempts": 2,
        "startTime": stamp(start),
        "deadline": stamp(start + 1800),
        "baseSnapshot": 6,
        "launched": {"kind": "Local", "name": "compact-1-a2",
                     "detail": {"pid": 4242, "startTime": 987654, "log": "/runs/compact-1-a2.out.log"}},
        "locks": ["ducklake-table-0123456789abcdef", "ducklake-slot-fedcba9876543210"],
        "launcher": "Local",
        "waitingFor": "DuckLakeJob compact-0, which holds table sales.orders",
        "nextAttemptAt": stamp(start + 60),
        "attemptFailure": attempt_failure(stuck),  # the first attempt's pod never started
        "before": table_health(table_state),
        "after": table_health(table_state),
        "committedSnapshot": 7,
        "ranOn": "spark",
        "duration": duration(95),
        **{k: report[k] for k in FIGURES},
        **{k: v for patch in patches for k, v in patch["status"].items()},
        **{k: v for k, v in ended.items() if v is not None},
        "conditions": merge_conditions([], ended["conditions"]),  # as write_status merges them
    }  # fmt: skip
    declared = set(job_schema()["status"]["properties"]) - {"kopf"}
    assert set(status) == declared, f"the test's DuckLakeJob status misses {declared - set(status)}"
    return "DuckLakeJob", "compact-1", doc, status


def policy_status_of(namespace: str, table_state: TableState) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    """A policy's status as ``policy_tick`` publishes it: operations from the planner, conditions."""
    spec = {"catalogRef": {"name": "lake"}, "window": {"start": "22:00", "end": "04:00", "timezone": "Europe/Amsterdam"},
            "compaction": {"schedule": "0 3 * * *", "whenSmallFilesAbove": 10},
            "deleteRewrite": {"schedule": "0 4 * * *"}, "snapshotExpiry": {"schedule": "0 5 * * *", "olderThan": "7d"},
            "fileCleanup": {"schedule": "0 6 * * *", "orphanFiles": True}}  # fmt: skip
    doc = manifest("DuckLakeMaintenancePolicy", "nightly", spec)
    policy = parsed(doc, namespace)
    now = datetime(2026, 1, 2, 12, 0, tzinfo=UTC)
    history = {("sales.orders", "compact"): OperationHistory(now - timedelta(hours=33),
                                                             LastRun("nightly-compact-x1", "Succeeded", now), False),
               (None, "expireSnapshots"): OperationHistory(now - timedelta(hours=31),
                                                           LastRun("nightly-expiresnapshots-x2", "Failed", now))}  # fmt: skip
    operations = policy_status(policy, created=now - timedelta(days=3), now=now, catalog_owner="nightly",
                               tables=[MaintainedTable("sales.orders", table_state)], history=history)  # fmt: skip
    conditions = merge_conditions([], [condition("Ready", True, "Scheduling", "", 1),
                                       condition("Conflict", False, "NoConflict", "", 1)])  # fmt: skip
    return "DuckLakeMaintenancePolicy", "nightly", doc, {"operations": operations, "conditions": conditions,
                                                        "observedGeneration": 1}  # fmt: skip


def test_every_status_field_survives_the_api_server(cluster, chart, kube, tmp_path) -> None:
    written = statuses(kube.namespace, str(tmp_path))
    assert {kind for kind, *_ in written} == {"DuckLakeCatalog", "DuckLakeSchema", "DuckLakeTable", "DuckLakeJob",
                                              "DuckLakeMaintenancePolicy"}  # fmt: skip
    assert any(s.get("blockedChanges") for *_, s in written) and any(s.get("drift") for *_, s in written)
    for kind, name, doc, status in written:
        kube.apply({**doc, "metadata": {"name": name}})
        clean = without_nulls(status)  # a null removes a field in a merge patch, at any depth
        # a server-side dry run returns the object as stored after pruning, and the operator
        # (which reconciles these objects too) cannot write in between
        out = kube.kubectl("patch", kind.lower(), name, "--subresource=status", "--type=merge", "--dry-run=server",
                           "-o", "json", "-p", json.dumps({"status": clean}))  # fmt: skip
        stored = json.loads(out)["status"]
        assert {k: stored.get(k) for k in clean} == clean, f"{kind}/{name}: the API server pruned status fields"
