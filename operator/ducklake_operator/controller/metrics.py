"""Prometheus metrics of the controller (served by main on --metrics-port); the README lists them."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from prometheus_client import Counter, Gauge, Histogram

from ..api.v1alpha1.job import ENDED_STATES, RUNNING, SUCCEEDED

RECONCILES = Counter(
    "ducklake_reconciles_total",
    "Reconciles by kind and result (ok, a condition reason, or settled: a resumed table with nothing to plan).",
    ["kind", "result"],
)
RECONCILE_SECONDS = Histogram("ducklake_reconcile_seconds", "Time to reconcile one object.", ["kind"])
CATALOG_QUERIES = Counter(
    "ducklake_catalog_queries_total", "Statements sent to catalog databases (transaction control excluded)."
)
DRIFT_PASS_SECONDS = Histogram(
    "ducklake_drift_pass_seconds",
    "Time of one catalog's drift pass: its health check, then the drift of each of its Ready tables.",
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, float("inf")),
)
DRIFT_PASS_TABLES = Counter("ducklake_drift_tables_checked_total", "Tables whose drift a catalog's pass checked.")
RECONCILE = "reconcile"  # the commit metrics' operation for the operator's own commits (a job's: its operation)
COMMIT_RETRIES = Counter(
    "ducklake_catalog_commit_retries_total",
    "Commit attempts that collided with a concurrent writer and were retried, by operation (reconcile: the "
    "operator's own commits; else the maintenance job's).",
    ["operation"],
)
COMMIT_CONFLICTS = Counter(
    "ducklake_catalog_commit_conflicts_total",
    "Commits refused because a concurrent commit changed what they change, by operation (a job's re-plans).",
    ["operation"],
)
JOBS = Counter("ducklake_jobs_total", "Maintenance runs that ended, by operation and state.", ["operation", "state"])
JOB_SECONDS = Histogram(
    "ducklake_job_duration_seconds",
    "Time from a run's start to its end, by operation.",
    ["operation"],
    buckets=(1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, float("inf")),
)
CRD_CURRENT = Gauge(
    "ducklake_crd_current",
    "1 when the cluster's CustomResourceDefinition is the one this operator was built with (its ducklake.dev/schema "
    "digest), else 0; compared at the operator's start.",
    ["crd"],
)
JOBS_RUNNING = Gauge("ducklake_jobs_running", "Maintenance runs Running now, by operation.", ["operation"])
TABLES = Gauge("ducklake_tables", "DuckLakeTables by condition and its status.", ["condition", "status"])
TABLE_SMALL_FILES = Gauge("ducklake_table_small_files", "Small data files of a table.", ["namespace", "table"])
TABLE_BYTES = Gauge("ducklake_table_bytes", "Bytes in a table's live data files.", ["namespace", "table"])

_conditions: dict[str, dict[str, str]] = {}  # table uid -> condition type -> status
_counts: dict[tuple[str, str], int] = {}  # (condition type, status) -> tables
_running: dict[str, str] = {}  # run uid -> operation, for the runs Running now
_lock = threading.Lock()


def run_seen(uid: str, operation: str, state: str, started: float | None, now: float) -> None:
    """Record a run's state as published: Running runs by operation; an ended run counted
    once (its daemon ends with it) with its duration."""
    with _lock:
        was_running = _running.pop(uid, None) is not None
        if state == RUNNING:
            _running[uid] = operation
        counts: dict[str, int] = {}
        for op in _running.values():
            counts[op] = counts.get(op, 0) + 1
    for op in {operation, *counts}:
        JOBS_RUNNING.labels(operation=op).set(counts.get(op, 0))
    if state in ENDED_STATES:
        JOBS.labels(operation=operation, state=state).inc()
        if started is not None and (was_running or state == SUCCEEDED):
            JOB_SECONDS.labels(operation=operation).observe(max(now - started, 0.0))


def job_commits(operation: str, report: Mapping[str, Any]) -> None:
    """A job attempt's own commit retries and conflicts, as its report counts them."""
    for counter, key in ((COMMIT_RETRIES, "commitRetries"), (COMMIT_CONFLICTS, "commitConflicts")):
        count = report.get(key)
        if isinstance(count, int) and count > 0:
            counter.labels(operation=operation).inc(count)


def table_seen(uid: str, namespace: str, name: str, status: Mapping[str, Any]) -> None:
    """Record a table's status as published (conditions and health). Counts change by the
    table's own difference: a resync of many tables costs no pass over all of them each."""
    conditions = {c.get("type", ""): c.get("status", "Unknown") for c in status.get("conditions") or []}
    with _lock:
        changed = _count(_conditions.get(uid, {}), -1) | _count(conditions, +1)
        _conditions[uid] = conditions
        values = {key: _counts[key] for key in changed}
    for (type_, value), n in values.items():
        TABLES.labels(condition=type_, status=value).set(n)
    stats = status.get("stats") or {}
    if stats:
        TABLE_SMALL_FILES.labels(namespace=namespace, table=name).set(stats.get("smallFiles") or 0)
        TABLE_BYTES.labels(namespace=namespace, table=name).set(stats.get("bytes") or 0)


def table_gone(uid: str, namespace: str, name: str) -> None:
    with _lock:
        changed = _count(_conditions.pop(uid, {}), -1)
        values = {key: _counts[key] for key in changed}
    for (type_, value), n in values.items():
        TABLES.labels(condition=type_, status=value).set(n)
    for gauge in (TABLE_SMALL_FILES, TABLE_BYTES):
        try:
            gauge.remove(namespace, name)
        except KeyError:
            pass


def _count(conditions: Mapping[str, str], step: int) -> set[tuple[str, str]]:
    """Add ``step`` to the count of each (type, status) in ``conditions`` (under ``_lock``)."""
    keys = set(conditions.items())
    for key in keys:
        _counts[key] = _counts.get(key, 0) + step
    return keys
