"""Sizing a task's DuckDB (pure)."""

from __future__ import annotations

import pytest

from ducklake_jobs.task_resources import (
    TaskResources,
    in_process,
    local_cores,
    memory_limit_mb,
    threads_per_task,
)
from ducklake_operator.cli import main


@pytest.mark.parametrize(
    "master, cores",
    [
        ("local", 1),
        ("local[3]", 3),
        ("local[*]", 8),
        ("local[4, 2]", 4),
        ("k8s://https://kubernetes.default:443", None),
        ("spark://m:7077", None),
    ],
)
def test_local_cores(master: str, cores: int | None) -> None:
    assert local_cores(master, machine_cores=8) == cores


@pytest.mark.parametrize(
    "master, task_cpus, tasks, threads",
    [
        ("local[4]", 1, 1, 4),  # one task has the machine
        ("local[4]", 1, 2, 2),  # two share it
        ("local[4]", 1, 9, 1),  # four at once, one core each
        ("local[4]", 2, 9, 2),  # two at once, as reserved
        ("local[2]", 1, 3, 1),
        ("k8s://https://api:443", 1, 1, 1),  # a cluster: what the scheduler reserved, never more
        ("k8s://https://api:443", 4, 50, 4),
    ],
)
def test_threads_per_task(master: str, task_cpus: int, tasks: int, threads: int) -> None:
    assert threads_per_task(master, task_cpus, tasks, machine_cores=16 if master.startswith("k8s") else 4) == threads


def test_memory_limit_is_a_share_of_the_python_workers_memory() -> None:
    assert memory_limit_mb({"PYSPARK_EXECUTOR_MEMORY_MB": "1000"}) == 800
    assert memory_limit_mb({"PYSPARK_EXECUTOR_MEMORY_MB": "10"}) == 64  # never absurdly small
    assert memory_limit_mb({}) is None


def test_duckdb_config() -> None:
    assert TaskResources().duckdb_config() == {}
    assert TaskResources(threads=2, memory_limit_mb=512).duckdb_config() == {"threads": 2, "memory_limit": "512MB"}


def test_an_in_process_run_gives_duckdb_the_same_share_of_its_memory() -> None:
    assert in_process(2000) == TaskResources(memory_limit_mb=1600)
    assert in_process(50) == TaskResources(memory_limit_mb=64)
    assert in_process(None) == TaskResources()


@pytest.mark.parametrize(
    "resources, tasks, at_once, share",
    [
        (TaskResources(), 5, 4, TaskResources(threads=1)),  # one per core, DuckDB's default memory
        (TaskResources(), 1, 1, TaskResources(threads=4)),
        (TaskResources(memory_limit_mb=1000), 5, 4, TaskResources(threads=1, memory_limit_mb=250)),
        (TaskResources(memory_limit_mb=150), 5, 2, TaskResources(threads=2, memory_limit_mb=75)),  # >= 64 MB each
        (TaskResources(memory_limit_mb=80), 5, 1, TaskResources(threads=4, memory_limit_mb=80)),
    ],
)
def test_concurrent_tasks_share_the_cores_and_the_memory(
    resources: TaskResources, tasks: int, at_once: int, share: TaskResources
) -> None:
    assert resources.shared(tasks, cores=4) == (at_once, share)


def test_run_job_refuses_a_memory_limit_that_is_not_a_size(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("lots", "512KB"):
        with pytest.raises(SystemExit):
            main(["run-job", "compact", "main.t", "-f", "x.yaml", "--no-spark", "--memory-limit", bad])
        assert "--memory-limit" in capsys.readouterr().err
