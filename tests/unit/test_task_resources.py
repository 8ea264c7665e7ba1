"""Sizing a task's DuckDB (pure)."""

from __future__ import annotations

import pytest

from ducklake_jobs.task_resources import TaskResources, local_cores, memory_limit_mb, threads_per_task


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
