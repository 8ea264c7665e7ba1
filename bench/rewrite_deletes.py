"""rewriteDeletes throughput: our job vs DuckDB's ``ducklake_rewrite_data_files``.

Builds one table of about --mb MB in --files Parquet files (SQLite catalog, local data path;
``bench/compaction.py``'s table), deletes --deleted of every file's rows (a delete file each),
then, --runs times, each on a fresh copy, who goes first rotating: DuckDB's rewrite, ours
in-process, ours on Spark local[2] (one session for all its rounds; its start is printed and
added apart). All rewrite every file (a threshold below the deleted fraction). Prints MB/s of
input (min/median/max), the ratio of the medians, CPU seconds, and the disk's sequential
write+read rate.

    python bench/rewrite_deletes.py [--mb 1000 --files 100 --deleted 0.25 --runs 3]
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import sys
import tempfile
from collections.abc import Callable

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.compaction import build, data_files, fresh_copy, median, rotated, spread  # noqa: E402
from bench.physical import print_limits  # noqa: E402
from bench.rewrite import cpu_timed  # noqa: E402
from bench.spark_start import spark_start_seconds  # noqa: E402

from ducklake_jobs.rewrite_deletes import rewrite_deletes  # noqa: E402
from ducklake_jobs.task_runners import Runner, run_in_process, run_on_spark  # noqa: E402
from ducklake_operator.catalog import Catalog, CatalogLocation  # noqa: E402
from support import duck  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=1000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--deleted", type=float, default=0.25, help="fraction of each file's rows deleted")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="bench-rewrite-deletes-")
    base = os.path.join(work, "base")
    os.makedirs(base)
    location, size = build(base, args.mb, args.files)
    every = round(1 / args.deleted)
    duck.run_workload(location, [f"DELETE FROM lk.t WHERE id % {every} = 0"])
    mb = size / 1e6
    threshold = args.deleted / 2
    print(f"table: {args.files} files, {mb:.0f} MB of Parquet, 1/{every} of every file's rows deleted")
    start_s = spark_start_seconds()  # the session shared by the Spark rounds; its start is added apart
    seconds: dict[str, list[float]] = {"duckdb": [], "ours": [], "spark": []}
    cpu: dict[str, list[float]] = {"duckdb": [], "ours": []}  # this process's threads (Spark's JVM is not)

    def duckdb_rewrite(location: CatalogLocation) -> None:
        con = duck.attach(location)
        con.execute(f"CALL ducklake_rewrite_data_files('lk', 't', delete_threshold => {threshold})")
        con.close()

    def ours(runner: Runner) -> Callable[[CatalogLocation], None]:
        def run(location: CatalogLocation) -> None:
            catalog = Catalog.open(location)
            report = rewrite_deletes(catalog, "main", "t", delete_threshold=threshold, runner=runner)
            assert report["filesRead"] == args.files, report
            catalog.close()

        return run

    contenders: list[tuple[str, Callable[[CatalogLocation], None]]] = [
        ("duckdb", duckdb_rewrite),
        ("ours", ours(run_in_process)),
        ("spark", ours(run_on_spark)),
    ]
    for r in range(args.runs):  # each on a fresh copy, who goes first rotating
        for name, rewrite in rotated(contenders, r):
            with fresh_copy(base, name) as location:
                wall, cpu_s = cpu_timed(functools.partial(rewrite, location))
                seconds[name].append(wall)
                if name in cpu:
                    cpu[name].append(cpu_s)
        print(f"run {r + 1}: " + ", ".join(f"{n} {seconds[n][-1]:.2f} s" for n, _ in contenders), flush=True)
    duck_s = median(seconds["duckdb"])
    with_start = [start_s + x for x in seconds["spark"]]
    print(f"DuckDB rewrite_data_files:            {spread(seconds['duckdb'], mb)}  CPU {median(cpu['duckdb']):.2f} s")
    print(
        f"rewriteDeletes, in-process:           {spread(seconds['ours'], mb)}  ratio of medians "
        f"{duck_s / median(seconds['ours']):.2f}  CPU {median(cpu['ours']):.2f} s "
        f"(ratio {median(cpu['duckdb']) / median(cpu['ours']):.2f})"
    )
    print(
        f"rewriteDeletes, Spark local[2] incl. start: {spread(with_start, mb)}  ratio {duck_s / median(with_start):.2f}"
    )
    print(
        f"rewriteDeletes, Spark local[2] excl. start: {spread(seconds['spark'], mb)}  "
        f"ratio {duck_s / median(seconds['spark']):.2f}  (the session started in {start_s:.1f} s)"
    )
    rates = {
        "DuckDB rewrite_data_files": mb / duck_s,
        "rewriteDeletes, in-process": mb / median(seconds["ours"]),
        "rewriteDeletes, Spark excl. start": mb / median(seconds["spark"]),
    }
    print_limits(work, rates, data_files(base), width=34)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
