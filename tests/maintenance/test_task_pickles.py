"""What a Spark task's Python worker imports: exactly what unpickling a job's task function
and its work items needs (Spark ships both with cloudpickle; a function is pickled by
reference to its module, a closure by value). Each heavy job's tasks come from a task module
(``file_rewrite``, ``repartition_task``, ``retype_task``, ``ingest_tasks``) that needs no
catalog, so the worker imports neither SQLAlchemy nor the catalog's writers: 0.52 s -> 0.16 s
of every worker's start, measured here. The jobs run in-process with a runner that pickles
what a Spark runner would ship; a fresh interpreter unpickles it and runs each stage's first
task again (its outputs go to the test's lake, which nothing reads after)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from ducklake_jobs.job_template import run_operation
from ducklake_jobs.task_runners import run_in_process
from ducklake_operator.catalog import Catalog, CatalogLocation
from support.job_lakes import new_lake

HEAVY_MODULES = ("sqlalchemy", "ducklake_operator.catalog.commit", "ducklake_operator.catalog.catalog")
TABLE = [
    "CREATE TABLE lk.t(id INTEGER, v VARCHAR, b INTEGER)",
    "INSERT INTO lk.t SELECT i, i::VARCHAR, i % 3 FROM range(100) t(i)",
    "INSERT INTO lk.t SELECT i, i::VARCHAR, i % 3 FROM range(100, 200) t(i)",
    "DELETE FROM lk.t WHERE id % 7 = 0",
]
JOBS: dict[str, tuple[list[str], Callable[[Path], dict[str, Any]]]] = {
    "compact": (TABLE, lambda _: {}),
    "rewriteDeletes": (TABLE, lambda _: {"deleteThreshold": 0.01}),
    "repartition": (TABLE + ["ALTER TABLE lk.t SET PARTITIONED BY (b)"], lambda _: {}),
    "rewriteColumnType": (TABLE, lambda _: {"column": "v", "type": "int64"}),
    "ingest": (TABLE, lambda src: {"path": str(src)}),
}


@pytest.mark.parametrize("operation", list(JOBS))
def test_a_spark_worker_unpickles_tasks_without_the_catalog(tmp_path: Path, operation: str) -> None:
    statements, params = JOBS[operation]
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "c.sqlite"))
    new_lake(location, str(tmp_path / "data") + "/", statements)
    src = tmp_path / "in.json"
    src.write_text("".join(json.dumps({"id": i, "v": str(i), "new": i * 2}) + "\n" for i in range(50)))
    shipped: list[Path] = []

    def pickling(fn: Callable[[Any], Any], items: list[Any], on_done: Any = None) -> list[Any]:
        shipped.append(tmp_path / f"stage-{len(shipped)}.pkl")
        shipped[-1].write_bytes(cloudpickle.dumps((fn, items)))
        return run_in_process(fn, items, on_done)

    catalog = Catalog.open(location)
    try:
        report = run_operation(catalog, operation, "main.t", params(src), runner=pickling)
    finally:
        catalog.close()
    assert report["filesWritten"] > 0 and shipped, report
    code = (
        "import pickle, sys\n"
        f"for path in {[str(p) for p in shipped]!r}:\n"
        "    fn, items = pickle.load(open(path, 'rb'))\n"
        "    fn(items[0])\n"
        f"print(sorted(m for m in {HEAVY_MODULES!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
