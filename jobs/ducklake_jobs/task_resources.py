"""How much of its machine the DuckDB inside one task may use.

DuckDB takes every core and 80% of the memory it sees by default. That is right for a job
running its tasks one after the other in one process, and wrong for Spark tasks sharing an
executor: four concurrent tasks would each take every core and 80% of the pod's memory,
and the pod gets OOM-killed. So a Spark task's DuckDB gets the cores the scheduler
reserved for the task (``spark.task.cpus``; under ``local[N]``, the N cores divided among
the tasks that run at once) and a memory limit under the Python worker's share of
``spark.executor.pyspark.memory`` when that is set; it spills to the task's scratch
directory beyond it. An in-process run is given its memory the same way (``in_process``:
``ducklake run-job --memory-limit``), its DuckDB the same share of it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from ducklake_operator.duckdb_session import resource_config

DUCKDB_MEMORY_SHARE = 0.8  # of the worker's memory; the rest is pyarrow buffers and Python
MIN_DUCKDB_MB = 64  # DuckDB's memory limit below which a task's sort or join may fail rather than spill


@dataclass(frozen=True)
class TaskResources:
    threads: int | None = None  # None: DuckDB's default (every core it sees)
    memory_limit_mb: int | None = None  # None: DuckDB's default (80% of the memory it sees)

    def duckdb_config(self) -> dict[str, str | bool | int | float | list[str]]:
        return resource_config(self.threads, self.memory_limit_mb)

    def shared(self, tasks: int, cores: int) -> tuple[int, TaskResources]:
        """How many of ``tasks`` run at once within these resources on a machine of ``cores``,
        and each one's share: one per core, fewer when a memory limit would leave each DuckDB
        under ``MIN_DUCKDB_MB``."""
        memory = self.memory_limit_mb
        fit = memory // MIN_DUCKDB_MB if memory else tasks
        at_once = max(1, min(tasks, cores, fit))
        return at_once, TaskResources(max(1, (self.threads or cores) // at_once), memory // at_once if memory else None)


def local_cores(master: str, machine_cores: int) -> int | None:
    """The cores of a ``local``/``local[N]``/``local[*]``/``local[N,F]`` master; None for a cluster."""
    m = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", master.strip())
    if m is None:
        return None
    n = m.group(1)
    return 1 if n is None else machine_cores if n == "*" else int(n)


def threads_per_task(master: str, task_cpus: int, tasks: int, machine_cores: int) -> int:
    """A cluster reserves ``spark.task.cpus`` per task, and runs as many tasks per executor as
    those fit in its cores; ``local[N]`` runs min(N, tasks) at once on the same N cores."""
    cores = local_cores(master, machine_cores)
    if cores is None:
        return max(1, task_cpus)
    concurrent = max(1, min(tasks, cores // max(1, task_cpus)))
    return max(1, task_cpus, cores // concurrent)


def duckdb_share_mb(worker_mb: int) -> int:
    """DuckDB's share of the memory given to one task's process (at least DuckDB's workable 64 MB)."""
    return max(MIN_DUCKDB_MB, int(worker_mb * DUCKDB_MEMORY_SHARE))


def memory_limit_mb(env: Mapping[str, str]) -> int | None:
    """DuckDB's share of this Python worker's memory, when Spark set one: PySpark passes
    ``spark.executor.pyspark.memory`` divided by the executor's cores as PYSPARK_EXECUTOR_MEMORY_MB."""
    worker = env.get("PYSPARK_EXECUTOR_MEMORY_MB")
    return duckdb_share_mb(int(worker)) if worker and worker.isdigit() else None


# TaskResources is frozen, so one shared default is safe
_current: ContextVar[TaskResources] = ContextVar("ducklake_task_resources", default=TaskResources())  # noqa: B039


def current() -> TaskResources:
    return _current.get()


@contextmanager
def using(resources: TaskResources) -> Iterator[None]:
    token = _current.set(resources)
    try:
        yield
    finally:
        _current.reset(token)


def in_process(memory_mb: int | None) -> TaskResources:
    """The resources of tasks run in this process given ``memory_mb`` (None: DuckDB's defaults)."""
    return TaskResources(memory_limit_mb=duckdb_share_mb(memory_mb) if memory_mb else None)


def in_spark_task(threads: int) -> TaskResources:
    """The resources of the Spark task this runs in (called in the Python worker)."""
    return TaskResources(threads=threads, memory_limit_mb=memory_limit_mb(os.environ))
