"""A job run as its own process, as a user runs it (``ducklake run-job --no-spark
--memory-limit``), measured from outside: its peak RSS (the kernel's high-water mark of the
child, ``wait4``'s ``ru_maxrss``: not this process's), its wall time, the most its scratch
directory (its ``TMPDIR``, where every task's scratch and DuckDB's spill go) held at once,
and what that directory holds once the run ended. The test of tables larger than memory and
``bench/memory.py`` share it.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

import yaml

from ducklake_operator.catalog import Catalog, CatalogLocation

from . import duck
from .manifests import sqlite_catalog

COLUMNS = "id BIGINT, ts TIMESTAMP, v VARCHAR, payload VARCHAR"
ROW_BYTES = 51  # about, in Parquet: the md5 payload does not compress
POLL_SECONDS = 0.05
# What a limited run may hold beyond its tiny-table baseline and its limit: DuckDB's
# allocations outside its buffer manager (each thread's scan, sort and Parquet writer state)
# and what the allocator keeps of freed memory. Measured: up to 41 MB at a 100 MB limit
# (repartition, the shuffle's map and reduce DuckDBs one after the other)
UNTRACKED_BYTES = 64_000_000
SPILL_DIR = "spill"  # a task's DuckDB temp_directory, in its scratch (``parquet_writer.scratch_session``)
CATALOG = "lake"
TABLE = "main.t"
# what each operation of the run is asked, on ``build_table``'s table
OPERATIONS: dict[str, dict[str, str]] = {
    "compact": {},
    "repartition": {},  # after ``prepare`` partitioned the table by month(ts)
    "rewriteColumnType": {"column": "v", "type": "int64"},
}


@dataclass(frozen=True)
class Measured:
    exit_code: int
    peak_rss_bytes: int
    seconds: float
    scratch_peak_bytes: int  # the most the scratch directory held at one poll (task outputs too)
    spill_peak_bytes: int  # of which DuckDB's spill files (its temp_directory: ``spill`` under a task's scratch)
    left: tuple[str, ...]  # what the scratch directory, and the run's working directory, hold after the run
    report: dict[str, Any]  # the run's JSON report
    stderr: str


def location(root: str) -> CatalogLocation:
    return CatalogLocation(kind="sqlite", path=os.path.join(root, f"{CATALOG}.sqlite"))


def build_table(root: str, mb: int, files: int) -> int:
    """``lk.t`` in a SQLite catalog under ``root``: ``files`` inserts of about ``mb`` MB of
    Parquet in all (timestamps over 2024, digits as text in ``v``, an md5 payload); returns the
    table's bytes of Parquet."""
    loc = location(root)
    Catalog.create(loc, data_path(root))
    rows = max(10, int(mb * 1_000_000 / files / ROW_BYTES))
    con = duck.attach(loc)
    try:
        con.execute("CALL lk.set_option('data_inlining_row_limit', 0)")
        con.execute(f"CREATE TABLE lk.t({COLUMNS})")
        for k in range(files):
            con.execute(
                "INSERT INTO lk.t SELECT i, TIMESTAMP '2024-01-01' + INTERVAL (hash(i) % 31622400) SECOND, "
                "((i * 7919) % 1000000007)::VARCHAR, md5(i::VARCHAR) "
                f"FROM range({k * rows}, {(k + 1) * rows}) t(i)"
            )
    finally:
        con.close()
    table = Catalog(loc).state().table("main", "t")
    assert table is not None
    return sum(f.file_size_bytes for f in table.data_files)


def copy_lake(source: str, root: str) -> None:
    """A copy at ``root`` of the lake built at ``source``, pointed at its own files (the data
    path is stored absolute)."""
    shutil.copytree(source, root)
    db = sqlite3.connect(os.path.join(root, f"{CATALOG}.sqlite"))
    try:
        db.execute("UPDATE ducklake_metadata SET value = ? WHERE key = 'data_path'", (data_path(root),))
        db.commit()
    finally:
        db.close()


def data_path(root: str) -> str:
    return os.path.join(root, f"{CATALOG}-data") + "/"


def prepare(root: str, operation: str, target_file_size: str) -> None:
    """What the operation needs of the table: compaction merges into files of
    ``target_file_size``; repartition moves the rows into month(ts) partitions."""
    statements = [f"CALL lk.set_option('target_file_size', '{target_file_size}')"]
    if operation == "repartition":
        statements.append("ALTER TABLE lk.t SET PARTITIONED BY (month(ts))")
    duck.run_workload(location(root), statements)


def fingerprint(root: str) -> tuple[int, int]:
    """What DuckDB reads of ``lk.t``: its rows, and a sum over every row's id and values (``v`` as
    text, so a table whose ``v`` became int64 reads the same)."""
    con = duck.attach(location(root))
    try:
        row = con.execute(
            "SELECT count(*), sum(hash(rowid, id, ts, v::VARCHAR, payload) % 1000000007) FROM lk.t"
        ).fetchone()
    finally:
        con.close()
    assert row is not None
    return int(row[0]), int(row[1] or 0)


def _bytes_under(directory: str) -> tuple[int, int]:
    """The bytes of the files under ``directory``, and of those under a ``spill`` directory."""
    total = spilled = 0
    for parent, _, files in os.walk(directory):
        for name in files:
            try:
                size = os.lstat(os.path.join(parent, name)).st_size
            except FileNotFoundError:  # removed while walking
                continue
            total += size
            spilled += size if SPILL_DIR in parent.split(os.sep) else 0
    return total, spilled


def run_job(root: str, operation: str, scratch: str, memory_limit: str | None) -> Measured:
    """``ducklake run-job <operation> main.t --no-spark [--memory-limit]`` on ``root``'s lake, in a
    child process whose ``TMPDIR`` is ``scratch``, in an empty working directory of its own (a
    DuckDB without a temp_directory would spill into ``.tmp`` there)."""
    manifest = os.path.join(root, "catalog.yaml")
    with open(manifest, "w", encoding="utf-8") as fh:
        yaml.safe_dump(sqlite_catalog(CATALOG, root), fh)
    params = [a for k, v in OPERATIONS[operation].items() for a in ("-p", f"{k}={v}")]
    limit = ["--memory-limit", memory_limit] if memory_limit else []
    argv = [sys.executable, "-m", "ducklake_operator.cli", "run-job", operation, TABLE, "-f", manifest, "--no-spark"]
    os.makedirs(scratch, exist_ok=True)
    cwd = os.path.join(root, "cwd")
    os.makedirs(cwd, exist_ok=True)
    out_path, err_path = os.path.join(root, "run.out"), os.path.join(root, "run.err")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [*argv, *params, *limit], stdout=out, stderr=err, env={**os.environ, "TMPDIR": scratch}, cwd=cwd
        )
        scratch_peak = spill_peak = 0
        while True:  # wait4 reaps the child with its own rusage (getrusage would mix every child's)
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            held, spilled = _bytes_under(scratch)
            scratch_peak, spill_peak = max(scratch_peak, held), max(spill_peak, spilled)
            time.sleep(POLL_SECONDS)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
    with open(out_path, encoding="utf-8") as fh:
        text = fh.read()
    with open(err_path, encoding="utf-8") as fh:
        stderr = fh.read()
    return Measured(
        exit_code=proc.returncode,
        peak_rss_bytes=usage.ru_maxrss * 1024,  # KiB on Linux
        seconds=seconds,
        scratch_peak_bytes=scratch_peak,
        spill_peak_bytes=spill_peak,
        left=tuple(sorted(os.listdir(scratch) + os.listdir(cwd))),
        report=json.loads(text) if proc.returncode == 0 and text.strip() else {},
        stderr=stderr,
    )
