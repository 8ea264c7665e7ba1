"""The DuckLakeMaintenancePolicy reconciler's reads: the tables a policy selects as the
catalog has them (with the health figures its triggers need), and the history of its runs
per table and operation, from the runs index (pure). What is due is decided by the pure
planner ``maintenance.policy_runs``; ``policies.handlers`` creates and trims the runs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from ...api.v1alpha1.catalog import CatalogSpec
from ...api.v1alpha1.policy import MaintenancePolicySpec
from ...catalog.job_inputs import read_health_inputs
from ...maintenance.policy_params import MaintainedTable
from ...maintenance.policy_runs import (
    DEFAULT_MIN_TRIGGER_INTERVAL,
    HistoryKey,
    LastRun,
    OperationHistory,
    schedule_times,
)
from ...maintenance.selection import selects
from ...model import timestamps
from ...model.durations import parse_duration
from ..context import Controller
from ..runs.tick import ACTIVE


def min_trigger_interval(env: Mapping[str, str] = os.environ) -> timedelta:
    """How soon a health trigger may run a table's operation again (``DUCKLAKE_TRIGGER_INTERVAL``)."""
    text = env.get("DUCKLAKE_TRIGGER_INTERVAL")
    return parse_duration(text) if text else DEFAULT_MIN_TRIGGER_INTERVAL


def maintained_tables(
    ctl: Controller, catalog: CatalogSpec, policy: MaintenancePolicySpec, docs: Sequence[Mapping[str, Any]]
) -> list[MaintainedTable]:
    """The tables the policy selects that exist in the catalog, with their options in force
    and, when a health trigger needs them, their schema versions and inlined deletions."""
    cat, _ = ctl.pool.catalog(catalog)
    state = ctl.pool.state(catalog, cat, max_age=1.0)
    chosen = []
    for doc in docs:
        spec = doc.get("spec", {})
        schema, name = str(spec.get("schema") or "main"), str(spec.get("name"))
        if not selects(policy, f"{schema}.{name}", (doc.get("metadata") or {}).get("labels") or {}):
            continue
        table = state.table(schema, name)
        if table is not None:
            chosen.append((f"{table.schema_name}.{table.name}", table))
    triggers = (policy.compaction is not None and policy.compaction.schedule.when_small_files_above is not None) or (
        policy.delete_rewrite is not None
    )
    health = {}
    if triggers and chosen:
        health = read_health_inputs(cat, [t for _, t in chosen])
    out = []
    for name, table in chosen:
        options = state.options_in_force(table)
        h = health.get(table.table_id)
        out.append(
            MaintainedTable(name, table, options, tuple(h.schema_versions), h.inlined_deletions)
            if h
            else MaintainedTable(name, table, options)
        )
    return out


def run_history(runs: Sequence[Mapping[str, Any]], operations: Mapping[str, Any]) -> dict[HistoryKey, OperationHistory]:
    """Per table and operation: the cron time last paid (the status's, or a newer one a run
    carries), the latest run, and whether one has not ended."""
    scheduled = schedule_times(operations)
    out: dict[HistoryKey, OperationHistory] = {}
    for run in sorted(runs, key=lambda r: r.get("created") or ""):
        key = (run.get("table"), str(run.get("operation")))
        past = out.get(key, OperationHistory(last_schedule_time=scheduled.get(key)))
        paid = timestamps.parse(run.get("scheduleTime"))
        last_paid = max((t for t in (past.last_schedule_time, paid) if t is not None), default=None)
        last = LastRun(str(run["name"]), str(run["state"]), timestamps.parse(run.get("created")) or datetime.now(UTC))
        out[key] = OperationHistory(last_paid, last, past.active or run["state"] in ACTIVE)
    for key, when in scheduled.items():
        out.setdefault(key, OperationHistory(last_schedule_time=when))
    return out
