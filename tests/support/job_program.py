"""Running the job program (``python -m ducklake_jobs run --run-file``) as the launchers do:
a child process with a run document and credentials in its environment, its JSON lines read
back from stdout. And killing a job (the program, or ``ducklake run-job``) exactly at one of
its fault points."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any, TypedDict

import yaml

from ducklake_operator.catalog import CatalogLocation

# what a test's own environment may hold that a run must not inherit
_INHERITED_NOT = ("DUCKLAKE_CATALOG_USERNAME", "DUCKLAKE_CATALOG_PASSWORD", "DUCKLAKE_REPORT_TO_API", "KUBECONFIG")


def catalog_manifest(
    location: CatalogLocation, data_path: str, secret: str | None = None, **spec: Any
) -> dict[str, Any]:
    """The DuckLakeCatalog a run document carries; ``secret``: its PostgreSQL credentials' Secret;
    ``spec``: more of its spec (``storage``)."""
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
        "spec": {"metadata": metadata, "dataPath": data_path, **spec},
    }


class Placement(TypedDict):
    """Where a run document's work runs (``run_document_reader``'s keywords)."""

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
        "spark": {"master": master, "conf": {}},
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


def catalog_file(catalog: dict[str, Any], directory: str) -> str:
    """``catalog`` (a DuckLakeCatalog) as a YAML file for ``ducklake ... -f``."""
    path = os.path.join(directory, f"catalog-{uuid.uuid4().hex[:8]}.yaml")
    with open(path, "w") as fh:
        yaml.safe_dump(catalog, fh)
    return path


def run_job_command(catalog: dict[str, Any], directory: str, *args: str) -> list[str]:
    """``ducklake run-job <args> -f <file>`` (the job in the CLI's own process), ``catalog`` (a
    DuckLakeCatalog) written to a file in ``directory``."""
    return [sys.executable, "-m", "ducklake_operator.cli", "run-job", *args, "-f", catalog_file(catalog, directory)]


def pause_env(point: str, marker: str) -> dict[str, str]:
    """The environment that makes a job announce ``point`` in the file ``marker`` and hang there
    until the file is deleted (the test seam ``ducklake_jobs.fault_points.fault_point``)."""
    return {"DUCKLAKE_FAULT_PAUSE": point, "DUCKLAKE_FAULT_MARKER": marker}


def killed_at(point: str, argv: list[str], directory: str, timeout: float = 120) -> ProgramRun:
    """Run ``argv`` (the job program, or ``ducklake run-job``) until it pauses at the fault point
    ``point``, then SIGKILL it: a job killed exactly there. Returns what it printed until then.
    Its output goes to files in ``directory``, so a chatty job cannot block on a full pipe."""
    tag = uuid.uuid4().hex[:8]
    marker, out, err = (os.path.join(directory, f"killed-{tag}.{what}") for what in ("paused", "stdout", "stderr"))

    def read(path: str) -> str:
        with open(path) as fh:
            return fh.read()

    scratch = os.path.join(directory, f"killed-{tag}.tmp")  # what the killed job never removed stays the test's
    os.makedirs(scratch)
    env = program_env(**pause_env(point, marker), TMPDIR=scratch)
    with open(out, "w") as stdout, open(err, "w") as stderr:
        proc = subprocess.Popen(argv, env=env, stdout=stdout, stderr=stderr)
    try:
        deadline = time.monotonic() + timeout
        while not os.path.exists(marker):
            assert proc.poll() is None, f"exited ({proc.returncode}) before pausing at {point}: {read(err)}"
            assert time.monotonic() < deadline, f"not paused at {point} after {timeout} s: {read(err)}"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, f"exited ({proc.returncode}) before it was killed: {read(err)}"
    return ProgramRun(proc.returncode, read(out), read(err))


def paused_then_killed(doc: dict[str, Any], directory: str, point: str) -> ProgramRun:
    """The job program on ``doc``, SIGKILLed once it paused at ``point`` (``killed_at``)."""
    return killed_at(point, command(write_document(doc, directory)), directory)
