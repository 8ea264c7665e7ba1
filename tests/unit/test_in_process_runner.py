"""The in-process runner: a job's tasks in threads, as many at once as the cores allow, each
with its share of the cores and memory; results in the items' order; a failure raised as one
after another would raise it, once every task that had started has ended."""

from __future__ import annotations

import threading
import time

import pytest

from ducklake_jobs import task_resources
from ducklake_jobs.task_runners import run_in_process


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ducklake_jobs.task_runners.os.cpu_count", lambda: 2)


def test_tasks_run_two_at_once_on_two_cores_each_with_its_share(two_cores: None) -> None:
    running, most, seen = 0, 0, []
    lock = threading.Lock()

    def task(item: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
            seen.append(task_resources.current())
        time.sleep(0.05)
        with lock:
            running -= 1
        return item * 10

    done: list[int] = []
    with task_resources.using(task_resources.TaskResources(memory_limit_mb=400)):
        assert run_in_process(task, [1, 2, 3, 4, 5], done.append) == [10, 20, 30, 40, 50]
    assert most == 2 and done == [1, 2, 3, 4, 5]
    assert set(seen) == {task_resources.TaskResources(threads=1, memory_limit_mb=200)}


def test_one_task_keeps_every_core_and_a_small_limit_runs_one_at_a_time(two_cores: None) -> None:
    assert run_in_process(lambda _: task_resources.current(), [0]) == [task_resources.TaskResources()]
    with task_resources.using(task_resources.TaskResources(memory_limit_mb=100)):  # 2 x 50 MB: too little
        got = run_in_process(lambda _: (threading.current_thread().name, task_resources.current()), [0, 1])
    assert got == [(threading.main_thread().name, task_resources.TaskResources(memory_limit_mb=100))] * 2


def test_the_first_items_failure_is_raised_once_the_running_tasks_ended(two_cores: None) -> None:
    ended: list[int] = []

    def task(item: int) -> int:
        if item == 1:
            time.sleep(0.1)
            raise ValueError("item 1")
        if item == 2:
            raise KeyError("item 2")  # fails first, but a later item
        time.sleep(0.2)
        ended.append(item)
        return item

    with pytest.raises(ValueError, match="item 1"):
        run_in_process(task, [0, 1, 2, 3, 4, 5, 6, 7])
    assert 0 in ended and len(ended) < 6  # the running one finished; most were never started
