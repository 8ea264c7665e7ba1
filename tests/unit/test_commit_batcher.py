"""CommitBatcher: concurrent plans share snapshots; a failure stays with its own plan."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from ducklake_operator.catalog.batch import CommitBatcher
from ducklake_operator.catalog.commit import CommitResult
from ducklake_operator.errors import CommitConflict, CommitStateUnknown


class FakeCatalog:
    """Commits take 20 ms, one at a time; a change "bad" makes any commit holding it fail."""

    def __init__(self, fail_with: type[Exception] = CommitConflict) -> None:
        self.commits: list[list[Any]] = []
        self.messages: list[str] = []
        self.fail_with = fail_with
        self._lock = threading.Lock()

    def commit(self, changes, *, author, message, extra_info=None, base_snapshot=None) -> CommitResult:
        with self._lock:
            time.sleep(0.02)
            if "bad" in changes:
                raise self.fail_with("bad change")
            self.commits.append(list(changes))
            self.messages.append(message)
            return CommitResult(snapshot_id=len(self.commits), schema_version=1, attempts=1)


def run_concurrently(batcher: CommitBatcher, changes: list[str]) -> dict[str, Any]:
    results: dict[str, Any] = {}

    def one(change: str) -> None:
        try:
            results[change] = batcher.commit([change], author="t", message=f"plan {change}")
        except Exception as exc:  # noqa: BLE001
            results[change] = exc

    threads = [threading.Thread(target=one, args=(c,)) for c in changes]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


def test_concurrent_plans_share_snapshots_and_each_lands_once() -> None:
    fake = FakeCatalog()
    results = run_concurrently(CommitBatcher(fake.commit), [f"c{i}" for i in range(40)])
    landed = [c for commit in fake.commits for c in commit]
    assert sorted(landed) == sorted(f"c{i}" for i in range(40))  # each exactly once
    assert len(fake.commits) < 40  # merged
    for change, result in results.items():
        assert fake.commits[result.snapshot_id - 1].count(change) == 1
    assert any(
        m.startswith(f"{len(c)} plans:\n") for m, c in zip(fake.messages, fake.commits, strict=True) if len(c) > 1
    )


def test_a_failing_plan_fails_alone() -> None:
    fake = FakeCatalog()
    results = run_concurrently(CommitBatcher(fake.commit), ["bad"] + [f"c{i}" for i in range(20)])
    assert isinstance(results["bad"], CommitConflict)
    assert all(isinstance(results[f"c{i}"], CommitResult) for i in range(20))
    assert sorted(c for commit in fake.commits for c in commit) == sorted(f"c{i}" for i in range(20))


def test_an_unknown_outcome_is_not_retried_plan_by_plan() -> None:
    """A merged commit whose COMMIT was lost may have landed: committing its plans again one
    by one could apply them twice, so every caller learns the outcome is unknown."""
    fake = FakeCatalog(fail_with=CommitStateUnknown)
    gate = threading.Lock()
    gate.acquire()
    original = fake.commit

    def slow_first(changes, **kw):
        if changes == ["first"]:
            gate.acquire(timeout=5)  # hold the lead while the others queue up
        return original(changes, **kw)

    batcher = CommitBatcher(slow_first)
    first = threading.Thread(target=lambda: batcher.commit(["first"], author="t", message="m"))
    first.start()
    time.sleep(0.1)
    pending: dict[str, Any] = {}
    others = threading.Thread(target=lambda: pending.update(run_concurrently(batcher, ["bad", "c1", "c2"])))
    others.start()
    time.sleep(0.2)
    gate.release()
    first.join(10)
    others.join(10)
    assert pending and all(isinstance(v, CommitStateUnknown) for v in pending.values())
    assert ["c1"] not in fake.commits and ["c2"] not in fake.commits


@pytest.mark.parametrize("n", [1, 5])
def test_sequential_callers_get_their_own_snapshot(n: int) -> None:
    fake = FakeCatalog()
    batcher = CommitBatcher(fake.commit)
    for i in range(n):
        assert batcher.commit([f"c{i}"], author="t", message="m").snapshot_id == i + 1
    assert fake.messages == ["m"] * n
