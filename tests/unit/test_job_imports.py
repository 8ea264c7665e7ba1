"""A job process imports only its own operation's module: running a compaction loads no
ingest, repartition or type-rewrite code (nor pyspark, until a Spark task runs)."""

from __future__ import annotations

import json
import subprocess
import sys

OTHERS = ("ingest", "repartition", "rewrite_column_type", "flush", "housekeeping", "rewrite_deletes")


def loaded_after(code: str) -> set[str]:
    script = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_the_job_program_and_template_import_no_operation() -> None:
    loaded = loaded_after("import ducklake_jobs.launched_program")
    assert not {f"ducklake_jobs.{m}" for m in (*OTHERS, "compact")} & loaded
    assert "pyspark" not in loaded


def test_an_operation_loads_its_own_module_only() -> None:
    loaded = loaded_after("from ducklake_jobs.operation_registry import plugin\nplugin('compact')")
    assert "ducklake_jobs.compact" in loaded
    assert not {f"ducklake_jobs.{m}" for m in OTHERS} & loaded
