"""The operator as users run it: installed by ``helm install`` with the image built from the
Dockerfile, its pod Ready by its probes, running as the non-root user with a read-only root
filesystem, talking to the API server with in-cluster config as the chart's service
account, reconciling a PostgreSQL catalog whose password is only in a Secret, and its
metrics scraped through the chart's Service from another pod."""

from __future__ import annotations

import json

from support import duck
from support.manifests import table
from support.operator_process import RELEASE, RELEASE_NS, is_ready, wait_for
from support.pod_env import PodEnv


def test_the_operator_pod_reconciles_a_catalog_with_its_password_in_a_secret(pods: PodEnv, kube) -> None:
    pod = pods.wait_operator_ready()
    spec = pod["spec"]
    container = spec["containers"][0]
    assert spec["serviceAccountName"] == f"{RELEASE}-ducklake-operator"
    assert spec["securityContext"]["runAsNonRoot"] and spec["securityContext"]["runAsUser"] == 10001
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["image"] == pods.image.ref
    statuses = pod["status"]["containerStatuses"]
    assert statuses[0]["ready"] and statuses[0]["restartCount"] == 0

    location = pods.lake(kube)  # Ready: the operator connected with the Secret's password
    kube.apply(table("orders", "lake"))
    wait_for("table Ready", lambda: is_ready(kube.get("dlt", "orders")), timeout=60)
    con = pods.duckdb(location)
    try:
        assert duck.scalar(con, "SELECT count(*) FROM lk.orders") == 0
    finally:
        con.close()

    # no credential in the pod's spec or in the operator's log
    text = json.dumps(pod) + pods.operator_log()
    assert "Node-Pa55word" not in text and "test-secret" not in text


def test_the_metrics_are_scraped_through_the_service_from_another_pod(pods: PodEnv, kube) -> None:
    service = json.loads(
        pods.cluster.kubectl("-n", RELEASE_NS, "get", "service", f"{RELEASE}-ducklake-operator-metrics", "-o", "json")
    )
    ip, port = service["spec"]["clusterIP"], service["spec"]["ports"][0]["port"]
    script = f"import urllib.request; print(urllib.request.urlopen('http://{ip}:{port}/metrics', timeout=10).read().decode())"
    kube.kubectl(
        "run", "scraper", f"--image={pods.image.ref}", "--image-pull-policy=Never", "--restart=Never",
        "--command", "--", "python", "-c", script,
    )  # fmt: skip
    wait_for(
        "the scraper to finish",
        lambda: (kube.get("pod", "scraper") or {}).get("status", {}).get("phase") in ("Succeeded", "Failed"),
        timeout=120,
        interval=0.5,
    )
    assert kube.get("pod", "scraper")["status"]["phase"] == "Succeeded", kube.kubectl("logs", "scraper", check=False)
    metrics = kube.kubectl("logs", "scraper")
    assert "ducklake_" in metrics and "# TYPE" in metrics
