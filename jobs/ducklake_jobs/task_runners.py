"""Where a job's tasks (its file groups) run: in this process, or as Spark tasks whose
exceptions are carried back to the driver; ``ran_on`` names which for the report."""

from __future__ import annotations

import base64
import gc
import os
import pickle
import re
import threading
import types
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed, wait
from typing import Any, Protocol, TypeVar

from ducklake_operator.maintenance.task_balance import largest_first

from . import task_resources
from .fault_points import fault_point

W = TypeVar("W")
R = TypeVar("R")
OnDone = Callable[[int], None]  # told how many items have finished so far
PROGRESS_POLL_SECONDS = 0.25  # how often the driver asks Spark how many tasks finished


class Runner(Protocol):
    """Runs ``fn`` on every item (a job's file groups), results in the items' order."""

    def __call__(self, fn: Callable[[W], R], items: list[W], on_done: OnDone | None = None) -> list[R]: ...


def run_in_process(fn: Callable[[W], R], items: list[W], on_done: OnDone | None = None) -> list[R]:
    """The items' tasks in threads of this process, as many at once as there are cores (fewer
    when a memory limit would leave each DuckDB too little: ``TaskResources.shared``), each
    DuckDB given its share of the cores and memory, as Spark's local[N] would run them. One
    DuckDB with every core left cores idle in each task's serial parts (fetching, planning
    its scan, statistics): the type rewrite took 7.8 s where local[2] took 6.7. A failed task
    stops the ones not started, waits for those running (their files are then all
    written, for the job to delete), then the failure of the first item that failed is
    raised."""
    at_once, each = task_resources.current().shared(len(items), os.cpu_count() or 1)
    if at_once <= 1:
        results = []
        for item in items:
            results.append(fn(item))
            if on_done is not None:
                on_done(len(results))
        return results

    def run(item: W) -> R:
        with task_resources.using(each):
            return fn(item)

    done = 0
    with ThreadPoolExecutor(at_once, thread_name_prefix="ducklake-task") as pool:
        futures = [pool.submit(run, item) for item in items]
        try:
            for future in as_completed(futures):
                future.result()
                done += 1
                if on_done is not None:
                    on_done(done)
        except BaseException:
            for f in futures:
                f.cancel()
            wait(futures)
            first = next((f.exception() for f in futures if not f.cancelled() and f.exception() is not None), None)
            if first is None:
                raise
            raise first from None
    return [f.result() for f in futures]


def run_largest_first(
    runner: Runner, fn: Callable[[W], R], items: list[W], sizes: Sequence[int], on_done: OnDone | None = None
) -> list[R]:
    """``runner(fn, items)`` with the largest items (by ``sizes``) started first, so the last
    wave holds the small ones (``maintenance.task_balance``); results in the items' order."""
    order = largest_first(sizes)
    ran = runner(fn, [items[i] for i in order], on_done)
    results: list[R] = [ran[0]] * len(items) if ran else []
    for i, result in zip(order, ran, strict=True):
        results[i] = result
    return results


def ran_on(runner: Runner) -> str:
    """What a job's report says ran its file groups: this process, or Spark tasks."""
    return "in-process" if runner is run_in_process else "spark"


def run_on_spark(
    fn: Callable[[W], R],
    items: list[W],
    on_done: OnDone | None = None,
    *,
    master: str | None = None,
    conf: tuple[tuple[str, str], ...] = (),
) -> list[R]:
    """One Spark task per item; tasks do their own I/O with pyarrow/DuckDB (exact control of
    the Parquet files, and no Hadoop S3 jars needed), their DuckDB sized to the task. The
    session (``master``, ``conf``) starts only when there are items."""
    from .session import spark_context

    if not items:
        return []
    context = spark_context(master, conf)
    threads = task_resources.threads_per_task(
        context.master, int(context.getConf().get("spark.task.cpus", "1")), len(items), os.cpu_count() or 1
    )

    def run(item: W) -> R:
        fault_point("in_task")  # in the executor: a test may lose it (its pod) while it holds a task
        # PySpark's worker collects its whole heap after every task (pyspark/daemon.py,
        # gc.collect()): with the jobs' modules imported, 32 ms of CPU a task. What lives
        # now (modules, caches) is left out of those collections; each task's own garbage is
        # still collected (100 tasks importing the ingest: worker CPU 3.0-3.5 s -> 0.13 s)
        gc.freeze()
        with task_resources.using(task_resources.in_spark_task(threads)):
            return fn(item)

    rdd = context.parallelize(items, len(items)).map(carrying(run))
    if on_done is None:
        try:
            return rdd.collect()
        except Exception as exc:
            raise_carried(exc)
            raise
    return collect_counting(context, rdd, len(items), on_done)


# A Spark task's exception reaches the driver as text only (Spark's PythonException holds
# the worker's traceback), so the driver would lose its class and its message: a bad JSON
# line's "file:line" became "An exception was thrown from the Python worker" outside a
# job's produce step, and an error class the driver acts on was lost (``DuckLakeError``'s
# messages, ``cleanable``). ``carrying`` wraps a task's function:
# what it raises is raised again as ``_Carried``, whose text holds the exception pickled;
# ``raise_carried`` raises that exception in the driver, as the in-process runner would.
# The task still fails, so Spark stops the stage (and retries the task) as before.
_CARRIED = "ducklake-task-exception:"
_CARRIED_TEXT = re.compile(re.escape(_CARRIED) + r"([A-Za-z0-9+/=]+)")


class _Carried(Exception):
    """A task's exception on its way to the driver (its message first, for Spark's logs)."""


def _carried(exc: Exception) -> Exception | None:
    try:
        payload = base64.b64encode(pickle.dumps(exc)).decode()
    except Exception:  # noqa: BLE001  (not picklable: Spark's text is all the driver gets)
        return None
    return _Carried(f"{type(exc).__name__}: {exc} {_CARRIED}{payload}")


def carrying(fn: Callable[..., R]) -> Callable[..., R]:
    """``fn`` (a Spark task's function; a generator function too) with its exceptions carried
    to the driver."""

    def carry(exc: Exception) -> None:
        carried = _carried(exc)
        if carried is not None:
            raise carried from exc

    def items(out: Iterable[Any]) -> Iterable[Any]:
        try:
            yield from out
        except Exception as exc:
            carry(exc)
            raise

    def run(*args: Any) -> Any:
        try:
            out = fn(*args)
        except Exception as exc:
            carry(exc)
            raise
        return items(out) if isinstance(out, types.GeneratorType) else out

    return run


def raise_carried(exc: BaseException) -> None:
    """In the driver: raise the exception a failed Spark task carried in ``exc`` (Spark's);
    return when there is none (the task was lost, or its exception could not be pickled)."""
    found = _CARRIED_TEXT.findall(str(exc))
    if not found:
        return
    try:
        carried = pickle.loads(base64.b64decode(found[-1]))
    except Exception:  # noqa: BLE001  (its class no longer loads: keep Spark's exception)
        return
    if isinstance(carried, BaseException):
        raise carried from exc


def collect_counting(context: Any, rdd: Any, total: int, on_done: OnDone) -> list[Any]:
    """``rdd.collect()`` in a thread of its own job group, while this (the driver's) thread
    counts the group's finished tasks with Spark's status tracker and tells ``on_done``."""
    group = f"ducklake-{uuid.uuid4().hex}"
    outcome: dict[str, Any] = {}

    def collect() -> None:
        context.setJobGroup(group, "ducklake file groups")
        try:
            outcome["results"] = rdd.collect()
        except BaseException as exc:  # re-raised in the driver's thread
            outcome["error"] = exc

    thread = threading.Thread(target=collect, name=group, daemon=True)
    thread.start()
    tracker, told = context.statusTracker(), 0
    while thread.is_alive():
        thread.join(PROGRESS_POLL_SECONDS)
        done = _finished_tasks(tracker, group)
        if told < done < total:
            told = done
            on_done(done)
    if "error" in outcome:
        raise_carried(outcome["error"])
        raise outcome["error"]
    on_done(total)
    return outcome["results"]


def _finished_tasks(tracker: Any, group: str) -> int:
    done = 0
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        for stage_id in job.stageIds if job is not None else ():
            stage = tracker.getStageInfo(stage_id)
            done += stage.numCompletedTasks if stage is not None else 0
    return done
