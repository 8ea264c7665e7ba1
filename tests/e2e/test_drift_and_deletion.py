"""What happens outside the operator: a restart reapplies nothing, changes made in DuckDB are
reported (or reverted), options included, and deletions that cannot be done yet wait and say
why. Owned objects go with their owner (the controller-manager's garbage collector)."""

from __future__ import annotations

import time

from ducklake_operator.catalog import CatalogLocation
from support import duck
from support.manifests import manifest, sqlite_catalog, table
from support.operator_process import condition, is_ready, wait_for


def snapshot_ids(location: CatalogLocation) -> list[int]:
    con = duck.attach(location, con=duck.connect())
    try:
        return [r[0] for r in con.execute("SELECT snapshot_id FROM ducklake_snapshots('lk') ORDER BY 1").fetchall()]
    finally:
        con.close()


def test_restart_reapplies_nothing_and_outside_changes_are_reported(kube, operator, tmp_path) -> None:
    kube.apply(sqlite_catalog("lake", str(tmp_path)), table("orders", "lake", options={"targetFileSize": "64MB"}))
    wait_for("Ready", lambda: is_ready(kube.get("dlt", "orders")))
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "lake.sqlite"))
    before = snapshot_ids(location)
    operator.restart()
    # the point is what does NOT happen (no reapply, no false drift): nothing to wait for but
    # time; long enough for the restarted operator to resume and its drift timer (2 s) to tick
    time.sleep(5)
    assert snapshot_ids(location) == before
    assert condition(kube.get("dlt", "orders"), "Drifted").get("status") == "False"  # options too: no false drift

    duck.run_workload(location, ["ALTER TABLE lk.orders ADD COLUMN sneaky INTEGER"])
    drifted = wait_for(
        "Drifted", lambda: condition(o := kube.get("dlt", "orders"), "Drifted").get("status") == "True" and o
    )
    assert drifted["status"]["drift"] == ["sneaky is in the catalog but not in the manifest"]
    kube.event("orders", "Drifted")
    time.sleep(4)  # the point: two more drift ticks (2 s) post no second event
    assert sum(e["reason"] == "Drifted" for e in kube.events("orders")) == 1


def test_an_option_set_in_duckdb_is_drift_and_revert_undoes_it_once(kube, operator, tmp_path) -> None:
    orders = table("orders", "lake", options={"targetFileSize": "64MB"}, evolution={"onDrift": "revert"})
    kube.apply(sqlite_catalog("lake", str(tmp_path)), orders)
    wait_for("Ready", lambda: is_ready(kube.get("dlt", "orders")))
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "lake.sqlite"))
    duck.run_workload(location, ["CALL lk.set_option('target_file_size', '1MB', table_name => 'orders')"])
    wait_for("reverted", lambda: any(e["reason"] == "DriftReverted" for e in kube.events("orders")))
    con = duck.attach(location, con=duck.connect())
    options = dict(con.execute("SELECT option_name, value FROM lk.options() WHERE scope = 'TABLE'").fetchall())
    con.close()
    assert options.get("target_file_size") in ("64MB", str(64 * 1000 * 1000), str(64 * 1024 * 1024))
    reverted = snapshot_ids(location)
    time.sleep(5)  # the point: the timer (2 s) keeps ticking and reverts nothing more
    assert snapshot_ids(location) == reverted
    assert sum(e["reason"] == "DriftReverted" for e in kube.events("orders")) == 1


def test_a_schema_with_tables_made_outside_waits_and_says_why(kube, operator, tmp_path) -> None:
    kube.apply(
        sqlite_catalog("lake", str(tmp_path)),
        manifest(
            "DuckLakeSchema", "sales", {"catalogRef": {"name": "lake"}, "name": "sales", "deletionPolicy": "Delete"}
        ),
    )
    wait_for("Ready", lambda: is_ready(kube.get("dls", "sales")))
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "lake.sqlite"))
    duck.run_workload(location, ["CREATE TABLE lk.sales.made_in_duckdb (i INTEGER)"])
    kube.delete("dls", "sales")
    blocked = wait_for(
        "blocked", lambda: condition(o := kube.get("dls", "sales"), "Ready").get("reason") == "DeletionBlocked" and o
    )
    assert "made_in_duckdb" in condition(blocked, "Ready")["message"]
    kube.event("sales", "DeletionBlocked")
    time.sleep(3)  # the point: the deletion does not go ahead while the tables remain
    assert kube.get("dls", "sales") is not None  # the finalizer stays: nothing was silently skipped

    duck.run_workload(location, ["DROP TABLE lk.sales.made_in_duckdb"])
    wait_for("schema dropped and resource gone", lambda: kube.get("dls", "sales") is None, timeout=45)
    con = duck.attach(location, con=duck.connect())
    assert con.execute(
        "SELECT count(*) FROM duckdb_schemas() WHERE database_name = 'lk' AND schema_name = 'sales'"
    ).fetchone() == (0,)
    con.close()


def test_owned_objects_go_with_their_owner(kube, operator) -> None:
    """The garbage collector of the real controller-manager deletes a DuckLakeJob whose owner
    (its policy) is deleted: the ownership maintenance runs rely on."""
    policy = manifest(
        "DuckLakeMaintenancePolicy", "nightly", {"catalogRef": {"name": "lake"}, "tables": ["main.orders"]}
    )
    kube.apply(policy)
    uid = kube.get("dlmp", "nightly")["metadata"]["uid"]
    owner = {"apiVersion": "ducklake.dev/v1alpha1", "kind": "DuckLakeMaintenancePolicy", "name": "nightly", "uid": uid,
             "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    job = manifest("DuckLakeJob", "run-1", {"catalogRef": {"name": "lake"}, "table": "main.orders", "operation": "compact"},
                   ownerReferences=[owner])  # fmt: skip
    kube.apply(job)
    assert kube.get("dlj", "run-1") is not None
    kube.delete("dlmp", "nightly")
    wait_for("owned job collected", lambda: kube.get("dlj", "run-1") is None, timeout=60)
