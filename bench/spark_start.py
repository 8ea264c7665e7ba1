"""What a job program pays on Spark before its own work, measured once per bench process
(the benches run every Spark round on one session): the local[2] session's start, and what
its first stage takes beyond a later one's (the first stage starts the Python workers'
daemon and forks the workers; a job program's first tasks pay that). Every "incl. start"
figure adds it."""

from __future__ import annotations

import time


def spark_start_seconds() -> float:
    """Start the bench's Spark session; the seconds a new job program's session costs it."""
    from ducklake_jobs.session import spark_context

    t0 = time.perf_counter()
    context = spark_context()
    started = time.perf_counter() - t0

    def stage() -> float:
        t = time.perf_counter()
        context.parallelize(range(2), 2).map(lambda x: x).collect()
        return time.perf_counter() - t

    first = stage()
    return started + first - min(stage() for _ in range(3))
