"""The controller process imports what it uses: not DuckDB, pyarrow or Spark (~60 MB of its
memory before any object is reconciled), which only file work and default rendering need."""

from __future__ import annotations

import subprocess
import sys


def test_the_controller_does_not_load_the_data_plane() -> None:
    code = (
        "import sys, ducklake_operator.controller.wiring, ducklake_operator.controller.main; "
        "print(sorted(m for m in ('duckdb', 'pyarrow', 'pyspark', 'ducklake_jobs') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
