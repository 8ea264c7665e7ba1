"""A shuffle for jobs whose rows move between files (repartition): map tasks split their
input into keyed chunks, the driver routes each chunk to one reduce task, and every reduce
task gets all the chunks routed to it.

A chunk is one or more Parquet files an in-process DuckDB wrote (its own types read back
exactly). In-process, map tasks run one after the other and their chunks stay in a scratch
directory; the driver routes them, and reduce tasks (many and small: a partition each) run
on a thread per core. On Spark, a first job asks every map task what its chunks will be
(``account_fn``: keys, rows and estimated bytes, from the key columns only) for the driver
to route; the second runs the map tasks, which emit each chunk file's bytes keyed by its
reduce task, and Spark's shuffle (an RDD partitioned by that index) carries them across
executors to the reduce tasks, one RDD partition each. The bytes cross between Python and
the JVM once each way, and nothing is kept between the jobs.
"""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from . import task_resources
from .task_runners import Runner, carrying, collect_counting, run_in_process

M = TypeVar("M")  # a map task
T = TypeVar("T")  # a reduce task
R = TypeVar("R")  # a reduce task's result
Progress = Callable[[int, int], None]  # tasks done, tasks in the stage


@dataclass(frozen=True)
class ChunkAccount:
    """What one map task keyed alike: enough for the driver to route it."""

    map_index: int
    key: str
    rows: int
    bytes: int  # written, or estimated before it is
    info: Any = None  # what the map task says of the key (e.g. partition values)


@dataclass(frozen=True)
class Chunk:
    account: ChunkAccount
    files: tuple[str, ...]  # local paths where the map task wrote it


ChunkId = tuple[int, str]  # (map index, key)
Accountant = Callable[[M, int], list[ChunkAccount]]  # (task, its index): its chunks, before writing them
Mapper = Callable[[M, int, str], list[Chunk]]  # (task, its index, a fresh directory for its chunk files)
Reducer = Callable[[T, list[str]], R]  # (task, the local paths of every chunk file routed to it)


@dataclass(frozen=True)
class Routes(Generic[T]):
    """The driver's decision: the reduce tasks, and which one gets each chunk."""

    tasks: list[T]
    of_chunk: dict[ChunkId, int]


Router = Callable[[list[ChunkAccount]], Routes[T]]


def shuffle(
    runner: Runner,
    account_fn: Accountant[M],
    map_fn: Mapper[M],
    items: Sequence[M],
    route: Router[T],
    reduce_fn: Reducer[T, R],
    progress: Progress | None = None,
) -> tuple[Routes[T], list[R]]:
    """Map every item, route the chunks, reduce; in this process when ``runner`` is
    ``run_in_process``, else as Spark tasks in the runner's session. Returns the routes and
    the reduce tasks' results, in the routes' order."""
    if not items:
        return route([]), []
    tell = progress or (lambda done, total: None)
    if runner is run_in_process:
        return _in_process(map_fn, items, route, reduce_fn, tell)
    return _on_spark(_spark_context(runner), account_fn, map_fn, items, route, reduce_fn, tell)


def _in_process(
    map_fn: Mapper[M], items: Sequence[M], route: Router[T], reduce_fn: Reducer[T, R], tell: Progress
) -> tuple[Routes[T], list[R]]:
    with tempfile.TemporaryDirectory(prefix="ducklake-shuffle-") as scratch:
        chunks: list[Chunk] = []
        for i, item in enumerate(items):
            chunks += map_fn(item, i, os.path.join(scratch, str(i)))
            tell(i + 1, len(items))
        routes = route([c.account for c in chunks])
        files: dict[int, list[str]] = defaultdict(list)
        for c in chunks:
            files[routes.of_chunk[(c.account.map_index, c.account.key)]] += c.files
        # one reduce task per core at a time, as an executor runs them, each DuckDB on its share
        cores = os.cpu_count() or 1
        workers = max(1, min(cores, len(routes.tasks)))
        share = task_resources.TaskResources(threads=max(1, cores // workers))

        def reduce_one(i: int) -> R:
            with task_resources.using(share):
                return reduce_fn(routes.tasks[i], files[i])

        with ThreadPoolExecutor(workers, thread_name_prefix="ducklake-reduce") as pool:
            futures = [pool.submit(reduce_one, i) for i in range(len(routes.tasks))]
            for done, future in enumerate(as_completed(futures), 1):
                future.result()  # the first failure, at once
                tell(done, len(routes.tasks))
        return routes, [f.result() for f in futures]


def _spark_context(runner: Runner) -> Any:
    """The SparkContext the runner's tasks run in: the process's one (a session's getOrCreate
    returns it whatever its settings). Runners hide their Spark settings (the job program's
    come from its run document), so without one yet, one empty task through the runner
    starts its session (and a Python worker, reused after)."""
    from pyspark import SparkContext

    if SparkContext._active_spark_context is None:
        runner(_nothing, [None])
    return SparkContext.getOrCreate()


def _nothing(_: object) -> None:
    return None


def _threads(context: Any, tasks: int) -> int:
    return task_resources.threads_per_task(
        context.master, int(context.getConf().get("spark.task.cpus", "1")), tasks, os.cpu_count() or 1
    )


def _on_spark(
    context: Any,
    account_fn: Accountant[M],
    map_fn: Mapper[M],
    items: Sequence[M],
    route: Router[T],
    reduce_fn: Reducer[T, R],
    tell: Progress,
) -> tuple[Routes[T], list[R]]:
    indexed = list(enumerate(items))
    map_threads = _threads(context, len(items))

    def account(pair: tuple[int, M]) -> list[ChunkAccount]:
        with task_resources.using(task_resources.in_spark_task(map_threads)):
            return account_fn(pair[1], pair[0])

    accounts = context.parallelize(indexed, len(indexed)).flatMap(carrying(account))
    routes = route(collect_counting(context, accounts, len(items), lambda done: tell(done, len(items))))
    of_chunk, tasks = routes.of_chunk, routes.tasks
    if not tasks:  # every row was dropped
        return routes, []
    reduce_threads = _threads(context, len(tasks))

    def split(pair: tuple[int, M]) -> Iterator[tuple[int, bytes]]:
        """(reduce task, one chunk file's bytes)."""
        index, item = pair
        with task_resources.using(task_resources.in_spark_task(map_threads)):
            with tempfile.TemporaryDirectory(prefix="ducklake-map-") as scratch:
                for chunk in map_fn(item, index, os.path.join(scratch, "chunks")):
                    a = chunk.account
                    if (a.map_index, a.key) not in of_chunk:
                        raise RuntimeError(f"map task {index} wrote a chunk it did not account for ({a.info})")
                    for path in chunk.files:
                        with open(path, "rb") as fh:
                            yield of_chunk[(a.map_index, a.key)], fh.read()

    def merge(index: int, records: Iterator[tuple[int, bytes]]) -> list[R]:
        with task_resources.using(task_resources.in_spark_task(reduce_threads)):
            with tempfile.TemporaryDirectory(prefix="ducklake-reduce-") as scratch:
                paths = []
                for n, (_, data) in enumerate(records):
                    paths.append(os.path.join(scratch, f"chunk-{n}.parquet"))
                    with open(paths[-1], "wb") as fh:
                        fh.write(data)
                return [reduce_fn(tasks[index], paths)]

    reduced = (
        context.parallelize(indexed, len(indexed))
        .flatMap(carrying(split))
        .partitionBy(len(tasks), lambda reduce_index: reduce_index)
        .mapPartitionsWithIndex(carrying(merge))
    )
    total = len(items) + len(tasks)  # the map tasks run again, then the reduce tasks
    results: list[R] = collect_counting(context, reduced, total, lambda done: tell(done, total))
    return routes, results
