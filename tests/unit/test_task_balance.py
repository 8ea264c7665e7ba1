"""Task balance: file groups of about equal size in whole waves, the largest started first."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from hypothesis import given
from hypothesis import strategies as st

from ducklake_jobs.task_runners import OnDone, run_in_process, run_largest_first
from ducklake_operator.maintenance.task_balance import balanced_runs, largest_first

MB = 1_000_000
W = TypeVar("W")
R = TypeVar("R")


def sizes_of(sizes: list[int], runs: list[range]) -> list[int]:
    return [sum(sizes[i] for i in run) for run in runs]


def test_ten_equal_files_make_two_waves_of_equal_work_on_two_cores() -> None:
    # the case that ran 3+3+3+1 files: its last 3-file group alone on one core
    sizes = [21 * MB] * 10
    runs = balanced_runs(sizes, 64 * MB, parallelism=2)
    assert [len(r) for r in runs] == [2, 3, 2, 3]
    order = largest_first(sizes_of(sizes, runs))
    assert order == [1, 3, 0, 2]  # the two 3-file groups first, then the 2-file ones


def test_groups_stay_near_the_cap_and_one_machine_core_leaves_the_count_alone() -> None:
    sizes = [10 * MB] * 100  # 1,000 MB
    runs = balanced_runs(sizes, 64 * MB, parallelism=1)
    assert len(runs) == 16  # ceil(1000 / 64)
    assert max(sizes_of(sizes, runs)) <= 70 * MB
    assert len(balanced_runs(sizes, 64 * MB, parallelism=3)) == 18  # whole waves of 3


def test_one_group_stays_one_and_a_large_file_is_a_group_of_its_own() -> None:
    assert balanced_runs([MB, 2 * MB], 64 * MB, parallelism=2) == [range(0, 2)]
    runs = balanced_runs([MB, 500 * MB, MB, MB], 64 * MB, parallelism=2)
    assert range(1, 2) in runs
    assert balanced_runs([], 64 * MB) == []
    assert balanced_runs([0, 0, 0], 64 * MB, parallelism=2) == [range(0, 3)]


@given(st.lists(st.integers(min_value=0, max_value=300 * MB), min_size=1, max_size=60), st.integers(1, 8))
def test_runs_cover_every_file_once_in_order(sizes: list[int], parallelism: int) -> None:
    runs = balanced_runs(sizes, 64 * MB, parallelism)
    assert [i for r in runs for i in r] == list(range(len(sizes)))
    assert all(len(r) > 0 for r in runs)
    # a run holds its share of the whole and at most halves of the files at its two ends
    for r in runs:
        assert sum(sizes[i] for i in r) <= sum(sizes) / len(runs) + max(sizes)


def test_the_largest_items_start_first_and_results_keep_the_items_order() -> None:
    handed: list[object] = []

    def in_order(fn: Callable[[W], R], items: list[W], on_done: OnDone | None = None) -> list[R]:
        handed.extend(items)
        return [fn(i) for i in items]

    items = [5, 50, 10, 40, 10]
    assert run_largest_first(in_order, lambda i: i * 10, items, items) == [50, 500, 100, 400, 100]
    assert handed == [50, 40, 10, 10, 5]
    # threads too: results by item, whichever ended first
    assert run_largest_first(run_in_process, lambda i: i + 1, items, items) == [6, 51, 11, 41, 11]
