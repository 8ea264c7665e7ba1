"""A run from its launch to its program's exit, whole processes, against DuckDB's own
function in a process of its own: the Local launcher's program started for the run (on
Spark local[2], and in-process), and the program of a warm spare (``local_spare``: started
after an earlier run on Spark, its session and workers up before the run was created).

``--operation compact`` (against ``ducklake_merge_adjacent_files``) on the table of
``bench/compaction.py`` (about --mb MB in --files small Parquet files, SQLite catalog);
``rewriteDeletes`` (against ``ducklake_rewrite_data_files``) on that table with a quarter of
every file's rows deleted (``bench/rewrite_deletes.py``'s, 100 files); ``rewriteColumnType``
``varchar -> int64`` (against a CREATE TABLE AS SELECT with the CAST) on ``bench/rewrite.py``'s
table, into files of 256 MB; ``ingest-parquet``, ``-csv`` and ``-json`` (against DuckDB adding the
three columns and inserting BY NAME from its reader) on ``bench/ingest.py``'s input, 20 files. Each contender runs
on a fresh copy per round, who goes first rotating. Before each warm run, a run on a small
table leaves the spare, which is waited for until it says it is ready. Prints min/median/max
seconds, the ratio of DuckDB's median to each contender's, and the runs' reports.

    python bench/warm_spare.py [--operation compact] [--mb 1000 --files 2000 --runs 3]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench import compaction, ingest, rewrite  # noqa: E402
from bench.compaction import fresh_copy, median, rotated, spread  # noqa: E402

from ducklake_operator.catalog import CatalogLocation  # noqa: E402
from ducklake_operator.controller.launchers.local import LocalLauncher  # noqa: E402
from ducklake_operator.controller.launchers.spec import Launched, launch_spec  # noqa: E402
from support import duck  # noqa: E402
from support.job_program import catalog_manifest, run_document  # noqa: E402

# DuckDB's function in a process of its own: the extension loaded from its wheel, the catalog attached
DUCKDB = """
import sys
from ducklake_operator.catalog import CatalogLocation
from ducklake_operator.duckdb_client import attach
con = attach(CatalogLocation(kind="sqlite", path=sys.argv[1]))
con.execute("SET enable_progress_bar = false")
con.execute(sys.argv[2])
"""
DELETED = 4  # rewriteDeletes: every fourth row deleted; files with more than half that fraction rewritten


@dataclass(frozen=True)
class Operation:
    duckdb: Callable[[str], str]  # its counterpart in DuckDB, given the table's root directory
    params: Callable[[str], dict[str, Any]]  # the job's, given that directory
    build: Callable[[str, int, int], tuple[CatalogLocation, int]]  # the table (and input), its input bytes
    files: int
    setup: tuple[str, ...] = ()  # DuckDB statements on the table before every round's copies are made


def ingest_operation(fmt: str) -> Operation:
    """ingest of ``bench/ingest.py``'s input (in ``<root>-input``, not copied: read only) into its
    table: three new columns; DuckDB adds them and inserts BY NAME, in one transaction."""

    def build(root: str, mb: int, files: int) -> tuple[CatalogLocation, int]:
        location = ingest.make_table(root)
        _, size = ingest.make_input(root + "-input", fmt, mb, files)
        return location, size

    def duckdb(root: str) -> str:
        added = "; ".join(f"ALTER TABLE lk.t ADD COLUMN {name} {sql}" for name, sql in ingest.NEW_COLUMNS)
        pattern = os.path.join(root + "-input", f"*.{ingest.FORMATS[fmt][0]}")
        return f"BEGIN; {added}; INSERT INTO lk.t BY NAME SELECT * FROM {ingest.READERS[fmt]}('{pattern}'); COMMIT"

    return Operation(duckdb, lambda root: {"path": root + "-input", "format": fmt}, build, 20)


OPERATIONS = {
    "compact": Operation(lambda _: "CALL ducklake_merge_adjacent_files('lk')", lambda _: {}, compaction.build, 2000),
    "rewriteDeletes": Operation(
        lambda _: f"CALL ducklake_rewrite_data_files('lk', 't', delete_threshold => {1 / DELETED / 2})",
        lambda _: {"deleteThreshold": 1 / DELETED / 2},
        compaction.build,
        100,
        (f"DELETE FROM lk.t WHERE id % {DELETED} = 0",),
    ),
    # the job converts only integer text (per value, as DuckDB's CAST does not: bench/rewrite.py)
    "rewriteColumnType": Operation(
        lambda _: "CREATE TABLE lk.t2 AS SELECT id, ts, CAST(v AS BIGINT) AS v, payload, f FROM lk.t",
        lambda _: {"column": "v", "type": "int64"},
        rewrite.build,
        100,
        ("CALL lk.set_option('target_file_size', '256MB')",),
    ),
    **{f"ingest-{fmt}": ingest_operation(fmt) for fmt in ingest.FORMATS},
}


class Runs:
    """A Local launcher whose programs' exits are waited for (its ``on_exit``)."""

    def __init__(self, state_dir: str, operation: str) -> None:
        self.operation, self.job = operation, operation.split("-")[0]
        self._exited: dict[str, threading.Event] = {}
        env = {k: v for k, v in os.environ.items() if not k.startswith("DUCKLAKE_")}
        self.launcher = LocalLauncher(lambda *_: "", state_dir=state_dir, env=env, on_exit=self._exit, warm_spare=True)
        self.state_dir = state_dir

    def _exit(self, uid: str) -> None:
        self._exited.setdefault(uid, threading.Event()).set()

    def run(
        self, location: CatalogLocation, root: str, name: str, *, in_process: bool = False
    ) -> tuple[float, dict[str, Any]]:
        """Seconds from the launch to the program's exit, and its result; the attempt released.
        ``root``: the directory of the table copied (its input is beside it)."""
        data_path = os.path.join(os.path.dirname(str(location.path)), "data") + "/"
        doc = run_document(catalog_manifest(location, data_path), self.job, "main.t",
                           OPERATIONS[self.operation].params(root), name=name,
                           in_process_below="1TB" if in_process else None)  # fmt: skip
        spec = launch_spec(job_name=name, namespace="bench", uid=doc["job"]["uid"], attempt=1, run_document=doc,
                           spark={"launcher": "Local", "master": "local[2]"}, env_from_secrets=[],
                           timeout_seconds=None, env={})  # fmt: skip
        done = self._exited.setdefault(spec.owner.uid, threading.Event())
        t0 = time.perf_counter()
        launched = self.launcher.launch(spec)
        done.wait()
        seconds = time.perf_counter() - t0
        result = self._result(launched)
        while not self.launcher.stopped(launched):
            time.sleep(0.02)
        self.launcher.release(launched)
        return seconds, result

    @staticmethod
    def _result(launched: Launched) -> dict[str, Any]:
        with open(launched.detail["log"]) as fh:
            result = json.loads(fh.read().splitlines()[-1])
        if result.get("state") != "Succeeded":
            with open(launched.detail["stderr"]) as fh:
                raise SystemExit(f"{launched.name}: {result.get('message')}\n{fh.read()[-3000:]}")
        return dict(result)

    def spare_ready(self, timeout: float = 120) -> None:
        """Until the spare says its session is up (its log line)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            for log in glob.glob(os.path.join(self.state_dir, "spare-*.err.log")):
                with open(log, errors="replace") as fh:
                    if "waiting for the run" in fh.read():
                        return
            time.sleep(0.05)
        raise SystemExit("no spare became ready")


def duckdb_run(location: CatalogLocation, statement: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", DUCKDB, str(location.path), statement], check=True)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--operation", choices=sorted(OPERATIONS), default="compact")
    parser.add_argument("--mb", type=int, default=1000)
    parser.add_argument("--files", type=int, help="input files (compact: 2000, ingest: 20, the others: 100)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each contender, alternating")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-warm-spare-") as work:
        base, small = os.path.join(work, "base"), os.path.join(work, "small")
        os.makedirs(base)
        os.makedirs(small)
        t0 = time.perf_counter()
        operation = OPERATIONS[args.operation]
        files = args.files or operation.files
        location, size = operation.build(base, args.mb, files)
        small_location, _ = operation.build(small, 1, 20)
        for lake in (location, small_location):
            duck.run_workload(lake, operation.setup)
        mb = size / 1e6
        print(f"{args.operation}: {files} files, {mb:.0f} MB of input (built in {time.perf_counter() - t0:.0f} s)")
        runs = Runs(os.path.join(work, "runs"), args.operation)
        seconds: dict[str, list[float]] = {k: [] for k in ("duckdb", "fresh", "warm", "in-process")}
        reports: dict[str, list[dict[str, Any]]] = {k: [] for k in ("fresh", "warm", "in-process")}

        def ours(kind: str) -> Callable[[], None]:
            def go() -> None:
                if kind == "warm":  # a run on Spark leaves the spare
                    with fresh_copy(small, "small-copy") as location:
                        runs.run(location, small, "prime")
                    runs.spare_ready()
                else:
                    runs.launcher.close()  # no spare: the program starts for the run
                with fresh_copy(base, kind) as location:
                    took, result = runs.run(location, base, kind, in_process=kind == "in-process")
                seconds[kind].append(took)
                reports[kind].append(result["report"])

            return go

        def theirs() -> None:
            runs.launcher.close()
            with fresh_copy(base, "duckdb") as location:
                seconds["duckdb"].append(duckdb_run(location, operation.duckdb(base)))

        contenders = [theirs, ours("fresh"), ours("warm"), ours("in-process")]
        for r in range(args.runs):
            for go in rotated(contenders, r):
                go()
        runs.launcher.close()
        duck_s = median(seconds["duckdb"])
        print(f"{'DuckDB, in a process of its own:':<45} {spread(seconds['duckdb'], mb)}")
        labels = {"fresh": "Spark local[2], program started for the run",
                  "warm": "Spark local[2], a warm spare's program",
                  "in-process": "in-process, program started for the run"}  # fmt: skip
        for kind, label in labels.items():
            timings = [r["timings"] for r in reports[kind]]
            phases = {p: median([t[p] for t in timings]) for p in timings[0]}
            print(f"{label + ':':<45} {spread(seconds[kind], mb)}  ratio {duck_s / median(seconds[kind]):.2f}")
            print(f"{'':<45} its report (medians): {', '.join(f'{p} {s:.2f} s' for p, s in phases.items())}")
        assert all(r.get("sparkSession") == "warm" for r in reports["warm"]), reports["warm"]
        shutil.rmtree(os.path.join(work, "runs"), ignore_errors=True)


if __name__ == "__main__":
    main()
