"""End to end: the real operator process (kopf) against the in-process API emulator
(``support.kube_api``, a stand-in for the Kubernetes API server, which cannot run here),
real catalogs, and DuckDB as the oracle. Objects are created through the API, as kubectl
would; effects are read from the catalog with DuckDB and from status as kubectl reads it.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from ducklake_operator.catalog import CatalogLocation
from support import duck
from support.kube_api import KubeApi

NS = "data"


@pytest.fixture
def api() -> Iterator[KubeApi]:
    server = KubeApi().start()
    yield server
    server.stop()


class Operator:
    def __init__(self, api: KubeApi, tmp_path) -> None:  # type: ignore[no-untyped-def]
        self.kubeconfig = api.kubeconfig(str(tmp_path / "kubeconfig"))
        self.log = open(tmp_path / "operator.log", "a")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {
            **os.environ,
            "KUBECONFIG": self.kubeconfig,
            "DUCKLAKE_RETRY_SCALE": "0.05",
            "DUCKLAKE_DRIFT_INTERVAL": "1",
            "DUCKLAKE_METRICS_PORT": "0",
        }
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ducklake_operator.controller.main",
                "--standalone",
                "--liveness",
                "http://127.0.0.1:0/healthz",
            ],
            env=env,
            stdout=self.log,
            stderr=self.log,
        )

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.fixture
def operator(api: KubeApi, tmp_path) -> Iterator[Operator]:  # type: ignore[no-untyped-def]
    op = Operator(api, tmp_path)
    op.start()
    yield op
    op.stop()


def post(api: KubeApi, plural: str, body: dict[str, Any], group: str = "apis/ducklake.dev/v1alpha1") -> dict[str, Any]:
    r = requests.post(f"{api.url}/{group}/namespaces/{NS}/{plural}", json=body, timeout=10)
    assert r.status_code == 201, r.text
    return r.json()


def patch(api: KubeApi, plural: str, name: str, body: dict[str, Any]) -> None:
    r = requests.patch(
        f"{api.url}/apis/ducklake.dev/v1alpha1/namespaces/{NS}/{plural}/{name}",
        json=body,
        headers={"Content-Type": "application/merge-patch+json"},
        timeout=10,
    )
    assert r.status_code == 200, r.text


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60) -> Any:
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def cond(obj: dict[str, Any] | None, type_: str) -> dict[str, Any]:
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions", []) if c["type"] == type_), {})


def manifests(tmp_path, columns: list[dict[str, Any]] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:  # type: ignore[no-untyped-def]
    catalog = {
        "apiVersion": "ducklake.dev/v1alpha1",
        "kind": "DuckLakeCatalog",
        "metadata": {"name": "lake"},
        "spec": {
            "metadata": {"sqlite": {"path": str(tmp_path / "lake.sqlite")}},
            "dataPath": str(tmp_path / "data") + "/",
        },
    }
    table = {
        "apiVersion": "ducklake.dev/v1alpha1",
        "kind": "DuckLakeTable",
        "metadata": {"name": "orders"},
        "spec": {
            "catalogRef": {"name": "lake"},
            "name": "orders",
            "deletionPolicy": "Delete",
            "columns": columns or [{"name": "id", "type": "int64"}, {"name": "amount", "type": "int32"}],
        },
    }
    return catalog, table


def test_table_lifecycle_through_the_api(api: KubeApi, operator: Operator, tmp_path) -> None:  # type: ignore[no-untyped-def]
    catalog, table = manifests(tmp_path)
    post(api, "ducklaketables", table)  # before its catalog: it waits
    waiting = wait_for(
        "CatalogNotFound",
        lambda: cond(api.get("ducklaketables", NS, "orders"), "Ready").get("reason") == "CatalogNotFound",
    )
    assert waiting
    post(api, "ducklakecatalogs", catalog)
    wait_for("table Ready", lambda: cond(api.get("ducklaketables", NS, "orders"), "Ready").get("status") == "True")
    obj = api.get("ducklaketables", NS, "orders")
    assert obj["status"]["columns"] == [
        {"name": "id", "id": 1, "type": "int64"},
        {"name": "amount", "id": 2, "type": "int32"},
    ]
    assert obj["metadata"]["finalizers"]  # deletion is handled
    assert cond(api.get("ducklakecatalogs", NS, "lake"), "Ready")["status"] == "True"
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "lake.sqlite"))
    con = duck.attach(location)
    con.execute("INSERT INTO lk.orders VALUES (1, 10)")
    con.close()  # an idle DuckDB client keeps a SQLite lock open (SQLite is the single-node backend)
    assert any(e["reason"] == "Applied" for e in api.events_for("orders"))

    # spec change: a new column, applied in one snapshot, generation observed
    patch(
        api,
        "ducklaketables",
        "orders",
        {"spec": {"columns": table["spec"]["columns"] + [{"name": "note", "type": "varchar"}]}},
    )
    wait_for(
        "generation 2",
        lambda: (
            api.get("ducklaketables", NS, "orders")["status"].get("observedGeneration") == 2
            and cond(api.get("ducklaketables", NS, "orders"), "Ready").get("status") == "True"
        ),
    )
    fresh = duck.attach(location, con=duck.connect())
    assert [r[0] for r in fresh.execute("DESCRIBE lk.orders").fetchall()] == ["id", "amount", "note"]
    snapshots = fresh.execute("SELECT count(*) FROM ducklake_snapshots('lk')").fetchone()[0]
    fresh.close()

    # a destructive change is blocked: condition, hash, event; nothing committed; no retry loop
    patch(api, "ducklaketables", "orders", {"spec": {"columns": table["spec"]["columns"]}})
    wait_for("Blocked", lambda: cond(api.get("ducklaketables", NS, "orders"), "Blocked").get("status") == "True")
    blocked = api.get("ducklaketables", NS, "orders")
    assert blocked["status"]["pendingPlan"]["hash"] and cond(blocked, "Ready")["reason"] == "Blocked"
    assert any(e["reason"] == "Blocked" for e in api.events_for("orders"))
    time.sleep(1.5)
    check = duck.attach(location, con=duck.connect())
    assert check.execute("SELECT count(*) FROM ducklake_snapshots('lk')").fetchone()[0] == snapshots
    check.close()

    # approve it in "Git": the hash from status
    patch(
        api,
        "ducklaketables",
        "orders",
        {"spec": {"evolution": {"approvedPlan": blocked["status"]["pendingPlan"]["hash"]}}},
    )
    wait_for(
        "approved",
        lambda: (
            cond(api.get("ducklaketables", NS, "orders"), "Ready").get("reason") == "Applied"
            and api.get("ducklaketables", NS, "orders")["status"]["columnCount"] == 2
        ),
    )

    # kubectl reads the printer columns through the API
    out = subprocess.run(
        ["kubectl", "--kubeconfig", operator.kubeconfig, "get", "ducklaketables", "-n", NS],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    header, row = out.stdout.splitlines()[:2]
    assert header.split() == ["NAME", "SCHEMA", "SNAPSHOT", "COLUMNS", "FILES", "READY", "AGE"]
    # one inlined row, so no Parquet file yet
    assert row.split()[:6] == ["orders", "main", str(blocked["status"]["snapshot"] + 1), "2", "0", "True"]

    # a catalog with deletionPolicy: Delete waits for the tables that use it
    patch(api, "ducklakecatalogs", "lake", {"spec": {"deletionPolicy": "Delete"}})
    requests.delete(f"{api.url}/apis/ducklake.dev/v1alpha1/namespaces/{NS}/ducklakecatalogs/lake", timeout=10)
    wait_for("waiting", lambda: any(e["reason"] == "WaitingForDependents" for e in api.events_for("lake")))
    assert api.get("ducklakecatalogs", NS, "lake") is not None and os.path.exists(location.path)

    # deletion with deletionPolicy: Delete drops the table, then the finalizer goes
    requests.delete(f"{api.url}/apis/ducklake.dev/v1alpha1/namespaces/{NS}/ducklaketables/orders", timeout=10)
    wait_for("deleted", lambda: api.get("ducklaketables", NS, "orders") is None)
    check = duck.attach(location, con=duck.connect())
    assert check.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'lk' AND table_name = 'orders'"
    ).fetchone() == (0,)
    check.close()

    # then the catalog goes, and the lake with it
    wait_for("catalog deleted", lambda: api.get("ducklakecatalogs", NS, "lake") is None)
    assert any(e["reason"] == "Deleted" for e in api.events_for("lake"))
    assert not os.path.exists(location.path)


def test_restart_reapplies_nothing_and_drift_is_reported(api: KubeApi, operator: Operator, tmp_path) -> None:  # type: ignore[no-untyped-def]
    catalog, table = manifests(tmp_path)
    post(api, "ducklakecatalogs", catalog)
    post(api, "ducklaketables", table)
    wait_for("Ready", lambda: cond(api.get("ducklaketables", NS, "orders"), "Ready").get("status") == "True")
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "lake.sqlite"))

    def snapshots() -> int:
        con = duck.attach(location, con=duck.connect())
        try:
            return con.execute("SELECT count(*) FROM ducklake_snapshots('lk')").fetchone()[0]
        finally:
            con.close()

    before = snapshots()
    operator.stop()
    operator.start()
    time.sleep(4)  # resume handlers and timers have run
    assert snapshots() == before

    # someone runs ALTER TABLE in DuckDB: the timer reports it
    con = duck.attach(location)
    con.execute("ALTER TABLE lk.orders ADD COLUMN sneaky INTEGER")
    con.close()
    drifted = wait_for(
        "Drifted",
        lambda: (
            cond(api.get("ducklaketables", NS, "orders"), "Drifted").get("status") == "True"
            and api.get("ducklaketables", NS, "orders")
        ),
    )
    assert drifted["status"]["drift"] == ["sneaky is in the catalog but not in the manifest"]
    assert any(e["reason"] == "Drifted" for e in api.events_for("orders"))


def test_postgres_catalog_with_credentials_from_a_secret(
    api: KubeApi, operator: Operator, pg_location, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "lake-pg"},
        "data": {
            "username": base64.b64encode(b"postgres").decode(),
            "password": base64.b64encode(b"s3cret-value").decode(),
        },
    }
    post(api, "secrets", secret, group="api/v1")
    catalog = {
        "apiVersion": "ducklake.dev/v1alpha1",
        "kind": "DuckLakeCatalog",
        "metadata": {"name": "pg"},
        "spec": {
            "metadata": {
                "postgres": {
                    "host": pg_location.host,
                    "port": pg_location.port,
                    "database": pg_location.database,
                    "credentialsSecretRef": {"name": "lake-pg"},
                }
            },
            "dataPath": str(tmp_path / "pgdata") + "/",
        },
    }
    post(api, "ducklakecatalogs", catalog)
    ready = wait_for(
        "catalog Ready",
        lambda: (
            cond(api.get("ducklakecatalogs", NS, "pg"), "Ready").get("status") == "True"
            and api.get("ducklakecatalogs", NS, "pg")
        ),
    )
    assert ready["status"]["formatVersion"] == "1.0" and ready["status"]["backend"] == "postgres"
    everything = repr(ready) + repr(api.events_for("pg")) + open(tmp_path / "operator.log").read()
    assert "s3cret-value" not in everything
    con = duck.attach(pg_location)
    assert con.execute("SELECT count(*) FROM ducklake_snapshots('lk')").fetchone() == (1,)
