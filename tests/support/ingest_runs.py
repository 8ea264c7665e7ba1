"""An ``ingest`` run on a lake, as the ingest tests start it: the job template in this process."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Any

from ducklake_jobs.job_template import run_operation
from ducklake_jobs.task_runners import Runner, run_in_process
from ducklake_operator.catalog import Catalog, CatalogLocation


def ingest(
    location: CatalogLocation, path: Path | str, table: str = "main.t", runner: Runner = run_in_process, **params: Any
) -> dict[str, Any]:
    """The report of ingesting ``path`` into ``table`` with the job parameters ``params``."""
    with closing(Catalog.open(location)) as catalog:
        return run_operation(catalog, "ingest", table, {"path": str(path), **params}, runner=runner)
