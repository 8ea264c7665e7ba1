"""A shuffle for jobs whose rows move between files (repartition): map tasks split their
input into keyed chunks, the driver routes each chunk to one reduce task, and every reduce
task gets all the chunks routed to it.

A chunk is one or more Parquet files an in-process DuckDB wrote (its own types read back
exactly). In-process, chunks stay in a scratch directory. On Spark, map tasks emit each
chunk file's bytes as a record keyed by its reduce task; Spark's shuffle (an RDD
partitioned by that index) carries the records across executors, and each reduce task
(one RDD partition) writes them to its scratch directory before reading them. The mapped
records are persisted (memory, then the executors' disks) between the two stages, so the
map tasks run once: a first Spark job collects what the chunks are (keys, rows, bytes) for
the driver to route, the second shuffles and reduces them.
"""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from . import task_resources
from .runtime import Runner, collect_counting, run_in_process

M = TypeVar("M")  # a map task
T = TypeVar("T")  # a reduce task
R = TypeVar("R")  # a reduce task's result
Progress = Callable[[int, int], None]  # tasks done, tasks in the stage


@dataclass(frozen=True)
class Chunk:
    """Rows one map task keyed alike."""

    map_index: int
    key: str
    files: tuple[str, ...]  # local paths where the map task wrote them
    rows: int
    bytes: int
    info: Any = None  # what the map task says of the key (e.g. partition values)


ChunkId = tuple[int, str]  # (map index, key)
Mapper = Callable[[M, int, str], list[Chunk]]  # (task, its index, a fresh directory for its chunk files)
Reducer = Callable[[T, list[str]], R]  # (task, the local paths of every chunk file routed to it)


@dataclass(frozen=True)
class Routes(Generic[T]):
    """The driver's decision: the reduce tasks, and which one gets each chunk."""

    tasks: list[T]
    of_chunk: dict[ChunkId, int]


Router = Callable[[list[Chunk]], Routes[T]]


def shuffle(
    runner: Runner,
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
    if runner is run_in_process:
        return _in_process(map_fn, items, route, reduce_fn, progress)
    return _on_spark(_spark_context(runner), map_fn, items, route, reduce_fn, progress)


def _in_process(
    map_fn: Mapper[M], items: Sequence[M], route: Router[T], reduce_fn: Reducer[T, R], progress: Progress | None
) -> tuple[Routes[T], list[R]]:
    tell = progress or (lambda done, total: None)
    with tempfile.TemporaryDirectory(prefix="ducklake-shuffle-") as scratch:
        chunks: list[Chunk] = []
        for i, item in enumerate(items):
            chunks += map_fn(item, i, os.path.join(scratch, str(i)))
            tell(i + 1, len(items))
        routes = route(chunks)
        files: dict[int, list[str]] = defaultdict(list)
        for c in chunks:
            files[routes.of_chunk[(c.map_index, c.key)]] += c.files
        results = []
        for i, task in enumerate(routes.tasks):
            results.append(reduce_fn(task, files[i]))
            tell(i + 1, len(routes.tasks))
        return routes, results


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
    map_fn: Mapper[M],
    items: Sequence[M],
    route: Router[T],
    reduce_fn: Reducer[T, R],
    progress: Progress | None,
) -> tuple[Routes[T], list[R]]:
    from pyspark import StorageLevel

    map_threads = _threads(context, len(items))

    def split(indexed: tuple[int, M]) -> list[tuple[ChunkId, tuple[Chunk | None, bytes]]]:
        """Records of (chunk id, (the chunk's account with its first file, one file's bytes))."""
        index, item = indexed
        records: list[tuple[ChunkId, tuple[Chunk | None, bytes]]] = []
        with task_resources.using(task_resources.in_spark_task(map_threads)):
            with tempfile.TemporaryDirectory(prefix="ducklake-map-") as scratch:
                for chunk in map_fn(item, index, os.path.join(scratch, "chunks")):
                    for n, path in enumerate(chunk.files):
                        with open(path, "rb") as fh:
                            account = replace(chunk, files=()) if n == 0 else None
                            records.append(((chunk.map_index, chunk.key), (account, fh.read())))
        return records

    mapped = context.parallelize(list(enumerate(items)), len(items)).flatMap(split)
    mapped.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        accounts = mapped.map(lambda r: r[1][0]).filter(lambda c: c is not None)
        chunks: list[Chunk] = collect_counting(context, accounts, len(items), _told(progress, len(items)))
        routes = route(chunks)
        of_chunk, tasks = routes.of_chunk, routes.tasks
        reduce_threads = _threads(context, len(tasks))

        def merge(index: int, records: Any) -> list[R]:
            with task_resources.using(task_resources.in_spark_task(reduce_threads)):
                with tempfile.TemporaryDirectory(prefix="ducklake-reduce-") as scratch:
                    paths = []
                    for n, (_, data) in enumerate(records):
                        paths.append(os.path.join(scratch, f"chunk-{n}.parquet"))
                        with open(paths[-1], "wb") as fh:
                            fh.write(data)
                    return [reduce_fn(tasks[index], paths)]

        reduced = (
            mapped.map(lambda r: (of_chunk[r[0]], r[1][1]))
            .partitionBy(len(tasks), lambda index: index)
            .mapPartitionsWithIndex(merge)
        )
        results: list[R] = collect_counting(context, reduced, len(tasks), _told(progress, len(tasks)))
        return routes, results
    finally:
        mapped.unpersist()


def _told(progress: Progress | None, total: int) -> Callable[[int], None]:
    return (lambda done: progress(done, total)) if progress is not None else (lambda done: None)
