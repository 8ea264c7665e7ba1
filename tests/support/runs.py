"""DuckLakeJobs and lakes for the tests that drive runs through the operator process."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ducklake_operator.catalog import CatalogLocation
from support import duck
from support.job_program import pause_env
from support.manifests import manifest, sqlite_catalog, table
from support.operator_process import Operator, is_ready, wait_for

LOCAL = {"launcher": "Local"}  # the job program as a child of the operator, Spark in local mode
IN_PROCESS = {"launcher": "Local", "inProcessBelow": "1GB"}  # no Spark session: a run takes about a second
ENDED = ("Succeeded", "Failed", "Cancelled")


def small_files_lake(kube, tmp_path, inserts: int = 6) -> CatalogLocation:
    """A Ready SQLite catalog ``lake`` holding ``main.orders`` with ``inserts`` small files written by DuckDB."""
    kube.apply(sqlite_catalog("lake", str(tmp_path), options={"dataInliningRowLimit": 0}), table("orders", "lake"))
    wait_for("table Ready", lambda: is_ready(kube.get("dlt", "orders")), timeout=30)
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "lake.sqlite"))
    insert(location, inserts)
    return location


PG_PASSWORD = "Pod-Pa55word"


def pg_lake(kube, pg_server, tmp_path, **spec: Any) -> CatalogLocation:
    """A Ready PostgreSQL catalog ``lake`` (credentials in Secret ``lake-pg``, ``spec``: more of
    its spec) with ``main.orders``; where DuckDB finds it."""
    role = f"pod{int(time.time() * 1000) % 10**8}"
    pg_server.create_password_role(role, PG_PASSWORD)
    pg_server.create_database(role, owner=role)
    backend = {"host": pg_server.host, "port": pg_server.port, "database": role,
               "credentialsSecretRef": {"name": "lake-pg"}}  # fmt: skip
    kube.grant_secrets("lake-pg")
    kube.apply(secret("lake-pg", username=role, password=PG_PASSWORD),
               manifest("DuckLakeCatalog", "lake", {"metadata": {"postgres": backend}, "dataPath": f"{tmp_path}/d/",
                                                    **spec}),
               table("orders", "lake"))  # fmt: skip
    wait_for("table Ready", lambda: is_ready(kube.get("dlt", "orders")), timeout=30)
    return CatalogLocation(kind="postgres", host=pg_server.host, port=pg_server.port, database=role, user=role,
                           password=PG_PASSWORD)  # fmt: skip


def insert(location: CatalogLocation, files: int, table_name: str = "orders") -> None:
    duck.run_workload(
        location, [f"INSERT INTO lk.{table_name} SELECT i, {k} FROM range(50) t(i)" for k in range(files)]
    )


def job(name: str, operation: str = "compact", table_name: str | None = "main.orders", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"catalogRef": {"name": "lake"}, "operation": operation, **spec}
    if table_name:
        body["table"] = table_name
    return manifest("DuckLakeJob", name, body)


def policy(name: str, **spec: Any) -> dict[str, Any]:
    return manifest("DuckLakeMaintenancePolicy", name, {"catalogRef": {"name": "lake"}, **spec})


def cancel(kube, name: str) -> None:
    """Set the run's ``spec.cancel``, as a user does."""
    kube.kubectl("patch", "dlj", name, "--type=merge", "-p", '{"spec": {"cancel": true}}')


def state(kube, name: str) -> str | None:
    return ((kube.get("dlj", name) or {}).get("status") or {}).get("state")


def commit_report(con: Any, snapshot: int) -> dict[str, Any]:
    """The report a run's snapshot carries in its ``commit_extra_info``, as DuckDB reads it."""
    info = duck.scalar(con, f"SELECT commit_extra_info FROM lk.snapshots() WHERE snapshot_id = {int(snapshot)}")
    return dict(json.loads(info))


def ended(kube, name: str, timeout: float = 90) -> dict[str, Any]:
    wait_for(f"{name} ended", lambda: state(kube, name) in ENDED, timeout=timeout)
    return kube.get("dlj", name)


def secret(name: str, **data: str) -> dict[str, Any]:
    encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": encoded}


def data_files(location: CatalogLocation, table_name: str = "orders") -> int:
    con = duck.attach(location, con=duck.connect())
    try:
        return int(duck.scalar(con, f"SELECT count(*) FROM ducklake_list_files('lk', '{table_name}')"))
    finally:
        con.close()


@contextmanager
def paused_programs(operator: Operator, point: str, marker: Path) -> Iterator[None]:
    """The operator restarted so that every job program it launches stops at the fault point
    ``point``, announces it in ``marker`` and goes on once ``marker`` is deleted; restarted
    as it was afterwards."""
    paused = pause_env(point, str(marker))
    operator.env.update(paused)
    operator.restart()
    try:
        yield
    finally:
        for name in paused:
            del operator.env[name]
        operator.restart()


def ended_going_on(kube, name: str, marker: Path, timeout: float = 90) -> dict[str, Any]:
    """``ended``, letting every paused job program go on meanwhile (``paused_programs``)."""

    def done() -> bool:
        marker.unlink(missing_ok=True)
        return state(kube, name) in ENDED

    wait_for(f"{name} ended", done, timeout=timeout)
    return kube.get("dlj", name)
