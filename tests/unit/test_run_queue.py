"""Which run waits for what, as the controller's index of a catalog's runs says (pure): one
run per table whatever its operation, catalog-wide runs one at a time, maxJobsPerCatalog
filled in creation order, runs waiting for a table or a retry not counted ahead, and a
policy's run held while its policy's window is closed. Fixed clocks."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ducklake_operator.api.load import parse_manifest
from ducklake_operator.api.v1alpha1.job import JobSpec
from ducklake_operator.api.v1alpha1.policy import Window
from ducklake_operator.controller.runs.run_context import OtherRun, PolicyWindow, RunContext
from ducklake_operator.controller.runs.tick import parse_stamp
from ducklake_operator.controller.runs.waiting import waits_for
from ducklake_operator.maintenance.windows import closed_until

NOW = parse_stamp("2026-01-01T12:00:00Z") or 0.0
NIGHT = PolicyWindow("nightly", Window("22:00", "04:00", "UTC"))  # crosses midnight


def spec(name: str, table: str | None = "main.a", operation: str = "compact") -> JobSpec:
    body: dict[str, Any] = {"catalogRef": {"name": "lake"}, "operation": operation}
    if table:
        body["table"] = table
    parsed = parse_manifest({"kind": "DuckLakeJob", "metadata": {"name": name, "namespace": "data"}, "spec": body})
    assert isinstance(parsed, JobSpec)
    return parsed


def other(name: str, table: str | None, created: str, holds: bool = False, retry_at: str | None = None) -> OtherRun:
    return OtherRun(name, f"uid-{name}", table, "Running" if holds else "Pending", created, holds, retry_at)


def ctx(
    created: str, others: list[OtherRun], max_jobs: int | None = None, policy: str | None = None,
    windows: dict[str, PolicyWindow] | None = None,
) -> RunContext:  # fmt: skip
    return RunContext(None, None, True, max_jobs, {}, tuple(others), created, policy, windows or {})


def test_a_held_table_is_waited_for_whatever_the_operation_and_names_fold() -> None:
    holder = other("compact-a", "MAIN.A", "2026-01-01T11:00:00Z", holds=True)
    blocked = waits_for(spec("rewrite-a", operation="rewriteDeletes"), "me", ctx("2026-01-01T11:59:00Z", [holder]), NOW)
    assert blocked == "DuckLakeJob compact-a, which holds table main.a"
    assert waits_for(spec("b", "main.b"), "me", ctx("2026-01-01T11:59:00Z", [holder]), NOW) is None
    # a run does not wait for itself (its own index entry says it holds)
    mine = OtherRun("rewrite-a", "me", "main.a", "Running", "2026-01-01T11:59:00Z", True)
    assert waits_for(spec("rewrite-a"), "me", ctx("2026-01-01T11:59:00Z", [mine]), NOW) is None


def test_catalog_wide_runs_one_at_a_time() -> None:
    expiring = other("expire-1", None, "2026-01-01T11:00:00Z", holds=True)
    second = spec("cleanup-1", None, "cleanupFiles")
    assert waits_for(second, "me", ctx("2026-01-01T11:30:00Z", [expiring]), NOW) == (
        "DuckLakeJob expire-1, which holds catalog-wide maintenance of lake"
    )
    assert waits_for(spec("compact-a"), "me", ctx("2026-01-01T11:30:00Z", [expiring]), NOW) is None


def test_slots_fill_in_creation_order() -> None:
    others = [other("r1", "main.x", "2026-01-01T11:00:00Z", holds=True),
              other("w1", "main.y", "2026-01-01T11:10:00Z"),
              other("w3", "main.z", "2026-01-01T11:30:00Z")]  # fmt: skip
    at = ctx("2026-01-01T11:20:00Z", others, max_jobs=3)  # one running, one waiting before me: my turn
    assert waits_for(spec("w2", "main.w"), "me", at, NOW) is None
    full = ctx("2026-01-01T11:20:00Z", others, max_jobs=2)
    assert waits_for(spec("w2", "main.w"), "me", full, NOW) == (
        "a slot in catalog lake: 1 of 2 runs (maxJobsPerCatalog) running, 1 waiting before this one"
    )
    # same second: the name breaks the tie
    tie = [other("w1", "main.y", "2026-01-01T11:20:00Z")]
    assert waits_for(spec("w2", "main.w"), "me", ctx("2026-01-01T11:20:00Z", tie, max_jobs=1), NOW) is not None
    assert waits_for(spec("w0", "main.w"), "me", ctx("2026-01-01T11:20:00Z", tie, max_jobs=1), NOW) is None


def test_runs_waiting_for_a_table_or_a_retry_are_not_ahead() -> None:
    others = [other("r1", "main.x", "2026-01-01T11:00:00Z", holds=True),
              other("behind-r1", "main.x", "2026-01-01T11:05:00Z"),  # waits for its table, not a slot
              other("backing-off", "main.y", "2026-01-01T11:06:00Z", retry_at="2026-01-01T12:05:00Z"),
              other("retry-due", "main.z", "2026-01-01T11:07:00Z", retry_at="2026-01-01T11:59:00Z")]  # fmt: skip
    at = ctx("2026-01-01T11:30:00Z", others, max_jobs=3)
    assert waits_for(spec("me", "main.w"), "me", at, NOW) is None  # 1 running + 1 due ahead < 3
    assert waits_for(spec("me", "main.w"), "me", ctx("2026-01-01T11:30:00Z", others, max_jobs=2), NOW) is not None


def test_a_run_holding_its_leases_waits_only_for_its_window() -> None:
    """Its Leases taken and written, it launches next: a run created before it and due since
    (its retry) is ahead for a slot by creation order, but the slot is this run's already.
    Counted, each would wait for the other for good. Its window closed, it waits (and gives
    its Leases back)."""
    mine = OtherRun("w2", "me", "main.w", "Pending", "2026-01-01T11:20:00Z", True)
    due = other("w1", "main.y", "2026-01-01T11:10:00Z", retry_at="2026-01-01T11:59:00Z")
    at = ctx("2026-01-01T11:20:00Z", [mine, due], max_jobs=1)
    assert waits_for(spec("w2", "main.w"), "me", at, NOW) is not None  # as one that holds nothing
    assert waits_for(spec("w2", "main.w"), "me", at, NOW, holding=True) is None
    # w1 waits for the slot this run holds
    assert waits_for(spec("w1", "main.y"), "uid-w1", at, NOW) == (
        "a slot in catalog lake: 1 of 1 runs (maxJobsPerCatalog) running, 0 waiting before this one"
    )
    closed = ctx("2026-01-01T11:20:00Z", [mine, due], max_jobs=1, policy="uid-nightly", windows={"uid-nightly": NIGHT})
    assert waits_for(spec("w2", "main.w"), "me", closed, NOW, holding=True) == (
        "the maintenance window 22:00-04:00 UTC of DuckLakeMaintenancePolicy nightly, closed until 2026-01-01 22:00 UTC"
    )


def test_no_limit_no_wait_but_for_the_table() -> None:
    others = [other(f"r{i}", f"main.t{i}", "2026-01-01T11:00:00Z", holds=True) for i in range(50)]
    assert waits_for(spec("me", "main.w"), "me", ctx("2026-01-01T11:30:00Z", others), NOW) is None


def test_a_policys_run_waits_while_its_window_is_closed_and_says_when_it_opens() -> None:
    """Created inside the window, it waited for its table or a retry until the window
    closed: it takes nothing and waits, whatever else it waits for, until the window opens."""
    holder = other("compact-a", "main.a", "2026-01-01T11:00:00Z", holds=True)
    mine = ctx("2026-01-01T03:59:00Z", [holder], policy="uid-nightly", windows={"uid-nightly": NIGHT})
    assert waits_for(spec("nightly-compact-x"), "me", mine, NOW) == (
        "the maintenance window 22:00-04:00 UTC of DuckLakeMaintenancePolicy nightly, closed until 2026-01-01 22:00 UTC"
    )
    for opened in ("2026-01-01T22:00:00Z", "2026-01-02T03:59:59Z"):  # the window crosses midnight
        assert waits_for(spec("nightly-compact-x", "main.b"), "me", mine, parse_stamp(opened) or 0.0) is None
    # open, it waits for its table like any run
    late = parse_stamp("2026-01-01T23:00:00Z") or 0.0
    assert waits_for(spec("nightly-compact-x"), "me", mine, late) == "DuckLakeJob compact-a, which holds table main.a"
    # another policy's window, or none, does not hold a run
    others = {"uid-nightly": NIGHT}
    assert waits_for(spec("b", "main.b"), "me", ctx("2026-01-01T11:00:00Z", [], policy="uid-other", windows=others),
                     NOW) is None  # fmt: skip
    assert waits_for(spec("b", "main.b"), "me", ctx("2026-01-01T11:00:00Z", [], windows=others), NOW) is None


def test_the_window_is_read_in_its_time_zone() -> None:
    amsterdam = {"uid-p": PolicyWindow("p", Window("13:30", "14:00", "Europe/Amsterdam"))}  # 12:00Z is 13:00 CET
    blocked = waits_for(spec("r"), "me", ctx("2026-01-01T11:00:00Z", [], policy="uid-p", windows=amsterdam), NOW)
    assert blocked is not None and blocked.endswith("closed until 2026-01-01 13:30 CET")
    half_past = parse_stamp("2026-01-01T12:30:00Z") or 0.0
    assert waits_for(spec("r"), "me", ctx("2026-01-01T11:00:00Z", [], policy="uid-p", windows=amsterdam),
                     half_past) is None  # fmt: skip


def test_a_run_waiting_for_its_window_is_not_ahead_for_a_slot() -> None:
    outside = OtherRun("nightly-1", "uid-n1", "main.x", "Pending", "2026-01-01T11:00:00Z", False, policy="uid-nightly")
    at = ctx("2026-01-01T11:30:00Z", [outside], max_jobs=1, windows={"uid-nightly": NIGHT})
    assert waits_for(spec("me", "main.w"), "me", at, NOW) is None
    night = parse_stamp("2026-01-01T23:00:00Z") or 0.0  # open: it is ahead again
    assert waits_for(spec("me", "main.w"), "me", at, night) is not None


@pytest.mark.parametrize(
    "instant, opens",
    [
        (datetime(2026, 1, 1, 12, 0, tzinfo=UTC), datetime(2026, 1, 1, 22, 0, tzinfo=UTC)),
        (datetime(2026, 1, 2, 4, 0, tzinfo=UTC), datetime(2026, 1, 2, 22, 0, tzinfo=UTC)),  # its end is outside
        (datetime(2026, 1, 1, 22, 0, tzinfo=UTC), None),
        (datetime(2026, 1, 2, 1, 0, tzinfo=UTC), None),
    ],
)
def test_closed_until_is_the_next_opening_or_none_when_open(instant: datetime, opens: datetime | None) -> None:
    assert closed_until(NIGHT.window, instant) == opens
    assert closed_until(None, instant) is None
