"""rewriteDeletes throughput: our job vs DuckDB's ``ducklake_rewrite_data_files``.

Builds one table of about --mb MB in --files Parquet files (SQLite catalog, local data path;
``bench/compaction.py``'s table), deletes --deleted of every file's rows (a delete file each),
then, --runs times, alternating on fresh copies: DuckDB's rewrite, ours in-process. Both
rewrite every file (a threshold below the deleted fraction). Prints MB/s of input
(min/median/max), the ratio of the medians, CPU seconds, and the disk's sequential write+read
rate.

    python bench/rewrite_deletes.py [--mb 1000 --files 100 --deleted 0.25 --runs 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.compaction import build, data_files, fresh_copy, median, spread  # noqa: E402
from bench.physical import print_limits  # noqa: E402

from ducklake_jobs.rewrite_deletes import rewrite_deletes  # noqa: E402
from ducklake_jobs.task_runners import run_in_process  # noqa: E402
from ducklake_operator.catalog import Catalog  # noqa: E402
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
    theirs, ours, theirs_cpu, ours_cpu = [], [], [], []  # wall and CPU (this process's threads) seconds
    for run in range(args.runs):  # each on a fresh copy, who goes first alternating
        for contender in ("duckdb", "ours") if run % 2 == 0 else ("ours", "duckdb"):
            with fresh_copy(base, contender) as location:
                if contender == "duckdb":
                    con = duck.attach(location)
                    t0, c0 = time.perf_counter(), time.process_time()
                    con.execute(f"CALL ducklake_rewrite_data_files('lk', 't', delete_threshold => {threshold})")
                    theirs.append(time.perf_counter() - t0)
                    theirs_cpu.append(time.process_time() - c0)
                    con.close()
                    continue
                catalog = Catalog.open(location)
                t0, c0 = time.perf_counter(), time.process_time()
                report = rewrite_deletes(catalog, "main", "t", delete_threshold=threshold, runner=run_in_process)
                ours.append(time.perf_counter() - t0)
                ours_cpu.append(time.process_time() - c0)
                assert report["filesRead"] == args.files, report
                catalog.close()
        print(f"run {run + 1}: DuckDB {theirs[-1]:.2f} s, ours in-process {ours[-1]:.2f} s", flush=True)
    print(f"DuckDB rewrite_data_files:   {spread(theirs, mb)}  CPU {median(theirs_cpu):.2f} s")
    print(
        f"rewriteDeletes, in-process:  {spread(ours, mb)}  ratio of medians {median(theirs) / median(ours):.2f}"
        f"  CPU {median(ours_cpu):.2f} s (ratio {median(theirs_cpu) / median(ours_cpu):.2f})"
    )
    rates = {"DuckDB rewrite_data_files": mb / median(theirs), "rewriteDeletes, in-process": mb / median(ours)}
    print_limits(work, rates, data_files(base), width=28)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
