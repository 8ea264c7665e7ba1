"""Running the job program (``python -m ducklake_jobs run --run-file``) as the launchers do:
a child process with a run document and credentials in its environment, its JSON lines read
back from stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from typing import Any, TypedDict

from ducklake_operator.catalog import CatalogLocation

# what a test's own environment may hold that a run must not inherit
_INHERITED_NOT = ("DUCKLAKE_CATALOG_USERNAME", "DUCKLAKE_CATALOG_PASSWORD", "DUCKLAKE_REPORT_TO_API", "KUBECONFIG")


def catalog_manifest(location: CatalogLocation, data_path: str, secret: str | None = None) -> dict[str, Any]:
    """The DuckLakeCatalog a run document carries; ``secret``: its PostgreSQL credentials' Secret."""
    if location.kind == "sqlite":
        metadata: dict[str, Any] = {"sqlite": {"path": location.path}}
    else:
        pg: dict[str, Any] = {"host": location.host, "port": location.port, "database": location.database}
        if location.schema:
            pg["schema"] = location.schema
        if secret:
            pg["credentialsSecretRef"] = {"name": secret}
        metadata = {"postgres": pg}
    return {
        "apiVersion": "ducklake.dev/v1alpha1",
        "kind": "DuckLakeCatalog",
        "metadata": {"name": "lake", "namespace": "data", "uid": str(uuid.uuid4())},
        "spec": {"metadata": metadata, "dataPath": data_path},
    }


class Placement(TypedDict):
    """Where a run document's work runs (``run_document``'s keywords)."""

    in_process_below: int | str | None
    master: str | None


NO_SPARK: Placement = {"in_process_below": "1GB", "master": "no-such-master"}  # starting Spark would fail the run


def run_document(
    catalog: dict[str, Any],
    operation: str,
    table: str | None = None,
    params: dict[str, Any] | None = None,
    *,
    uid: str | None = None,
    name: str = "run-1",
    in_process_below: int | str | None = None,
    master: str | None = "local[2]",
) -> dict[str, Any]:
    return {
        "job": {"name": name, "namespace": "data", "uid": uid or str(uuid.uuid4()), "attempt": 1},
        "catalog": catalog,
        "table": table,
        "operation": operation,
        "params": params or {},
        "inProcessBelow": in_process_below,
        "spark": {"master": master, "conf": {"spark.ui.showConsoleProgress": "false"}},
    }


def write_document(doc: dict[str, Any], directory: str) -> str:
    path = os.path.join(directory, f"run-{uuid.uuid4().hex[:8]}.json")
    with open(path, "w") as fh:
        json.dump(doc, fh)
    return path


def program_env(**extra: str) -> dict[str, str]:
    """The test's environment without credentials; a catalog that names no Secret is reached
    as the test server's trusted superuser (libpq's PGUSER)."""
    env = {k: v for k, v in os.environ.items() if k not in _INHERITED_NOT}
    return {**env, "SPARK_LOCAL_IP": "127.0.0.1", "PGUSER": "postgres", **extra}


def command(run_file: str) -> list[str]:
    return [sys.executable, "-m", "ducklake_jobs", "run", "--run-file", run_file]


@dataclass(frozen=True)
class ProgramRun:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def events(self) -> list[dict[str, Any]]:
        """Every stdout line, each one JSON object (anything else fails the test)."""
        return [json.loads(line) for line in self.stdout.splitlines()]

    @property
    def result(self) -> dict[str, Any]:
        """The one result line, which is the last."""
        events = self.events
        assert [e["event"] for e in events].count("result") == 1 and events[-1]["event"] == "result", self.stdout
        return events[-1]

    @property
    def progress(self) -> list[tuple[str, int, int]]:
        return [(e["phase"], e["done"], e["total"]) for e in self.events if e["event"] == "progress"]


def run_program(doc: dict[str, Any], directory: str, argv: list[str] | None = None, **env: str) -> ProgramRun:
    run_file = write_document(doc, directory)
    proc = subprocess.run(
        argv + ["run", "--run-file", run_file] if argv else command(run_file),
        capture_output=True,
        text=True,
        env=program_env(**env),
        timeout=300,
    )
    return ProgramRun(proc.returncode, proc.stdout, proc.stderr)
