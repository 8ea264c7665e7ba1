"""DuckLakeJobs and lakes for the tests that drive runs through the operator process."""

from __future__ import annotations

import base64
from typing import Any

from ducklake_operator.catalog import CatalogLocation
from support import duck
from support.manifests import manifest, sqlite_catalog, table
from support.operator_process import is_ready, wait_for

LOCAL = {"launcher": "Local"}  # the job program as a child of the operator, Spark in local mode
IN_PROCESS = {"launcher": "Local", "inProcessBelow": "1GB"}  # no Spark session: a run takes about a second
ENDED = ("Succeeded", "Failed", "Cancelled")


def small_files_lake(kube, tmp_path, inserts: int = 6) -> CatalogLocation:  # type: ignore[no-untyped-def]
    """A Ready SQLite catalog ``lake`` holding ``main.orders`` with ``inserts`` small files written by DuckDB."""
    kube.apply(sqlite_catalog("lake", str(tmp_path), options={"dataInliningRowLimit": 0}), table("orders", "lake"))
    wait_for("table Ready", lambda: is_ready(kube.get("dlt", "orders")), timeout=30)
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "lake.sqlite"))
    insert(location, inserts)
    return location


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


def state(kube, name: str) -> str | None:  # type: ignore[no-untyped-def]
    return ((kube.get("dlj", name) or {}).get("status") or {}).get("state")


def ended(kube, name: str, timeout: float = 90) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    wait_for(f"{name} ended", lambda: state(kube, name) in ENDED, timeout=timeout)
    return kube.get("dlj", name)  # type: ignore[no-any-return]


def secret(name: str, **data: str) -> dict[str, Any]:
    encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": encoded}


def data_files(location: CatalogLocation, table_name: str = "orders") -> int:
    con = duck.attach(location, con=duck.connect())
    try:
        return int(con.execute(f"SELECT count(*) FROM ducklake_list_files('lk', '{table_name}')").fetchone()[0])
    finally:
        con.close()
