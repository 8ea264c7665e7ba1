"""A Spark task's DuckDB is sized to the task: the cores Spark reserved for it (under
local[*], the machine's cores shared among the tasks running at once), and a memory limit
it spills past into the task's scratch directory."""

from __future__ import annotations

import os

from ducklake_jobs import task_resources
from ducklake_jobs.parquet_writer import scratch_connection
from ducklake_jobs.task_runners import run_in_process, run_on_spark
from support import duck


def test_spark_tasks_share_the_cores() -> None:
    def duckdb_threads(_: int) -> int:  # defined here: Spark workers cannot import test modules
        con = scratch_connection()
        try:
            return int(con.execute("SELECT current_setting('threads')").fetchall()[0][0])
        finally:
            con.close()

    cores = os.cpu_count() or 1
    assert run_on_spark(duckdb_threads, [0]) == [cores]  # the tests' session is local[*]
    assert run_on_spark(duckdb_threads, list(range(2 * cores))) == [1] * (2 * cores)
    # in-process: a task alone gets every core; tasks at once (one per core) share them
    assert run_in_process(duckdb_threads, [0]) == [cores]
    assert run_in_process(duckdb_threads, [0, 1]) == [max(1, cores // min(2, cores))] * 2


def test_a_spark_worker_leaves_what_lives_out_of_its_collection_after_each_task() -> None:
    """PySpark's worker runs gc.collect() after every task: a task freezes what lives when it
    starts (the modules it imported), so that collection scans only what the task made."""

    def collected_and_frozen(_: int) -> tuple[int, int]:
        import gc

        return len(gc.get_objects()), gc.get_freeze_count()

    for collected, frozen in run_on_spark(collected_and_frozen, [0, 1, 2, 3]):
        assert frozen > 10 * collected, (collected, frozen)


def test_spark_tasks_reach_their_python_workers_over_unix_domain_sockets() -> None:
    """Over loopback TCP each task's round trip to its Python worker took about 26 ms."""

    def worker_socket(_: int) -> str:
        return os.environ.get("PYTHON_UNIX_DOMAIN_ENABLED", "").lower()  # what the worker factory told it

    assert run_on_spark(worker_socket, [0, 1]) == ["true", "true"]


def test_a_memory_limited_task_spills_instead_of_failing(tmp_path) -> None:
    spill = tmp_path / "spill"
    with task_resources.using(task_resources.TaskResources(threads=1, memory_limit_mb=64)):
        con = scratch_connection(spill=str(spill))
    try:
        assert duck.scalar(con, "SELECT current_setting('memory_limit')") == "61.0 MiB"
        assert duck.scalar(con, "SELECT current_setting('temp_directory')") == str(spill)
        # ~250 MB of strings sorted within 64 MB
        con.execute(
            f"COPY (SELECT md5(i::VARCHAR) || md5((i + 1)::VARCHAR) AS s FROM range(4000000) t(i) ORDER BY s) "
            f"TO '{tmp_path / 'out.parquet'}'"
        )
        assert duck.scalar(con, f"SELECT count(*) FROM '{tmp_path / 'out.parquet'}'") == 4_000_000
    finally:
        con.close()
