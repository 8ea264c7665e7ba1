"""Catalogs, schemas and tables driven by kubectl on a real API server; effects read from the
catalog with DuckDB, status and events as kubectl shows them."""

from __future__ import annotations

import os
import time

from ducklake_operator.catalog import CatalogLocation
from support import duck
from support.manifests import manifest, sqlite_catalog, table
from support.operator_process import condition, is_ready, wait_for


def snapshots(location: CatalogLocation) -> int:
    con = duck.attach(location, con=duck.connect())
    try:
        return duck.scalar(con, "SELECT count(*) FROM ducklake_snapshots('lk')")
    finally:
        con.close()  # an idle DuckDB client keeps a SQLite lock open (SQLite is the single-node backend)


def test_table_lifecycle(kube, operator, tmp_path) -> None:
    orders = table("orders", "lake", deletionPolicy="Delete")
    kube.apply(orders)  # before its catalog: it waits and says so
    wait_for(
        "CatalogNotFound", lambda: condition(kube.get("dlt", "orders"), "Ready").get("reason") == "CatalogNotFound"
    )
    kube.apply(sqlite_catalog("lake", str(tmp_path)))
    wait_for("table Ready", lambda: is_ready(kube.get("dlt", "orders")), timeout=15)
    obj = kube.get("dlt", "orders")
    assert obj["status"]["columns"] == [
        {"name": "id", "id": 1, "type": "int64"},
        {"name": "amount", "id": 2, "type": "int32"},
    ]
    assert obj["metadata"]["finalizers"]
    assert is_ready(kube.get("dlc", "lake"))
    path = str(tmp_path / "lake.sqlite")
    location = CatalogLocation(kind="sqlite", path=path)
    duck.run_workload(location, ["INSERT INTO lk.orders VALUES (1, 10)"])
    kube.event("orders", "Applied")

    # a new column: one snapshot, generation observed
    orders["spec"]["columns"].append({"name": "note", "type": "varchar"})
    kube.apply(orders)
    wait_for(
        "generation 2",
        lambda: (o := kube.get("dlt", "orders"))["status"].get("observedGeneration") == 2 and is_ready(o),
    )
    con = duck.attach(location, con=duck.connect())
    assert [r[0] for r in con.execute("DESCRIBE lk.orders").fetchall()] == ["id", "amount", "note"]
    con.close()
    before = snapshots(location)

    # a destructive change is blocked: condition, hash, event; nothing committed; no retry loop
    orders["spec"]["columns"].pop()
    kube.apply(orders)
    wait_for("Blocked", lambda: condition(kube.get("dlt", "orders"), "Blocked").get("status") == "True")
    blocked = kube.get("dlt", "orders")
    assert blocked["status"]["pendingPlan"]["hash"] and condition(blocked, "Ready")["reason"] == "Blocked"
    assert blocked["status"]["blockedChanges"][0]["allow"]
    kube.event("orders", "Blocked")
    time.sleep(1.5)  # the point: no retry loop commits it a while later
    assert snapshots(location) == before

    # approved in Git with the hash from status
    orders["spec"]["evolution"] = {"approvedPlan": blocked["status"]["pendingPlan"]["hash"]}
    kube.apply(orders)
    wait_for("approved", lambda: (o := kube.get("dlt", "orders"))["status"]["columnCount"] == 2 and is_ready(o))

    # kubectl get and describe read like a user expects
    header, row = kube.kubectl("get", "ducklaketables").splitlines()[:2]
    assert header.split() == ["NAME", "SCHEMA", "SNAPSHOT", "COLUMNS", "FILES", "READY", "AGE"]
    assert row.split()[:6] == ["orders", "main", str(before), "2", "0", "True"]  # snapshot ids count from 0
    described = kube.kubectl("describe", "ducklaketable", "orders")
    assert "Applied" in described and "Blocked" in described and "Conditions:" in described

    # a catalog with deletionPolicy: Delete waits for the tables that use it
    kube.apply(sqlite_catalog("lake", str(tmp_path), deletionPolicy="Delete"))
    kube.delete("dlc", "lake")
    wait_for("waiting", lambda: any(e["reason"] == "WaitingForDependents" for e in kube.events("lake")))
    assert kube.get("dlc", "lake") is not None and os.path.exists(path)

    # the table goes first (deletionPolicy: Delete drops it), then the catalog and the lake
    kube.delete("dlt", "orders")
    wait_for("table deleted", lambda: kube.get("dlt", "orders") is None)
    wait_for("catalog deleted", lambda: kube.get("dlc", "lake") is None, timeout=30)
    kube.event("lake", "Deleted")
    assert not os.path.exists(path)


def test_schema_and_tables_with_their_new_catalog(kube, operator, tmp_path) -> None:
    """One `kubectl apply` of a folder: catalog, schema and tables arrive together and
    converge in seconds, not after a fixed retry delay."""
    docs = [sqlite_catalog("lake", str(tmp_path))]
    docs.append(manifest("DuckLakeSchema", "sales", {"catalogRef": {"name": "lake"}, "name": "sales"}))
    docs += [table(f"t{i}", "lake", schema="sales") for i in range(5)]
    start = time.time()
    kube.apply(*reversed(docs))  # dependents first: the worst order
    wait_for("all Ready", lambda: all(is_ready(o) for o in kube.list("dlt") + kube.list("dls")), timeout=30)
    assert time.time() - start < 10
