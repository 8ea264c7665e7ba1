"""DuckLakeJob runs on the test node's pods (``support.pod_env``), as the pod tests drive and
check them: a lake with a many-file table, waiting for a run to end while watching its pods,
what a failed run says, the job program's result line in a pod's log, and the S3 bucket the
lakes live in, as DuckDB and pyarrow on this machine see it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ducklake_operator.catalog import CatalogLocation
from support.kube_namespace import Kube
from support.manifests import table
from support.operator_process import is_ready, wait_for
from support.pod_env import BUCKET, PodEnv
from support.runs import ENDED

SMALL = {"cores": "100m", "memory": "512m"}  # the node has 2 CPUs: requests small enough for a driver and 2 executors
JOB_LABEL = "ducklake.dev/job"  # on every pod of a run (the launchers')


def many_files_lake(pods: PodEnv, kube: Kube, files: int = 12) -> CatalogLocation:
    """A Ready lake ``lake`` with ``main.orders`` in ``files`` small files written by DuckDB."""
    location = pods.lake(kube, options={"dataInliningRowLimit": 0})
    kube.apply(table("orders", "lake"))
    wait_for("table Ready", lambda: is_ready(kube.get("dlt", "orders")), timeout=60)
    con = pods.duckdb(location)
    try:
        for k in range(files):
            con.execute(f"INSERT INTO lk.orders SELECT i, {k} FROM range({k * 100}, {k * 100 + 100}) t(i)")
    finally:
        con.close()
    return location


def rows(pods: PodEnv, location: CatalogLocation, table_name: str = "orders") -> list[tuple[Any, ...]]:
    con = pods.duckdb(location)
    try:
        return con.execute(f"SELECT rowid, * FROM lk.{table_name} ORDER BY rowid").fetchall()
    finally:
        con.close()


def last_result(log: str) -> dict[str, Any]:
    """The job program's result line in a pod's log."""
    events = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    results = [e for e in events if e.get("event") == "result"]
    assert results, log[-3000:]
    return dict(results[-1])


def run_pods(pods: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The pods of run ``name`` among ``pods``."""
    return [p for p in pods if p["metadata"].get("labels", {}).get(JOB_LABEL) == name]


def explain(kube: Kube, name: str, status: dict[str, Any]) -> str:
    """What a failed run says, its events and its pods' logs: the assertion message."""
    lines = [f"{name}: {status.get('state')}: {status.get('message')}"]
    lines += [f"event {e['reason']}: {e['message']}" for e in kube.events(name)]
    for pod in run_pods(kube.list("pods"), name):
        lines.append(f"--- pod {pod['metadata']['name']} ({pod['status'].get('phase')}):")
        lines.append(kube.kubectl("logs", pod["metadata"]["name"], "--all-containers", check=False)[-3000:])
    return "\n".join(lines)


def run_to_end(
    kube: Kube, name: str, timeout: float = 300, watch: Callable[[dict[str, Any]], None] | None = None
) -> tuple[dict[str, Any], set[str]]:
    """Wait until the run ends; its last status and the pods of it that were seen meanwhile
    (``watch``: called with each of them, as the API server has it, at every look)."""
    statuses, seen = runs_to_end(kube, [name], timeout, watch)
    return statuses[name], seen[name]


def runs_to_end(
    kube: Kube, names: list[str], timeout: float = 300, watch: Callable[[dict[str, Any]], None] | None = None
) -> tuple[dict[str, dict[str, Any]], dict[str, set[str]]]:
    """``run_to_end`` for runs going on side by side: each one's last status and pods seen."""
    statuses: dict[str, dict[str, Any]] = {}
    seen: dict[str, set[str]] = {name: set() for name in names}

    def ended() -> bool:
        pods = kube.list("pods")
        for name in names:
            for pod in run_pods(pods, name):
                seen[name].add(pod["metadata"]["name"])
                if watch is not None:
                    watch(pod)
        for run in kube.list("dlj"):
            name, status = run["metadata"]["name"], run.get("status") or {}
            if name in seen and status.get("state") in ENDED:
                statuses[name] = status
        return len(statuses) == len(names)

    wait_for(f"runs {', '.join(names)} ended", ended, timeout=timeout, interval=0.5)
    return statuses, seen


def s3_files(pods: PodEnv, prefix: str) -> dict[str, int]:
    """The objects of the lakes' bucket under ``prefix`` (a key prefix, no bucket), by key: their sizes."""
    import pyarrow.fs as pafs

    found = pods.s3fs().get_file_info(pafs.FileSelector(f"{BUCKET}/{prefix}", recursive=True, allow_not_found=True))
    return {f.path[len(BUCKET) + 1 :]: f.size for f in found if f.type == pafs.FileType.File}


def s3_url(key: str) -> str:
    return f"s3://{BUCKET}/{key}"
