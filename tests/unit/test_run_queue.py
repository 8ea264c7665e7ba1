"""Which run waits for what, as the controller's index of a catalog's runs says (pure): one
run per table whatever its operation, catalog-wide runs one at a time, maxJobsPerCatalog
filled in creation order, runs waiting for a table or a retry not counted ahead."""

from __future__ import annotations

from typing import Any

from ducklake_operator.api.load import parse_manifest
from ducklake_operator.controller.runs import OtherRun, RunContext, parse_stamp, waits_for
from ducklake_operator.model.spec import JobSpec

NOW = parse_stamp("2026-01-01T12:00:00Z") or 0.0


def spec(name: str, table: str | None = "main.a", operation: str = "compact") -> JobSpec:
    body: dict[str, Any] = {"catalogRef": {"name": "lake"}, "operation": operation}
    if table:
        body["table"] = table
    parsed = parse_manifest({"kind": "DuckLakeJob", "metadata": {"name": name, "namespace": "data"}, "spec": body})
    assert isinstance(parsed, JobSpec)
    return parsed


def other(name: str, table: str | None, created: str, holds: bool = False, retry_at: str | None = None) -> OtherRun:
    return OtherRun(name, f"uid-{name}", table, "Running" if holds else "Pending", created, holds, retry_at)


def ctx(created: str, others: list[OtherRun], max_jobs: int | None = None) -> RunContext:
    return RunContext(None, None, True, max_jobs, {}, tuple(others), created)


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


def test_no_limit_no_wait_but_for_the_table() -> None:
    others = [other(f"r{i}", f"main.t{i}", "2026-01-01T11:00:00Z", holds=True) for i in range(50)]
    assert waits_for(spec("me", "main.w"), "me", ctx("2026-01-01T11:30:00Z", others), NOW) is None
