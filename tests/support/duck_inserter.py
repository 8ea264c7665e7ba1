"""A separate DuckDB process that inserts into a DuckLake table in a loop.

Usage: python duck_inserter.py ATTACH_TARGET TABLE ITERATIONS WORKER_ID [STOP_FILE]
With STOP_FILE it inserts until that file exists (ITERATIONS at most): a test that needs the
writer busy for the whole of its work says when it is done, instead of guessing a count.
Prints one JSON line: rows whose INSERT committed, and the errors of those that did not.
Odd iterations insert 3 rows (inlined), even ones 40 rows (a Parquet file).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import duckdb

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))

from support import duck  # noqa: E402


def start(target: str, table: str, iterations: int, worker: int, stop_file: str | None = None) -> subprocess.Popen[str]:
    """This program in a process of its own; ``communicate()`` gives its JSON line."""
    args = [target, table, str(iterations), str(worker), *([stop_file] if stop_file else [])]
    return subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE, text=True)


def wait_until_writing(writer: subprocess.Popen[str], con: Any, table: str, worker: int, timeout: float = 60) -> None:
    """Until the writer's rows are in ``lk.<table>`` as ``con`` sees it (its worker id goes into
    the table's first column, ``w`` in the tests), so the work that follows overlaps its inserts."""
    deadline = time.time() + timeout
    while not _rows_of(con, table, worker):
        assert writer.poll() is None and time.time() < deadline, "the writer inserted nothing"
        time.sleep(0.05)


def _rows_of(con: Any, table: str, worker: int) -> int:
    """The worker's rows in the table; 0 while a SQLite catalog is locked by the writer's
    commit (DuckDB's SQLite reader fails with "database is locked" rather than wait)."""
    try:
        row = con.execute(f"SELECT count(*) FROM lk.{table} WHERE w = {worker}").fetchone()
    except duckdb.Error as exc:
        if "database is locked" not in str(exc):
            raise
        return 0
    return int(row[0]) if row else 0


def main() -> None:
    target, table, iterations, worker = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    stop_file = sys.argv[5] if len(sys.argv) > 5 else None
    con = duck.connect()
    con.execute(f"ATTACH '{target}' AS lk")
    committed, errors = 0, []
    for i in range(iterations):
        if stop_file and os.path.exists(stop_file):
            break
        rows = 3 if i % 2 else 40
        try:
            con.execute(f"INSERT INTO lk.{table} SELECT {worker}, {i}, r FROM range({rows}) t(r)")
            committed += rows
        except Exception as exc:  # a failed INSERT commits nothing; count it as not inserted
            errors.append(" ".join(str(exc).split())[:600])
    print(json.dumps({"committed": committed, "errors": errors}))


if __name__ == "__main__":
    main()
