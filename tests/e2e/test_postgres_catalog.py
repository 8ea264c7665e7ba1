"""A PostgreSQL catalog with its credentials in a Secret, on the real API server: secrets
never leak, a missing key is named, a rotated password is picked up, an outage ends seconds
after the database returns, and a folder applied at once converges in seconds."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest

from support.manifests import manifest, table
from support.operator_process import condition, is_ready, wait_for
from support.tcp_switch import TcpSwitch


def secret(name: str, **data: str) -> dict[str, Any]:
    encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": encoded}


def pg_catalog(name: str, pg_server, database: str, tmp_path, port: int | None = None, **ref: str) -> dict[str, Any]:
    backend = {"host": pg_server.host, "port": port or pg_server.port, "database": database,
               "credentialsSecretRef": {"name": f"{name}-pg", **ref}}  # fmt: skip
    return manifest("DuckLakeCatalog", name, {"metadata": {"postgres": backend}, "dataPath": f"{tmp_path}/{name}/"})


@pytest.fixture(autouse=True)
def granted(kube) -> None:
    """Every catalog here names the Secret lake-pg: the chart lets the operator read it."""
    kube.grant_secrets("lake-pg")


@pytest.fixture
def role(pg_server) -> tuple[str, str]:
    name = f"op{int(time.time() * 1000) % 10**8}"
    pg_server.create_password_role(name, "first-Pa55word")
    return name, "first-Pa55word"


def everything_said(kube, operator, name: str) -> str:
    return json.dumps(kube.get("dlc", name)) + json.dumps(kube.events(name)) + operator.log()


def test_wrong_password_is_said_without_the_password(kube, operator, pg_server, role, tmp_path) -> None:
    user, password = role
    pg_server.create_database("wrongpw", owner=user)
    kube.apply(secret("lake-pg", username=user, password="not-the-Pa55word"))
    kube.apply(pg_catalog("lake", pg_server, "wrongpw", tmp_path))
    failed = wait_for("unreachable", lambda: condition(kube.get("dlc", "lake"), "Ready").get("reason") == "CatalogUnreachable"
                      and kube.get("dlc", "lake"))  # fmt: skip
    assert "authentication failed" in condition(failed, "Ready")["message"]
    kube.event("lake", "CatalogUnreachable")
    said = everything_said(kube, operator, "lake")
    assert "not-the-Pa55word" not in said and password not in said

    kube.apply(secret("lake-pg", username=user, password=password))  # fixed: the watch picks it up
    wait_for("Ready", lambda: is_ready(kube.get("dlc", "lake")), timeout=15)
    assert password not in everything_said(kube, operator, "lake")


def test_missing_key_is_named_and_a_rotated_password_is_used(kube, operator, pg_server, role, tmp_path) -> None:
    user, password = role
    pg_server.create_database("rotate", owner=user)
    kube.apply(secret("lake-pg", user=user))  # no "password" key, and the user key is named "user"
    kube.apply(pg_catalog("lake", pg_server, "rotate", tmp_path, usernameKey="user"))
    missing = wait_for("CredentialsInvalid", lambda: condition(kube.get("dlc", "lake"), "Ready").get("reason")
                       == "CredentialsInvalid" and kube.get("dlc", "lake"))  # fmt: skip
    message = condition(missing, "Ready")["message"]
    assert f"Secret {kube.namespace}/lake-pg has no key 'password'" in message and "(it has: user)" in message

    kube.apply(secret("lake-pg", user=user, password=password))
    wait_for("Ready", lambda: is_ready(kube.get("dlc", "lake")), timeout=15)

    # rotation: the database takes a new password and drops the sessions; the Secret follows
    conn = pg_server._superuser()
    conn.cursor().execute(f"ALTER ROLE \"{user}\" PASSWORD 'second-Pa55word'")
    conn.cursor().execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (user,))
    conn.close()
    kube.apply(secret("lake-pg", user=user, password="second-Pa55word"))
    kube.apply(table("orders", "lake"))
    wait_for("table Ready with the new password", lambda: is_ready(kube.get("dlt", "orders")), timeout=15)
    assert "second-Pa55word" not in everything_said(kube, operator, "lake") + operator.log()


def test_an_outage_ends_seconds_after_the_database_returns(kube, operator, pg_server, tmp_path) -> None:
    pg_server.create_database("outage")
    switch = TcpSwitch(pg_server.host, pg_server.port)
    try:
        kube.apply(secret("lake-pg", username=pg_server.user, password="unused"))
        kube.apply(pg_catalog("lake", pg_server, "outage", tmp_path, port=switch.port))
        orders = table("orders", "lake")
        kube.apply(orders)
        wait_for("Ready", lambda: is_ready(kube.get("dlt", "orders")), timeout=15)

        switch.off()
        orders["spec"]["columns"].append({"name": "note", "type": "varchar"})
        kube.apply(orders)
        wait_for(
            "unreachable", lambda: condition(kube.get("dlt", "orders"), "Ready").get("reason") == "CatalogUnreachable"
        )
        time.sleep(3)  # the point: a while down, so the waiting handler's heartbeat has grown
        back = time.time()
        switch.on()
        wait_for("Ready again", lambda: (o := kube.get("dlt", "orders"))["status"]["columnCount"] == 3 and is_ready(o),
                 timeout=30)  # fmt: skip
        assert time.time() - back < 5
    finally:
        switch.off()


def test_a_folder_of_a_catalog_a_schema_and_50_tables_converges(kube, operator, pg_server, tmp_path) -> None:
    pg_server.create_database("folder")
    docs = [
        secret("lake-pg", username=pg_server.user, password="unused"),
        pg_catalog("lake", pg_server, "folder", tmp_path),
    ]
    docs.append(manifest("DuckLakeSchema", "sales", {"catalogRef": {"name": "lake"}, "name": "sales"}))
    docs += [table(f"t{i:02}", "lake", schema="sales") for i in range(50)]
    kube.apply(*reversed(docs))  # GitOps applies in any order; dependents first is the worst
    # a dependent that came first is retried when its parent is Ready, not after a backoff of
    # a minute; how fast is bench/reconcile.py's (a bound in seconds here failed on a loaded CI machine)
    wait_for("all Ready", lambda: sum(is_ready(o) for o in kube.list("dlt")) == 50, timeout=30, interval=0.25)
