"""DuckLakeJob runs launched as a ``batch/v1`` Job or a Kubeflow SparkApplication by the
operator process, on the real API server with the SparkApplication CRD installed. There is
no kubelet (and no Spark Operator): the Job's pod is created by the job controller but never
scheduled, and nothing submits the SparkApplication. So the objects are checked as the
server accepted them, and their status is driven with ``kubectl patch --subresource=status``
as the job controller and the Spark Operator would write it; the DuckLakeJob follows."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

from support.manifests import table
from support.operator_process import condition, is_ready, wait_for
from support.runs import PG_PASSWORD, ended, job, pg_lake, small_files_lake, state
from support.spark_operator import SPARK_APPLICATION_CRD, install_spark_application_crd

IMAGE = "registry.example/ducklake-operator:0.1.0"


def launched(kube, name: str, attempt: int) -> dict[str, Any]:
    def current() -> dict[str, Any] | None:
        status = (kube.get("dlj", name) or {}).get("status") or {}
        ok = status.get("state") == "Running" and status.get("attempts") == attempt
        return status["launched"] if ok else None

    return wait_for(f"{name} attempt {attempt} launched", current, timeout=60)


def patch_status(kube, kind: str, name: str, status: dict[str, Any]) -> None:
    kube.kubectl("patch", kind, name, "--subresource=status", "--type=merge", "-p", json.dumps({"status": status}))


def finish_job(kube, name: str, ok: bool) -> None:
    """The finished Job as the job controller writes it (the server checks the conditions)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if ok:
        conditions = [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]
    else:
        conditions = [{"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded"},
                      {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                       "message": "Job has reached the specified backoff limit"}]  # fmt: skip
    stamped = [{**c, "lastProbeTime": now, "lastTransitionTime": now} for c in conditions]
    patch_status(kube, "job", name, {"conditions": stamped, "active": 0, "ready": 0,
                                     **({"completionTime": now} if ok else {})})  # fmt: skip


def stamp_time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def owned_by(obj: dict[str, Any], run: dict[str, Any]) -> bool:
    return [o["uid"] for o in obj["metadata"].get("ownerReferences") or []] == [run["metadata"]["uid"]]


def test_a_run_as_a_batch_job_is_retried_then_succeeds_and_its_objects_go_with_it(
    kube, operator, pg_server, tmp_path
) -> None:
    pg_lake(kube, pg_server, tmp_path)
    kube.apply(job("by-job", retries=1, timeout="30m", spark={"launcher": "Job", "image": IMAGE,
                                                               "driver": {"cores": 2, "memory": "2g"}}))  # fmt: skip
    first = launched(kube, "by-job", 1)
    run = kube.get("dlj", "by-job")
    batch = kube.get("job", first["name"])
    assert first["kind"] == "Job" and owned_by(batch, run) and owned_by(kube.get("configmap", first["name"]), run)
    pod = batch["spec"]["template"]["spec"]
    driver = pod["containers"][0]
    assert driver["image"] == IMAGE and batch["spec"]["backoffLimit"] == 0
    assert batch["spec"]["activeDeadlineSeconds"] == 1800
    refs = {
        e["name"]: e["valueFrom"]["secretKeyRef"] for e in driver["env"] if "secretKeyRef" in e.get("valueFrom", {})
    }
    assert refs == {"DUCKLAKE_CATALOG_USERNAME": {"name": "lake-pg", "key": "username"},
                    "DUCKLAKE_CATALOG_PASSWORD": {"name": "lake-pg", "key": "password"}}  # fmt: skip
    wait_for("the job controller's pod", lambda: kube.list("pods"))
    finish_job(kube, first["name"], ok=False)
    second = launched(kube, "by-job", 2)  # nothing landed: tried again (backoff 1 s in the test operator)
    assert second["name"] != first["name"]
    # the timeout bounds the whole run: the retry's Job gets what is left of it
    retry, started = kube.get("job", second["name"]), kube.get("dlj", "by-job")["status"]["startTime"]
    spent = (stamp_time(retry["metadata"]["creationTimestamp"]) - stamp_time(started)).total_seconds()
    assert 1800 - spent - 2 <= retry["spec"]["activeDeadlineSeconds"] < 1800  # the backoff alone took 1 s
    events = kube.events("by-job")
    assert any(e["reason"] == "AttemptFailed" and "Job has reached the specified backoff limit" in e["message"]
               for e in events)  # fmt: skip
    # the program reports to the run's status, then its pod ends
    patch_status(kube, "dlj", "by-job", {"progress": "writing 1/1 file groups",
                                         "jobReport": {"state": "Succeeded", "report": {"ranOn": "spark"},
                                                       "message": "compact main.orders: nothing to do"}})  # fmt: skip
    finish_job(kube, second["name"], ok=True)
    status = ended(kube, "by-job")["status"]
    assert status["state"] == "Succeeded" and status["attempts"] == 2 and status["ranOn"] == "spark"
    assert status["message"] == "compact main.orders: nothing to do"  # the program's own words
    text = kube.kubectl("get", "jobs,configmaps,pods,ducklakejobs,events", "-o", "json") + operator.log()
    assert PG_PASSWORD not in text and base64.b64encode(PG_PASSWORD.encode()).decode() not in text
    kube.delete("dlj", "by-job")  # ended: no finalizer; the garbage collector takes what it launched

    def collected() -> bool:
        left = json.loads(kube.kubectl("get", "jobs,configmaps,pods", "-o", "json"))["items"]
        return not [o for o in left if o["metadata"].get("labels", {}).get("ducklake.dev/job") == "by-job"]

    wait_for("its objects collected", collected, timeout=120, interval=1)


def test_a_run_as_a_spark_application_follows_its_state(
    kube, operator, pg_server, tmp_path, spark_application_crd
) -> None:
    pg_lake(kube, pg_server, tmp_path)
    spark = {"launcher": "SparkApplication", "image": IMAGE, "executor": {"instances": 2, "memory": "3g"}}
    kube.apply(table("items", "lake"), table("users", "lake"))  # one run per table at a time: three tables
    wait_for("tables Ready", lambda: all(is_ready(kube.get("dlt", t)) for t in ("items", "users")), timeout=30)
    kube.apply(job("failing", spark=spark), job("completing", "compact", "main.items", spark=spark),
               job("cancelled", "compact", "main.users", spark=spark))  # fmt: skip
    for name in ("failing", "completing", "cancelled"):
        app = kube.get("sparkapplication", launched(kube, name, 1)["name"])
        assert app["spec"]["mode"] == "cluster" and app["spec"]["type"] == "Python"
        assert app["spec"]["restartPolicy"] == {"type": "Never"} and app["spec"]["executor"]["instances"] == 2
        assert owned_by(app, kube.get("dlj", name))
    patch_status(kube, "sparkapplication", launched(kube, "failing", 1)["name"],
                 {"applicationState": {"state": "FAILED", "errorMessage": "driver container failed with ExitCode: 1"}, "driverInfo": {}})  # fmt: skip
    patch_status(kube, "sparkapplication", launched(kube, "completing", 1)["name"],
                 {"applicationState": {"state": "COMPLETED"}, "driverInfo": {}})  # fmt: skip
    failed = ended(kube, "failing")
    assert failed["status"]["state"] == "Failed" and condition(failed, "Failed")["status"] == "True"
    assert "FAILED: driver container failed with ExitCode: 1; nothing was committed" in failed["status"]["message"]
    assert ended(kube, "completing")["status"]["state"] == "Succeeded"
    name = launched(kube, "cancelled", 1)["name"]
    kube.kubectl("patch", "dlj", "cancelled", "--type=merge", "-p", '{"spec": {"cancel": true}}')
    assert ended(kube, "cancelled")["status"]["state"] == "Cancelled"
    wait_for("the application deleted", lambda: kube.get("sparkapplication", name) is None)
    assert state(kube, "completing") == "Succeeded" and kube.list("leases") == []


def test_a_spark_application_run_without_the_spark_operator_fails_and_launches_nothing(
    kube, operator, cluster, tmp_path
) -> None:
    """The Spark Operator's CRD is taken away for this test (and put back after)."""
    small_files_lake(kube, tmp_path, inserts=1)
    cluster.kubectl("delete", "crd", SPARK_APPLICATION_CRD, "--ignore-not-found", "--wait=true")
    try:
        kube.apply(job("nowhere", spark={"launcher": "SparkApplication", "image": IMAGE}))
        status = ended(kube, "nowhere")["status"]
    finally:
        install_spark_application_crd(cluster)
    assert status["state"] == "Failed" and "launched" not in status
    assert (
        "the Kubeflow Spark Operator is not installed (no sparkapplications.sparkoperator.k8s.io)"
        in (status["message"])
    )
    assert [c["metadata"]["name"] for c in kube.list("configmaps")] in ([], ["kube-root-ca.crt"])
