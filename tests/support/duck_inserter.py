"""A separate DuckDB process that inserts into a DuckLake table in a loop.

Usage: python duck_inserter.py ATTACH_TARGET TABLE ITERATIONS WORKER_ID
Prints one JSON line: rows whose INSERT committed, and the errors of those that did not.
Odd iterations insert 3 rows (inlined), even ones 40 rows (a Parquet file).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))

from support import duck  # noqa: E402


def start(target: str, table: str, iterations: int, worker: int) -> subprocess.Popen[str]:
    """This program in a process of its own; ``communicate()`` gives its JSON line."""
    return subprocess.Popen(
        [sys.executable, __file__, target, table, str(iterations), str(worker)], stdout=subprocess.PIPE, text=True
    )


def main() -> None:
    target, table, iterations, worker = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    con = duck.connect()
    con.execute(f"ATTACH '{target}' AS lk")
    committed, errors = 0, []
    for i in range(iterations):
        rows = 3 if i % 2 else 40
        try:
            con.execute(f"INSERT INTO lk.{table} SELECT {worker}, {i}, r FROM range({rows}) t(r)")
            committed += rows
        except Exception as exc:  # a failed INSERT commits nothing; count it as not inserted
            errors.append(" ".join(str(exc).split())[:600])
    print(json.dumps({"committed": committed, "errors": errors}))


if __name__ == "__main__":
    main()
