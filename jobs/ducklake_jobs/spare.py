"""A warm spare: a job program started before its run, so that a run on Spark does not wait
for Spark to start (``python -m ducklake_jobs spare --spark JSON``).

The Local launcher keeps one ready after a run that used Spark, with that run's Spark
settings. It imports the job program, starts the SparkContext and runs one stage of tasks
that import what tasks import (the workers' daemon and one worker per slot, as a first
stage would), then waits for its run on stdin: one JSON line, ``{"runFile": PATH, "env":
{...}}``, the run's credentials among them (the launcher hands no process a Secret's value
before it has a run), and runs it as ``run`` does, in this process. End of input before
that line (the launcher gone, or the spare discarded) ends it, and so does a wait longer
than ``--idle-seconds``. A run's program is still a
process of its own, with its own limits and its own failure, as a fresh one is; only its
start was paid before the run was created.
"""

from __future__ import annotations

import json
import logging
import os
import select
import sys
import time
from collections.abc import Callable
from typing import IO, Any

from ducklake_operator.model.spare_handoff import Handoff, parse_handoff

log = logging.getLogger(__name__)


def serve(spark: str, idle_seconds: float | None, write: Callable[[str], None]) -> int:
    """Start Spark as ``spark`` (a run document's ``spark`` object, JSON) says, wait for the
    run, run it as ``run`` does; 0 when none comes."""
    from .launched_program import run_job
    from .run_document_reader import spark_settings

    warmed = False
    try:
        started = time.perf_counter()
        warm(*spark_settings(json.loads(spark)))
        warmed = True
        log.info("Spark started ahead of its run in %.2f s; waiting for the run", time.perf_counter() - started)
    except Exception:  # the run starts Spark itself then, and says what went wrong
        log.warning("the spare could not start Spark ahead of its run", exc_info=True)
    handoff = wait_for_run(sys.stdin, idle_seconds)
    if handoff is None:
        return 0
    os.environ.update(handoff.env)  # the run's credentials: the rest of its environment the spare has
    if warmed and not session_alive():
        log.warning("the Spark session started ahead is gone (its JVM killed?): the run starts its own")
        forget_session()
        warmed = False
    return run_job(handoff.run_file, write, os.environ, warm_session=warmed)


def warm(master: str, conf: tuple[tuple[str, str], ...]) -> None:
    """The session a run with these settings gets (``session.spark_context`` keeps it), and
    its workers started: one task per slot, each importing the tasks' heavy modules."""
    from .session import spark_context

    context = spark_context(master, conf)  # called as task_runners calls it: the same cached session
    slots = max(1, int(context.defaultParallelism))
    context.parallelize(range(slots), slots).map(_imported).collect()


def _imported(slot: int) -> int:
    """In a worker: the imports of the jobs' tasks (DuckDB, pyarrow), done before a task needs them."""
    import duckdb  # noqa: F401
    import pyarrow.parquet  # noqa: F401

    from . import task_runners  # noqa: F401

    return slot


def wait_for_run(stream: IO[str], idle_seconds: float | None = None) -> Handoff | None:
    """The run the launcher hands over; None at the end of input (no run will come) or when
    none came within ``idle_seconds`` (the spare gives its memory back)."""
    if idle_seconds is not None and not select.select([stream], [], [], idle_seconds)[0]:
        return None
    return parse_handoff(stream.readline())


def session_alive() -> bool:
    """Whether the session started ahead still answers (its JVM may have been killed while the
    spare waited: the out-of-memory killer picks the largest process)."""
    from pyspark import SparkContext

    jvm: Any = SparkContext._jvm
    if SparkContext._active_spark_context is None or jvm is None:
        return False
    try:
        jvm.java.lang.System.currentTimeMillis()  # a round trip to the JVM
    except Exception:  # noqa: BLE001 - py4j's errors for a gateway that is gone vary
        return False
    return True


def forget_session() -> None:
    """Drop a session whose JVM is gone, so the run starts its own as a fresh program would
    (PySpark launches a new gateway when it has none)."""
    from pyspark import SparkContext

    from .session import spark_context

    spark_context.cache_clear()
    SparkContext._active_spark_context = None
    SparkContext._gateway = None
    SparkContext._jvm = None
