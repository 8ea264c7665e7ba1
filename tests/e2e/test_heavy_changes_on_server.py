"""Heavy-weight type changes through the operator on the real API server: a manifest change
that is not a lossless promotion, under ``typeChanges: rewrite``, runs as a DuckLakeJob owned
by the table (the test operator's runs default to the Local launcher); the table shows it
while it runs, and DuckDB 1.5.5 reads the new type once it has landed. A value that does not
convert fails the job, changes nothing, and the table says why. Several type changes with
other changes are one DuckLakeJob (the table as its manifest) and one snapshot."""

from __future__ import annotations

import datetime
from typing import Any

from ducklake_operator.catalog import CatalogLocation
from support import duck
from support.manifests import sqlite_catalog, table
from support.operator_process import condition, is_ready, wait_for
from support.runs import ended


def coded(name: str, code_type: str) -> dict[str, Any]:
    return table(name, "lake", columns=[{"name": "id", "type": "int64"}, {"name": "code", "type": code_type}],
                 evolution={"typeChanges": "rewrite"})  # fmt: skip


def code_type(location: CatalogLocation, name: str) -> str:
    con = duck.attach(location, con=duck.connect())
    try:
        return str(duck.scalar(con, f"SELECT data_type FROM duckdb_columns() WHERE table_name = '{name}' "
                                    "AND column_name = 'code' AND database_name = 'lk'"))  # fmt: skip
    finally:
        con.close()


def test_a_type_change_that_needs_a_rewrite_runs_as_a_job_of_the_table(kube, operator, tmp_path) -> None:
    kube.apply(sqlite_catalog("lake", str(tmp_path)), coded("orders", "varchar"), coded("bad", "varchar"))
    wait_for("tables Ready", lambda: all(is_ready(kube.get("dlt", t)) for t in ("orders", "bad")), timeout=30)
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "lake.sqlite"))
    duck.run_workload(location, ["INSERT INTO lk.orders SELECT i, (i * 7)::VARCHAR FROM range(100) t(i)",
                                 "INSERT INTO lk.bad VALUES (1, '12'), (2, 'twelve')"])  # fmt: skip

    kube.apply(coded("orders", "int64"), coded("bad", "int64"))
    rewriting = wait_for("Rewriting", lambda: condition(kube.get("dlt", "orders"), "Progressing").get("reason")
                         == "Rewriting" and kube.get("dlt", "orders"))  # fmt: skip
    job_name = rewriting["status"]["heavyJob"]["name"]
    assert condition(rewriting, "Ready")["status"] == "False" and job_name in condition(rewriting, "Ready")["message"]
    run = kube.get("dlj", job_name)
    assert run["spec"]["operation"] == "rewriteColumnType" and run["spec"]["table"] == "main.orders"
    assert run["spec"]["params"] == {"column": "code", "type": "int64", "onCastError": "fail"}
    assert [o["uid"] for o in run["metadata"]["ownerReferences"]] == [rewriting["metadata"]["uid"]]

    wait_for("Ready with the new type", lambda: is_ready(kube.get("dlt", "orders")), timeout=120)
    done = kube.get("dlt", "orders")
    assert {c["name"]: c["type"] for c in done["status"]["columns"]}["code"] == "int64"
    assert not done["status"].get("heavyJob")
    assert ended(kube, job_name)["status"]["state"] == "Succeeded"
    assert code_type(location, "orders") == "BIGINT"
    con = duck.attach(location, con=duck.connect())
    assert duck.scalar(con, "SELECT sum(code) FROM lk.orders") == sum(i * 7 for i in range(100))
    con.close()

    # 'twelve' is no int64: the job fails with the value and its row id, the table says so, nothing changed
    failed = wait_for("RewriteFailed", lambda: condition(kube.get("dlt", "bad"), "Ready").get("reason")
                      == "RewriteFailed" and kube.get("dlt", "bad"))  # fmt: skip
    message = condition(failed, "Ready")["message"]
    assert "twelve" in message and "onCastError: null" in message
    assert condition(failed, "Progressing")["status"] == "False"
    assert code_type(location, "bad") == "VARCHAR"
    kube.event("bad", "RewriteFailed")

    # the way out the message names: onCastError "null" (quoted: kubectl apply reads a bare null as "unset")
    fixed = coded("bad", "int64")
    fixed["spec"]["evolution"]["onCastError"] = "null"
    kube.apply(fixed)
    wait_for("Ready after NULLs", lambda: is_ready(kube.get("dlt", "bad")), timeout=120)
    assert code_type(location, "bad") == "BIGINT"
    con = duck.attach(location, con=duck.connect())
    assert con.execute("SELECT id, code FROM lk.bad ORDER BY id").fetchall() == [(1, 12), (2, None)]
    con.close()


def test_several_type_changes_and_an_added_column_are_one_job_and_one_snapshot(kube, operator, tmp_path) -> None:
    columns = [{"name": "id", "type": "int64"}, {"name": "code", "type": "varchar"}, {"name": "day", "type": "varchar"}]
    kube.apply(sqlite_catalog("lake", str(tmp_path)), table("multi", "lake", columns=columns,
                                                             evolution={"typeChanges": "rewrite"}))  # fmt: skip
    wait_for("table Ready", lambda: is_ready(kube.get("dlt", "multi")), timeout=30)
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "lake.sqlite"))
    duck.run_workload(location, ["INSERT INTO lk.multi SELECT i, (i * 7)::VARCHAR, '2024-01-0' || (i % 9 + 1) "
                                 "FROM range(50) t(i)"])  # fmt: skip
    con = duck.attach(location, con=duck.connect())
    before = duck.scalar(con, "SELECT max(snapshot_id) FROM ducklake_snapshots('lk')")
    con.close()

    declared = [columns[0], {"name": "code", "type": "int64"}, {"name": "day", "type": "date"},
                {"name": "note", "type": "varchar"}]  # fmt: skip
    kube.apply(table("multi", "lake", columns=declared, evolution={"typeChanges": "rewrite"}))
    rewriting = wait_for("Rewriting", lambda: condition(kube.get("dlt", "multi"), "Progressing").get("reason")
                         == "Rewriting" and kube.get("dlt", "multi"))  # fmt: skip
    run = kube.get("dlj", rewriting["status"]["heavyJob"]["name"])
    params = run["spec"]["params"]
    assert params["columns"] == {"code": "int64", "day": "date"} and params["onCastError"] == "fail"
    manifest = params["manifest"]  # the table as the API server holds it (with its defaults)
    assert manifest["kind"] == "DuckLakeTable" and manifest["metadata"]["name"] == "multi"
    assert [(c["name"], c["type"]) for c in manifest["spec"]["columns"]] == [(c["name"], c["type"]) for c in declared]
    wait_for("Ready with the new types", lambda: is_ready(kube.get("dlt", "multi")), timeout=120)
    assert ended(kube, run["metadata"]["name"])["status"]["state"] == "Succeeded"
    assert len([j for j in kube.list("dlj") if j["metadata"]["name"].startswith("multi-")]) == 1

    con = duck.attach(location, con=duck.connect())
    snapshots = [r[0] for r in con.execute("SELECT snapshot_id FROM ducklake_snapshots('lk') WHERE snapshot_id > ? "
                                           "AND changes::VARCHAR LIKE '%tables_altered%'", [before]).fetchall()]  # fmt: skip
    assert len(snapshots) == 1  # the types and the column together
    assert [r[:2] for r in con.execute("DESCRIBE lk.multi").fetchall()] == [
        ("id", "BIGINT"), ("code", "BIGINT"), ("day", "DATE"), ("note", "VARCHAR")]  # fmt: skip
    assert con.execute("SELECT sum(code), min(day), count(note) FROM lk.multi").fetchone() == (
        sum(i * 7 for i in range(50)), datetime.date(2024, 1, 1), 0)  # fmt: skip
    con.close()
