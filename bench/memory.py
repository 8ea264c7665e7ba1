"""Tables larger than memory: compact, repartition and rewriteColumnType in-process on a table
of --gb GB of Parquet with a --limit memory limit (``ducklake run-job --no-spark
--memory-limit``), each run a child process measured from outside (``tests/support/memory_runs``).

Prints, per operation: the child's peak RSS beside the bound it must stay under (the same job's
peak on a tiny table, the baseline, plus the limit), its wall time, the most its scratch
directory held (task outputs included) and of that DuckDB's spill, and what was left in the
scratch directory afterwards; ``--unlimited`` runs each again without the limit for contrast;
``--check`` compares what DuckDB reads before and after (ids and values; a full scan each).

    python bench/memory.py [--gb 8 --limit 2GB --files 200 --target 4GB]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from ducklake_operator.model.options import parse_size  # noqa: E402
from support import memory_runs  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gb", type=float, default=8.0, help="the table's size in Parquet")
    parser.add_argument("--limit", default="2GB", help="the run's --memory-limit")
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--target", default="", help="target_file_size (default: twice the limit)")
    parser.add_argument("--operations", default=",".join(sorted(memory_runs.OPERATIONS)))
    parser.add_argument("--unlimited", action="store_true", help="also run each without the limit")
    parser.add_argument("--check", action="store_true", help="compare DuckDB's reads before and after")
    parser.add_argument("--dir", default=None, help="where to build (default: a temporary directory)")
    args = parser.parse_args()
    limit = parse_size(args.limit)
    target = args.target or f"{2 * limit // 1_000_000}MB"
    work = tempfile.mkdtemp(prefix="bench-memory-", dir=args.dir)
    big, tiny = os.path.join(work, "big"), os.path.join(work, "tiny")
    os.makedirs(big)
    os.makedirs(tiny)
    t0 = time.perf_counter()
    size = memory_runs.build_table(big, int(args.gb * 1000), args.files)
    memory_runs.build_table(tiny, 1, 4)
    print(
        f"table: {args.files} files, {size / 1e6:,.0f} MB of Parquet ({size / limit:.1f}x the limit {args.limit}; "
        f"built in {time.perf_counter() - t0:.0f} s); target_file_size {target}; {os.cpu_count()} cores",
        flush=True,
    )
    header = f"{'operation':<18} {'run':<10} {'peak RSS MB':>11} {'bound MB':>9} {'s':>7} {'scratch MB':>10} {'spill MB':>9}  left"
    print(header, flush=True)
    for operation in args.operations.split(","):
        runs = [("baseline", tiny, None), ("limited", big, args.limit)]
        runs += [("unlimited", big, None)] if args.unlimited else []
        baseline_rss = 0
        for name, source, run_limit in runs:
            root = os.path.join(work, f"{operation}-{name}")
            memory_runs.copy_lake(source, root)
            memory_runs.prepare(root, operation, target)
            before = memory_runs.fingerprint(root) if args.check and name != "baseline" else None
            run = memory_runs.run_job(root, operation, os.path.join(root, "scratch"), run_limit)
            if run.exit_code != 0:
                print(f"{operation:<18} {name:<10} FAILED: {run.stderr.strip()[-500:]}", flush=True)
                continue
            same = "" if before is None else f"  same rows as before: {memory_runs.fingerprint(root) == before}"
            baseline_rss = run.peak_rss_bytes if name == "baseline" else baseline_rss
            bound = f"{(baseline_rss + limit) / 1e6:9,.0f}" if name == "limited" else f"{'':9}"
            print(
                f"{operation:<18} {name:<10} {run.peak_rss_bytes / 1e6:11,.0f} {bound} {run.seconds:7.1f} "
                f"{run.scratch_peak_bytes / 1e6:10,.0f} {run.spill_peak_bytes / 1e6:9,.0f}  {list(run.left)}{same}",
                flush=True,
            )
            shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
