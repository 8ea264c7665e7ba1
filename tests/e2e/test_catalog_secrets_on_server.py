"""A catalog's Secret and the chart's Secret RBAC, with the operator process running as the
chart's service account (which may read only the Secrets ``rbac.catalogSecrets`` names): a
Secret the chart does not grant is said so on the catalog, with what grants it, and the
operator goes on; the ``helm upgrade`` that grants it makes the catalog Ready, and a rotation
of the granted Secret is then seen through the watch by name the Role allows."""

from __future__ import annotations

import json
import time

from support.manifests import manifest, table
from support.operator_process import RELEASE_NS, SERVICE_ACCOUNT, condition, is_ready, wait_for
from support.runs import secret


def rotate(pg_server, user: str, password: str) -> None:
    """The database takes a new password and drops the user's sessions."""
    conn = pg_server._superuser()
    try:
        conn.cursor().execute(f"ALTER ROLE \"{user}\" PASSWORD '{password}'")
        conn.cursor().execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (user,))
    finally:
        conn.close()


def test_a_secret_the_chart_does_not_grant_is_said_until_a_helm_upgrade_grants_it(
    kube, operator, pg_server, tmp_path
) -> None:
    user = f"sg{int(time.time() * 1000) % 10**8}"
    pg_server.create_password_role(user, "first-Pa55word")
    pg_server.create_database(user, owner=user)
    log_start, pid = len(operator.log()), operator.proc.pid
    kube.apply(secret("lake-pg", username=user, password="first-Pa55word"))
    backend = {"host": pg_server.host, "port": pg_server.port, "database": user,
               "credentialsSecretRef": {"name": "lake-pg"}}  # fmt: skip
    kube.apply(manifest("DuckLakeCatalog", "lake", {"metadata": {"postgres": backend}, "dataPath": f"{tmp_path}/d/"}),
               table("orders", "lake"))  # fmt: skip

    refused = wait_for("the refusal said", lambda: "may not read" in condition(kube.get("dlc", "lake"), "Ready")
                       .get("message", "") and kube.get("dlc", "lake"))  # fmt: skip
    ready = condition(refused, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "CredentialsInvalid")
    namespace = kube.namespace
    assert ready["message"].startswith(f"the operator may not read Secret {namespace}/lake-pg (")
    # the API server's own words name the service account; then what grants it
    assert (
        f'User "system:serviceaccount:{RELEASE_NS}:{SERVICE_ACCOUNT}" cannot get resource "secrets"' in ready["message"]
    )
    assert f"add lake-pg to rbac.catalogSecrets.{namespace}" in ready["message"]
    kube.event("lake", "CredentialsInvalid", containing="may not read Secret")
    assert not is_ready(kube.get("dlt", "orders"))

    kube.grant_secrets("lake-pg")  # helm upgrade --reuse-values --set-json rbac.catalogSecrets.<namespace>=[...]
    wait_for("the catalog Ready once granted", lambda: is_ready(kube.get("dlc", "lake")), timeout=30)
    wait_for("the table Ready", lambda: is_ready(kube.get("dlt", "orders")), timeout=15)
    assert (operator.proc.poll(), operator.proc.pid) == (None, pid)  # the same process throughout
    assert "Traceback" not in operator.log()[log_start:]

    # rotation, through the watch by name: the next connection uses the new password
    rotate(pg_server, user, "second-Pa55word")
    kube.apply(secret("lake-pg", username=user, password="second-Pa55word"))
    orders = table("orders", "lake")
    orders["spec"]["columns"].append({"name": "note", "type": "varchar"})
    kube.apply(orders)
    wait_for("the change applied with the rotated password",
             lambda: (o := kube.get("dlt", "orders"))["status"].get("columnCount") == 3 and is_ready(o), timeout=15)  # fmt: skip
    said = json.dumps(kube.get("dlc", "lake")) + json.dumps(kube.events("lake")) + operator.log()[log_start:]
    assert "first-Pa55word" not in said and "second-Pa55word" not in said
