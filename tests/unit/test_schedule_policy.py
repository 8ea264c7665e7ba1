"""What a maintenance policy runs and publishes: scheduled and triggered runs per table,
suspend, the minimum trigger interval, selectors, the catalog-wide owner, effective
settings. Fixed clocks; tables are TableStates built here."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ducklake_operator.api.load import parse_manifest
from ducklake_operator.api.v1alpha1.policy import MaintenancePolicySpec
from ducklake_operator.errors import SpecError
from ducklake_operator.maintenance.policy_params import MaintainedTable, catalog_params, table_params
from ducklake_operator.maintenance.policy_runs import (
    DEFAULT_MIN_TRIGGER_INTERVAL,
    HistoryKey,
    LastRun,
    OperationHistory,
    PlannedRun,
    PolicyRuns,
    plan_policy_runs,
    policy_status,
    schedule_times,
    with_created_run,
)
from ducklake_operator.maintenance.selection import catalog_wide_owner, conflict_message, selects
from ducklake_operator.model.job_params import job_keywords
from ducklake_operator.model.options import DEFAULT_TARGET_FILE_SIZE
from ducklake_operator.model.state import DataFile, DeleteFile, TableState
from support.data_files import df

MB = 1_000_000
CREATED = datetime(2025, 6, 1, tzinfo=UTC)


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2025, 6, day, hour, minute, tzinfo=UTC)


def policy(name: str = "nightly", **spec: Any) -> MaintenancePolicySpec:
    parsed = parse_manifest(
        {
            "kind": "DuckLakeMaintenancePolicy",
            "metadata": {"name": name, "namespace": "data"},
            "spec": {"catalogRef": {"name": "lake"}, **spec},
        }
    )
    assert isinstance(parsed, MaintenancePolicySpec)
    return parsed


def table(
    name: str = "sales.orders",
    files: list[DataFile] | None = None,
    deletes: Mapping[int, int] | None = None,
    *,
    options: Mapping[str, str] | None = None,
    inlined: Mapping[int, int] | None = None,
) -> MaintainedTable:
    schema, short = name.split(".")
    state = TableState(
        1,
        "u",
        0,
        schema,
        short,
        f"{short}/",
        True,
        1,
        (),
        2,
        data_files=tuple(files or ()),
        delete_files=tuple(
            DeleteFile(100 + f, 1, 1, None, f, "x", True, "parquet", n, 1, None, None, None)
            for f, n in (deletes or {}).items()
        ),
    )
    return MaintainedTable(name, state, options, inlined_deletions=dict(inlined or {}))


def small(n: int) -> list[DataFile]:
    """``n`` files of 1 MB, 100 rows each, in one partition."""
    return [df(i, MB, begin=i + 1) for i in range(n)]


History = Mapping[HistoryKey, OperationHistory]


def plan(
    p: MaintenancePolicySpec,
    tables: list[MaintainedTable],
    now: datetime,
    history: History | None = None,
    *,
    owner: str | None = "nightly",
    created: datetime = CREATED,
    min_trigger_interval: timedelta = DEFAULT_MIN_TRIGGER_INTERVAL,
) -> PolicyRuns:
    return plan_policy_runs(
        p,
        created=created,
        tables=tables,
        history=history or {},
        now=now,
        catalog_owner=owner,
        min_trigger_interval=min_trigger_interval,
    )


def trigger_plan(
    p: MaintenancePolicySpec, tables: list[MaintainedTable], now: datetime, history: History | None = None, **kw: Any
) -> PolicyRuns:
    """Created after the day's cron times: only triggers are due that day."""
    return plan(p, tables, now, history, created=at(1, 6), **kw)


# ------------------------------------------------------------------ effective settings


def test_effective_settings_take_the_policy_then_the_tables_options_then_the_defaults() -> None:
    p = policy(
        compaction={"schedule": "0 2 * * *", "minInputFiles": 4, "sort": False},
        deleteRewrite={"schedule": "0 3 * * *"},
        inlinedDataFlush={"schedule": "0 1 * * *"},
    )
    plain = table_params(p, table())
    assert plain == {
        "compact": {
            "targetFileSize": DEFAULT_TARGET_FILE_SIZE,
            "smallFileThreshold": DEFAULT_TARGET_FILE_SIZE,
            "minInputFiles": 4,
            "sort": False,
            "applyDeletes": True,
        },
        "rewriteDeletes": {"deleteThreshold": 0.95},
        "flushInlinedData": {},
    }
    tuned = table_params(p, table(options={"target_file_size": "64000000", "rewrite_delete_threshold": "0.300000"}))
    assert tuned["compact"]["targetFileSize"] == 64_000_000 and tuned["compact"]["smallFileThreshold"] == 64_000_000
    assert tuned["rewriteDeletes"] == {"deleteThreshold": 0.3}
    explicit = policy(
        compaction={"schedule": "0 2 * * *", "targetFileSize": "128MB", "smallFileThreshold": "16MB"},
        deleteRewrite={"schedule": "0 3 * * *", "deleteRatioThreshold": 0.5},
    )
    over = table_params(explicit, table(options={"target_file_size": "64000000", "rewrite_delete_threshold": "0.3"}))
    assert over["compact"]["targetFileSize"] == 128_000_000 and over["compact"]["smallFileThreshold"] == 16_000_000
    assert over["rewriteDeletes"] == {"deleteThreshold": 0.5}
    for params in (plain, tuned, over):  # what the DuckLakeJob's params must be
        for op, values in params.items():
            job_keywords(op, values)


def test_catalog_wide_params_default_grace_and_dry_run() -> None:
    p = policy(
        snapshotExpiry={"schedule": "0 4 * * 0", "olderThan": "7d", "retainLast": 10},
        fileCleanup={"schedule": "0 5 * * 0", "orphanFiles": True, "dryRun": True},
    )
    params = catalog_params(p)
    assert params == {
        "expireSnapshots": {"olderThan": "7d", "retainLast": 10},
        "cleanupFiles": {"olderThan": "3d", "dryRun": True},
        "deleteOrphanFiles": {"olderThan": "3d", "dryRun": True},
    }
    for op, values in params.items():
        job_keywords(op, values)
    assert "deleteOrphanFiles" not in catalog_params(policy(fileCleanup={"schedule": "0 5 * * 0"}))  # off by default


def test_a_dry_run_policy_makes_every_run_a_dry_run() -> None:
    sections: dict[str, Any] = {"compaction": {"schedule": "0 3 * * *"}, "deleteRewrite": {"schedule": "0 3 * * *"},
                "inlinedDataFlush": {"schedule": "0 3 * * *"}, "snapshotExpiry": {"schedule": "0 4 * * 0",
                "olderThan": "7d"}, "fileCleanup": {"schedule": "0 5 * * 0", "orphanFiles": True}}  # fmt: skip
    trial = policy(dryRun=True, **sections)
    per_table = table_params(trial, table())
    assert set(per_table) == {"compact", "rewriteDeletes", "flushInlinedData"}
    for params in (*per_table.values(), *catalog_params(trial).values()):
        assert params["dryRun"] is True
    for op, params in {**per_table, **catalog_params(trial)}.items():
        assert job_keywords(op, params)["dry_run"] is True
    assert "dryRun" not in table_params(policy(**sections), table())["compact"]  # off unless asked


# ------------------------------------------------------------------ scheduled runs


def test_scheduled_runs_once_per_table_and_cron_time() -> None:
    p = policy(compaction={"schedule": "0 2 * * *"}, window={"start": "01:00", "end": "05:00"})
    tables = [table("sales.orders"), table("sales.items")]
    assert plan(p, tables, at(1, 1, 59)).runs == ()
    first = plan(p, tables, at(1, 2))
    assert [(r.table, r.operation, r.reason, r.schedule_time) for r in first.runs] == [
        ("sales.items", "compact", "schedule 0 2 * * *", at(1, 2)),
        ("sales.orders", "compact", "schedule 0 2 * * *", at(1, 2)),
    ]
    history: History = {}
    for i, run in enumerate(first.runs):
        history = with_created_run(history, run, f"compact-{i}", at(1, 2))
    assert plan(p, tables, at(1, 2, 1), history).runs == ()  # pending: nothing more
    done = {
        key: OperationHistory(past.last_schedule_time, LastRun(f"compact-{i}", "Succeeded", at(1, 2)), False)
        for i, (key, past) in enumerate(history.items())
    }
    assert plan(p, tables, at(1, 4), done).runs == ()  # paid
    assert [r.schedule_time for r in plan(p, tables, at(2, 2), done).runs] == [at(2, 2), at(2, 2)]


def test_cron_times_passing_while_a_run_is_going_are_paid_by_one_run_after_it() -> None:
    p = policy(compaction={"schedule": "0 * * * *"})
    t = [table()]
    busy: History = {
        ("sales.orders", "compact"): OperationHistory(at(1, 1), LastRun("compact-1", "Running", at(1, 1)), True)
    }
    assert plan(p, t, at(1, 4), busy).runs == ()
    free: History = {
        ("sales.orders", "compact"): OperationHistory(at(1, 1), LastRun("compact-1", "Succeeded", at(1, 1)), False)
    }
    (run,) = plan(p, t, at(1, 4, 20), free).runs
    assert run.schedule_time == at(1, 4) and run.reason == "missed schedule at 2025-06-01 04:00 UTC"


def test_without_history_cron_times_count_from_the_policys_creation() -> None:
    p = policy(compaction={"schedule": "0 2 * * *"})
    (run,) = plan(p, [table()], at(3, 9)).runs  # created June 1, the operator was down until June 3
    assert run.schedule_time == at(3, 2) and run.reason == "missed schedule at 2025-06-03 02:00 UTC"
    assert (
        plan_policy_runs(p, created=at(3, 8), tables=[table()], history={}, now=at(3, 9), catalog_owner=None).runs == ()
    )


def test_suspend_runs_nothing() -> None:
    p = policy(
        compaction={"schedule": "0 2 * * *", "whenSmallFilesAbove": 1},
        snapshotExpiry={"schedule": "0 2 * * *", "retainLast": 3},
        suspend=True,
    )
    assert plan(p, [table(files=small(5))], at(1, 2)).runs == ()
    status = policy_status(p, created=CREATED, tables=[table()], history={}, now=at(1, 2), catalog_owner="nightly")
    assert status["compact"]["nextRun"] is None and status["expireSnapshots"]["nextRun"] is None


def test_partition_rewrite_runs_repartition_per_table_on_its_schedule() -> None:
    p = policy(partitionRewrite={"schedule": "0 4 * * *"})
    tables = [table("sales.orders"), table("sales.items")]
    result = plan(p, tables, at(2, 4, 5))
    assert result.not_available == ()
    assert [(r.table, r.operation, r.params, r.schedule_time) for r in result.runs] == [
        ("sales.items", "repartition", {}, at(2, 4)),
        ("sales.orders", "repartition", {}, at(2, 4)),
    ]
    for run in result.runs:
        job_keywords(run.operation, run.params)  # what the run gets is valid for the job
    status = policy_status(p, created=CREATED, tables=tables, history={}, now=at(2, 4, 5), catalog_owner=None)
    assert status["repartition"]["schedule"] == "0 4 * * *" and "available" not in status["repartition"]
    assert status["repartition"]["tables"]["sales.orders"]["params"] == {}
    batched = policy(partitionRewrite={"schedule": "0 4 * * *", "maxBytesPerCommit": "1GB"})
    (run, _) = plan(batched, tables, at(2, 4, 5)).runs
    assert run.params == {"maxBytesPerCommit": 1_000_000_000}
    assert job_keywords(run.operation, run.params)["max_bytes_per_commit"] == 1_000_000_000


# ------------------------------------------------------------------ triggers


def test_small_file_trigger_counts_what_the_compaction_would_merge() -> None:
    p = policy(compaction={"schedule": "0 2 * * *", "targetFileSize": "10MB", "whenSmallFilesAbove": 3})
    (run,) = trigger_plan(p, [table(files=small(5))], at(1, 12)).runs
    assert (run.reason, run.schedule_time, run.operation) == ("5 small files > 3", None, "compact")
    assert run.params["targetFileSize"] == 10 * MB
    assert trigger_plan(p, [table(files=small(3))], at(1, 12)).runs == ()  # 3 is not above 3
    # large files and files alone in their partition are not merged, so they do not count
    big = [df(10 + i, 20 * MB) for i in range(5)]
    assert trigger_plan(p, [table(files=small(3) + big)], at(1, 12)).runs == ()
    alone = [df(i, MB, partition=1, values=((0, str(i)),)) for i in range(6)]
    assert trigger_plan(p, [table(files=alone)], at(1, 12)).runs == ()


def test_delete_ratio_trigger_uses_the_rewrite_planners_ratio() -> None:
    p = policy(deleteRewrite={"schedule": "0 3 * * *", "deleteRatioThreshold": 0.3})
    files = small(3)  # 100 rows each
    (run,) = trigger_plan(p, [table(files=files, deletes={0: 30, 1: 29})], at(1, 12)).runs
    assert run.reason == "1 file with a delete ratio >= 0.3" and run.params == {"deleteThreshold": 0.3}
    assert trigger_plan(p, [table(files=files, deletes={1: 29})], at(1, 12)).runs == ()
    (inlined,) = trigger_plan(p, [table(files=files, deletes={1: 29}, inlined={1: 1, 2: 40})], at(1, 12)).runs
    assert inlined.reason == "2 files with a delete ratio >= 0.3"


def test_a_trigger_waits_for_the_window_a_running_run_and_the_minimum_interval() -> None:
    p = policy(
        compaction={"schedule": "0 2 * * 0", "targetFileSize": "10MB", "whenSmallFilesAbove": 1},
        window={"start": "08:00", "end": "20:00"},
    )
    t = [table(files=small(4))]
    key: HistoryKey = ("sales.orders", "compact")
    assert trigger_plan(p, t, at(1, 7)).runs == ()  # outside the window
    assert len(plan(p, t, at(1, 8)).runs) == 1
    running = {key: OperationHistory(None, LastRun("c-1", "Running", at(1, 7)), True)}
    assert trigger_plan(p, t, at(1, 12), running).runs == ()
    recent = {key: OperationHistory(None, LastRun("c-1", "Succeeded", at(1, 11, 55)), False)}
    assert trigger_plan(p, t, at(1, 12), recent).runs == ()  # 5 minutes ago: under the default 10
    assert len(plan(p, t, at(1, 12, 5), recent).runs) == 1
    assert trigger_plan(p, t, at(1, 12, 5), recent, min_trigger_interval=timedelta(hours=1)).runs == ()


def test_schedule_and_trigger_due_together_make_one_run_that_pays_the_cron_time() -> None:
    p = policy(compaction={"schedule": "0 2 * * *", "targetFileSize": "10MB", "whenSmallFilesAbove": 1})
    (run,) = plan(p, [table(files=small(4))], at(1, 2)).runs
    assert run.reason == "schedule 0 2 * * *" and run.schedule_time == at(1, 2)


# ------------------------------------------------------------------ selectors


def test_selection_by_name_and_by_label_selector() -> None:
    named = policy(tables=["sales.orders"])
    assert selects(named, "Sales.Orders", {}) and not selects(named, "sales.items", {"tier": "gold"})
    labelled = policy(
        tableSelector={
            "matchLabels": {"tier": "gold"},
            "matchExpressions": [
                {"key": "region", "operator": "In", "values": ["eu", "us"]},
                {"key": "stage", "operator": "NotIn", "values": ["dev"]},
                {"key": "owner", "operator": "Exists"},
                {"key": "frozen", "operator": "DoesNotExist"},
            ],
        }
    )
    gold = {"tier": "gold", "region": "eu", "owner": "ana"}
    assert selects(labelled, "sales.orders", gold)
    assert selects(labelled, "sales.orders", {**gold, "stage": "prod"})
    for change in ({"tier": "silver"}, {"region": "apac"}, {"stage": "dev"}, {"frozen": "yes"}):
        assert not selects(labelled, "sales.orders", {**gold, **change}), change
    assert not selects(labelled, "sales.orders", {k: v for k, v in gold.items() if k != "owner"})
    assert not selects(labelled, "sales.orders", {k: v for k, v in gold.items() if k != "region"})
    assert selects(policy(), "any.table", {})  # no tables and no selector: every table, as an empty selector


def test_loader_checks_the_selector_history_limit_and_window() -> None:
    assert policy().history_limit == 3 and policy(historyLimit=10).history_limit == 10
    rewrite = policy(deleteRewrite={"schedule": "0 3 * * *"}).delete_rewrite
    assert rewrite is not None and rewrite.delete_ratio_threshold is None  # the table's option decides
    cases: list[tuple[dict[str, Any], str]] = [
        ({"window": {"start": "02:00", "end": "02:00"}}, "spec.window: start and end are both 02:00"),
        ({"historyLimit": -1}, "spec.historyLimit: must be at least 0, got -1"),
        (
            {"tableSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
            "matchExpressions[0].values: must not be empty for In",
        ),
        (
            {"tableSelector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}},
            "matchExpressions[0].values: must be empty for Exists",
        ),
        (
            {"tableSelector": {"matchExpressions": [{"key": "a", "operator": "Has"}]}},
            "matchExpressions[0].operator: 'Has' is not one of In, NotIn, Exists, DoesNotExist",
        ),
    ]
    for spec, message in cases:
        with pytest.raises(SpecError) as err:
            policy(**spec)
        assert message in str(err.value)


# ------------------------------------------------------------------ catalog-wide owner


def test_the_oldest_policy_owns_catalog_wide_operations_and_the_others_conflict() -> None:
    expiry = {"schedule": "0 4 * * *", "retainLast": 5}
    old, young, tie = (
        policy("zeta", snapshotExpiry=expiry),
        policy("alpha", snapshotExpiry=expiry),
        policy("beta", fileCleanup={"schedule": "0 5 * * *"}),
    )
    tables_only = policy("compaction-only", compaction={"schedule": "0 2 * * *"})
    policies = [(young, at(2, 0)), (old, at(1, 0)), (tie, at(1, 0)), (tables_only, CREATED - timedelta(days=9))]
    assert catalog_wide_owner(policies) == "beta"  # created at the same time as zeta: by name
    assert catalog_wide_owner([(young, at(2, 0)), (old, at(1, 0))]) == "zeta"
    assert catalog_wide_owner([(tables_only, CREATED)]) is None
    assert conflict_message(tables_only, "beta") is None and conflict_message(tie, "beta") is None
    message = conflict_message(young, "beta")
    assert message == (
        "snapshotExpiry of catalog lake are run by DuckLakeMaintenancePolicy beta (the oldest policy of the "
        "catalog that sets catalog-wide operations); this policy runs none of them (expireSnapshots): remove them "
        "from one of the two"
    )
    with pytest.raises(ValueError, match="more than one catalog"):
        catalog_wide_owner([(old, CREATED), (policy("other", catalogRef={"name": "lake2"}), CREATED)])


def test_a_conflicting_policy_runs_no_catalog_wide_operation_but_its_tables() -> None:
    p = policy(
        "young",
        compaction={"schedule": "0 2 * * *"},
        snapshotExpiry={"schedule": "0 2 * * *", "retainLast": 5},
        fileCleanup={"schedule": "0 2 * * *", "orphanFiles": True},
    )
    owner_runs = plan(p, [table()], at(1, 2), owner="young")
    assert owner_runs.conflict is None
    assert [(r.table, r.operation) for r in owner_runs.runs] == [
        ("sales.orders", "compact"),
        (None, "expireSnapshots"),
        (None, "cleanupFiles"),
        (None, "deleteOrphanFiles"),
    ]
    conflicted = plan(p, [table()], at(1, 2), owner="old")
    assert [(r.table, r.operation) for r in conflicted.runs] == [("sales.orders", "compact")]
    assert conflicted.conflict is not None and "DuckLakeMaintenancePolicy old" in conflicted.conflict
    status = policy_status(p, created=CREATED, tables=[table()], history={}, now=at(1, 2), catalog_owner="old")
    assert status["expireSnapshots"] == {"schedule": "0 2 * * *", "runBy": "old", "nextRun": None}


# ------------------------------------------------------------------ status


def test_status_per_operation_and_table_and_its_schedule_times_read_back() -> None:
    p = policy(
        compaction={"schedule": "0 2 * * *", "targetFileSize": "128MB", "whenSmallFilesAbove": 50},
        snapshotExpiry={"schedule": "0 3 * * *", "olderThan": "7d"},
        window={"start": "01:00", "end": "05:00", "timezone": "Europe/Amsterdam"},
    )
    tables = [table("sales.orders"), table("sales.items")]
    now = at(1, 0, 30)  # 02:30 CEST: compaction (02:00 CEST = 00:00 UTC) is due
    runs = plan(p, tables, now, created=CREATED - timedelta(hours=12)).runs
    assert [(r.table, r.operation, r.schedule_time) for r in runs] == [
        ("sales.items", "compact", at(1, 0)),
        ("sales.orders", "compact", at(1, 0)),
    ]
    history: History = {}
    for run in runs:
        history = with_created_run(history, run, f"compact-{run.table}", now)
    status = policy_status(
        p, created=CREATED - timedelta(hours=12), tables=tables, history=history, now=now, catalog_owner="nightly"
    )
    compact_params = {
        "targetFileSize": 128_000_000,
        "smallFileThreshold": 128_000_000,
        "minInputFiles": 2,
        "sort": True,
        "applyDeletes": True,
    }
    assert status == {
        "compact": {
            "schedule": "0 2 * * *",
            "trigger": "more than 50 small files",
            "lastRun": {
                "name": "compact-sales.items",
                "state": "Pending",
                "time": "2025-06-01T00:30:00Z",
                "table": "sales.items",
            },
            "nextRun": "2025-06-02T00:00:00Z",
            "tables": {
                name: {
                    "params": compact_params,
                    "lastScheduleTime": "2025-06-01T00:00:00Z",
                    "lastRun": {"name": f"compact-{name}", "state": "Pending", "time": "2025-06-01T00:30:00Z"},
                }
                for name in ("sales.items", "sales.orders")
            },
        },
        "expireSnapshots": {
            "schedule": "0 3 * * *",
            "params": {"olderThan": "7d"},
            "lastScheduleTime": None,
            "lastRun": None,
            "nextRun": "2025-06-01T01:00:00Z",
        },
    }
    assert schedule_times(status) == {("sales.items", "compact"): at(1, 0), ("sales.orders", "compact"): at(1, 0)}


def test_planned_runs_are_values() -> None:
    run = PlannedRun("sales.orders", "compact", {"targetFileSize": 1}, "schedule 0 2 * * *", at(1, 2))
    assert with_created_run({}, run, "c-1", at(1, 2))[("sales.orders", "compact")] == OperationHistory(
        at(1, 2), LastRun("c-1", "Pending", at(1, 2)), True
    )
