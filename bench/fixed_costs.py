"""A job's fixed costs: the seconds from its process's start to its first task, in this
process and on Spark local[2], for the launched job program (``python -m ducklake_jobs
run``) and ``ducklake run-job``.

Each run compacts a fresh copy of one small table (SQLite catalog, a few files written by
DuckDB 1.5.5). The job program's JSON lines are read as they come: its first task begins
with its first ``writing`` event, plus its report's sparkStart (the session starts after
it). Code without timings (``--before``) gets wall clocks only to compare. ``ducklake run-job`` prints only its report: its first
task begins after its process's seconds outside the report plus the report's planning and
sparkStart; the program's ``exit``: from its result line to its process's end. Printed per variant: the median (min-max) of the wall clock, of the time to
the first task, and the report's timings. ``--before DIR``: each round also runs the code
under DIR (``DIR/operator``, ``DIR/jobs``, e.g. ``git archive REF operator jobs``), in the
same round, alternating, for paired figures.

    python bench/fixed_costs.py [--rounds 5] [--spark] [--before DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import yaml  # noqa: E402

from ducklake_operator.catalog import Catalog, CatalogLocation  # noqa: E402
from support import duck  # noqa: E402
from support.job_program import catalog_manifest, program_env, run_document, write_document  # noqa: E402

FILES = 4


def fresh(root: str) -> CatalogLocation:
    """A new catalog under ``root`` holding the table (the data path is stored in the catalog)."""
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    location = CatalogLocation(kind="sqlite", path=os.path.join(root, "c.sqlite"))
    Catalog.create(location, os.path.join(root, "data") + "/")
    duck.run_workload(
        location,
        ["CREATE TABLE lk.t(id INTEGER, v VARCHAR)"]
        + [f"INSERT INTO lk.t SELECT i, 'v' || i FROM range({k * 1000}, {k * 1000 + 1000}) t(i)" for k in range(FILES)],
    )
    return location


def program(root: str, location: CatalogLocation, spark: bool, env: dict[str, str]) -> dict[str, Any]:
    manifest = catalog_manifest(location, os.path.join(root, "data") + "/")
    placement: dict[str, Any] = {"master": "local[2]"} if spark else {"in_process_below": "1GB", "master": None}
    doc = run_document(manifest, "compact", "main.t", **placement)
    run_file = write_document(doc, root)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ducklake_jobs", "run", "--run-file", run_file],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    first_task = None
    result: dict[str, Any] = {}
    for line in proc.stdout:
        event = json.loads(line)
        if first_task is None and event.get("phase") == "writing":
            first_task = time.perf_counter() - t0
        if event.get("event") == "result":
            result, result_at = event, time.perf_counter()
    proc.wait()
    wall = time.perf_counter() - t0
    assert result.get("state") == "Succeeded", result
    exit_after = time.perf_counter() - result_at  # the result said, until the process has ended
    timings = result["report"].get("timings", {})
    if first_task is not None:  # the Spark session starts after the first writing event
        first_task = first_task + timings["sparkStart"] if timings else None
    return {"wall": wall, "firstTask": first_task, "exit": exit_after, **timings}


def run_job(root: str, location: CatalogLocation, spark: bool, env: dict[str, str]) -> dict[str, Any]:
    manifest = os.path.join(root, "catalog.yaml")
    with open(manifest, "w") as fh:
        yaml.safe_dump(catalog_manifest(location, os.path.join(root, "data") + "/"), fh)
    args = ["run-job", "compact", "main.t", "-f", manifest, *([] if spark else ["--no-spark"])]
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "ducklake_operator.cli", *args], capture_output=True, text=True, env=env, check=True
    )
    wall = time.perf_counter() - t0
    report = json.loads(out.stdout)
    timings = report.get("timings", {})
    # before the report's clock: the interpreter, imports, opening the catalog; after it: little
    outside = wall - report["seconds"]
    first_task = outside + timings["planning"] + timings["sparkStart"] if timings else None
    return {"wall": wall, "firstTask": first_task, **timings}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--spark", action="store_true", help="the Spark local[2] variants too")
    parser.add_argument("--before", help="a tree with operator/ and jobs/ of the code to compare")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-fixed-")
    codes = {"now": program_env()}
    if args.before:
        tree = os.path.abspath(args.before)
        codes["before"] = program_env(PYTHONPATH=f"{tree}/operator:{tree}/jobs")
    variants = [("program", False), ("run-job", False)] + ([("program", True), ("run-job", True)] if args.spark else [])
    rows: dict[tuple[str, str, bool], list[dict[str, Any]]] = defaultdict(list)
    print(f"compact of {FILES} small files, SQLite catalog, {args.rounds} rounds; machine shared", flush=True)
    for _ in range(args.rounds):
        for kind, spark in variants:
            for code, env in codes.items():
                root = os.path.join(tmp, "run")
                location = fresh(root)
                run = program if kind == "program" else run_job
                rows[(kind, code, spark)].append(run(root, location, spark, env))
    for (kind, code, spark), runs in rows.items():
        where = "spark local[2]" if spark else "in-process"

        def med(key: str, runs: list[dict[str, Any]] = runs) -> str:
            values = [r[key] for r in runs if r.get(key) is not None]
            if not values:
                return "-"
            return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"

        phases = "  ".join(f"{p} {med(p)}" for p in ("planning", "sparkStart", "tasks", "commit", "exit"))
        print(f"{kind:>8} {where:<14} {code:<6} wall {med('wall')}  to first task {med('firstTask')}  {phases}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
