"""What a maintenance policy runs now, and the status it publishes (pure).

The controller calls this on a timer with the policy, the tables it selects (read from the
catalog), the history of its runs and the time; it gets back the DuckLakeJobs to create,
each with its params and a reason a person can read ("schedule 0 2 * * *", "12 small files
> 10", "missed schedule at 2025-03-30 02:00 CEST"). Then, with the runs it created added
to the history (``with_created_run``), it publishes ``policy_status``.

Rules, per table and operation (catalog-wide operations: per operation, table ``None``):

* ``suspend`` runs nothing; nothing starts outside the window.
* A run pending or running for the same table and operation blocks a new one; the cron
  times that pass meanwhile stay owed and are paid by one run when it ends (``schedule``).
* A schedule's owed cron times run once, for the latest (``schedule.due``); the run's cron
  time is its ``lastScheduleTime``, published in the status and read back next time, so no
  cron time runs twice, across operator restarts too. Without one, cron times count from
  the policy's creation.
* A health trigger (``triggers``) fires at most once per evaluation, and not sooner than
  ``min_trigger_interval`` after the last run of that table and operation started.
* An operation that is not available yet creates no run; its status says so.
* Catalog-wide operations run only in the catalog's owner policy (``selection``); the others
  report the conflict and run none of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from ..api.v1alpha1.job import PENDING
from ..api.v1alpha1.policy import MaintenancePolicySpec, Schedule
from ..model import timestamps
from ..model.job_params import OPERATIONS
from .policy_params import MaintainedTable, catalog_params, catalog_schedules, table_params, table_schedules
from .schedule import due, next_due
from .selection import conflict_message
from .triggers import trigger_reason
from .windows import aware, in_window

# Triggers re-read the catalog on every evaluation; this keeps a table whose compaction
# cannot get it under the threshold from being compacted back to back.
DEFAULT_MIN_TRIGGER_INTERVAL = timedelta(minutes=10)
# Tables of one policy mostly share their last cron time: one evaluation computes each answer once.
_due = lru_cache(maxsize=4096)(due)
_next_due = lru_cache(maxsize=4096)(next_due)

HistoryKey = tuple[str | None, str]  # (table or None for catalog-wide, operation)


@dataclass(frozen=True)
class LastRun:
    name: str
    state: str  # Pending | Running | Succeeded | Failed | Cancelled
    time: datetime  # when it was created


@dataclass(frozen=True)
class OperationHistory:
    """What the caller knows of one table's (or the catalog's) runs of one operation."""

    last_schedule_time: datetime | None = None  # the cron time the latest scheduled run paid
    last_run: LastRun | None = None
    active: bool = False  # a run is Pending or Running


@dataclass(frozen=True)
class PlannedRun:
    table: str | None  # None: catalog-wide
    operation: str
    params: Mapping[str, Any]
    reason: str
    schedule_time: datetime | None  # the cron time it pays; None: a health trigger


@dataclass(frozen=True)
class PolicyRuns:
    runs: tuple[PlannedRun, ...]
    conflict: str | None  # the Conflict condition's message; None: Conflict=False
    not_available: tuple[str, ...] = field(default=())  # one message per scheduled operation that cannot run yet


def plan_policy_runs(
    policy: MaintenancePolicySpec,
    *,
    created: datetime,
    tables: Sequence[MaintainedTable],
    history: Mapping[HistoryKey, OperationHistory],
    now: datetime,
    catalog_owner: str | None,
    min_trigger_interval: timedelta = DEFAULT_MIN_TRIGGER_INTERVAL,
) -> PolicyRuns:
    """The runs to create now. ``tables``: those the policy selects (``selection.selects``);
    ``catalog_owner``: ``selection.catalog_wide_owner`` over the catalog's policies."""
    now = aware(now)
    conflict = conflict_message(policy, catalog_owner)
    not_available = tuple(
        f"{op} is not available yet: the policy's schedule for it creates no run"
        for op in table_schedules(policy)
        if not OPERATIONS[op].available
    )
    if policy.suspend:
        return PolicyRuns((), conflict, not_available)
    runs: list[PlannedRun] = []
    for table in sorted(tables, key=lambda t: t.name):
        params = table_params(policy, table)
        for op, schedule in table_schedules(policy).items():
            if OPERATIONS[op].available:
                run = _run(policy, op, schedule, table, params[op], history, created, now, min_trigger_interval)
                runs += [run] if run else []
    if conflict is None:
        params = catalog_params(policy)
        for op, schedule in catalog_schedules(policy).items():
            run = _run(policy, op, schedule, None, params[op], history, created, now, min_trigger_interval)
            runs += [run] if run else []
    return PolicyRuns(tuple(runs), conflict, not_available)


def _run(
    policy: MaintenancePolicySpec,
    op: str,
    schedule: Schedule,
    table: MaintainedTable | None,
    params: Mapping[str, Any],
    history: Mapping[HistoryKey, OperationHistory],
    created: datetime,
    now: datetime,
    min_trigger_interval: timedelta,
) -> PlannedRun | None:
    name = table.name if table else None
    past = history.get((name, op), OperationHistory())
    if past.active:
        return None
    owed = _due(schedule.cron, now, since=past.last_schedule_time or created, window=policy.window)
    if owed is not None:
        return PlannedRun(name, op, dict(params), owed.reason, owed.cron_time)
    if table is None or not in_window(policy.window, now):
        return None
    if past.last_run is not None and now - aware(past.last_run.time) < min_trigger_interval:
        return None
    reason = trigger_reason(policy, op, table, params)
    return PlannedRun(name, op, dict(params), reason, None) if reason else None


def with_created_run(
    history: Mapping[HistoryKey, OperationHistory], run: PlannedRun, name: str, now: datetime
) -> dict[HistoryKey, OperationHistory]:
    """``history`` after the caller created ``run`` as the DuckLakeJob ``name``."""
    key = (run.table, run.operation)
    past = history.get(key, OperationHistory())
    return {
        **history,
        key: replace(
            past,
            last_schedule_time=run.schedule_time or past.last_schedule_time,
            last_run=LastRun(name, PENDING, aware(now)),
            active=True,
        ),
    }


# ------------------------------------------------------------------ status


def stamp(instant: datetime | None) -> str | None:
    return timestamps.stamp(aware(instant)) if instant is not None else None


def _last_run(run: LastRun | None, table: str | None = None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {"name": run.name, "state": run.state, "time": stamp(run.time), **({"table": table} if table else {})}


def policy_status(
    policy: MaintenancePolicySpec,
    *,
    created: datetime,
    tables: Sequence[MaintainedTable],
    history: Mapping[HistoryKey, OperationHistory],
    now: datetime,
    catalog_owner: str | None,
) -> dict[str, Any]:
    """``status.operations``: per operation its schedule, last run and next run; per table
    the params its runs get (the effective settings) and its ``lastScheduleTime``.
    ``nextRun`` is when the next scheduled run can start (null while suspended)."""
    now = aware(now)
    out: dict[str, Any] = {}

    def next_run(schedule: Schedule, key: HistoryKey) -> datetime | None:
        if policy.suspend:
            return None
        since = history.get(key, OperationHistory()).last_schedule_time or created
        return _next_due(schedule.cron, now, since=since, window=policy.window)

    per_table = {t.name: table_params(policy, t) for t in tables}
    for op, schedule in table_schedules(policy).items():
        entry: dict[str, Any] = {"schedule": schedule.cron}
        if not OPERATIONS[op].available:
            out[op] = {**entry, "available": False, "message": f"{op} is not available yet; no run is created"}
            continue
        if trigger := _trigger(policy, op):
            entry["trigger"] = trigger
        rows: dict[str, Any] = {}
        runs: list[tuple[datetime, str, LastRun]] = []
        upcoming: list[datetime] = []
        for name in sorted(per_table):
            past = history.get((name, op), OperationHistory())
            rows[name] = {
                "params": per_table[name][op],
                "lastScheduleTime": stamp(past.last_schedule_time),
                "lastRun": _last_run(past.last_run),
            }
            if past.last_run is not None:
                runs.append((aware(past.last_run.time), name, past.last_run))
            if (when := next_run(schedule, (name, op))) is not None:
                upcoming.append(when)
        latest = max(runs, key=lambda r: r[0], default=None)
        out[op] = {
            **entry,
            "lastRun": _last_run(latest[2], latest[1]) if latest else None,
            "nextRun": stamp(min(upcoming)) if upcoming else None,
            "tables": rows,
        }
    conflict = conflict_message(policy, catalog_owner)
    params = catalog_params(policy)
    for op, schedule in catalog_schedules(policy).items():
        if conflict is not None:
            out[op] = {"schedule": schedule.cron, "runBy": catalog_owner, "nextRun": None}
            continue
        past = history.get((None, op), OperationHistory())
        out[op] = {
            "schedule": schedule.cron,
            "params": params[op],
            "lastScheduleTime": stamp(past.last_schedule_time),
            "lastRun": _last_run(past.last_run),
            "nextRun": stamp(next_run(schedule, (None, op))),
        }
    return out


def _trigger(policy: MaintenancePolicySpec, op: str) -> str | None:
    if op == "compact" and policy.compaction and policy.compaction.schedule.when_small_files_above is not None:
        return f"more than {policy.compaction.schedule.when_small_files_above} small files"
    if op == "rewriteDeletes" and policy.delete_rewrite:
        return "a file's delete ratio reaches deleteThreshold"
    return None


def schedule_times(operations: Mapping[str, Any]) -> dict[HistoryKey, datetime]:
    """The ``lastScheduleTime`` of every table and operation in a published
    ``status.operations``: what the next evaluation takes as history."""
    out: dict[HistoryKey, datetime] = {}

    read = timestamps.parse
    for op, entry in operations.items():
        if not isinstance(entry, Mapping):
            continue
        if (t := read(entry.get("lastScheduleTime"))) is not None:
            out[(None, op)] = t
        for table, row in (entry.get("tables") or {}).items():
            if isinstance(row, Mapping) and (t := read(row.get("lastScheduleTime"))) is not None:
                out[(table, op)] = t
    return out
