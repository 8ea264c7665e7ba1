"""DuckLakeJob runs launched as a ``batch/v1`` Job or a Kubeflow SparkApplication by the
operator process, on the real API server with the SparkApplication CRD installed. There is
no kubelet (and no Spark Operator): the Job's pod is created by the job controller but never
scheduled, and nothing submits the SparkApplication. So the objects are checked as the
server accepted them, and their status is driven with ``kubectl patch --subresource=status``
as the job controller, the Spark Operator, the scheduler and the kubelet would write it (a pod
is bound to a node as the scheduler binds it; ``support.pod_states``); the DuckLakeJob follows.
A pod bound to a node that has no kubelet is never deleted, only marked for deletion: what a
node whose kubelet stopped does to a run."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

from ducklake_operator.controller.launchers.spec import object_name
from support.manifests import table
from support.operator_process import condition, is_ready, wait_for
from support.pod_states import NEVER_PULLED, bind, oom_killed, patch_pod_status, scheduled, unschedulable, waiting
from support.runs import PG_PASSWORD, cancel, data_files, ended, job, pg_lake, small_files_lake, state
from support.spark_operator import SPARK_APPLICATION_CRD, install_spark_application_crd
from support.webhooks import install_refusing_webhook

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
    cancel(kube, "cancelled")
    assert ended(kube, "cancelled")["status"]["state"] == "Cancelled"
    wait_for("the application deleted", lambda: kube.get("sparkapplication", name) is None)
    assert state(kube, "completing") == "Succeeded" and kube.list("leases") == []


def test_a_spark_application_run_without_the_spark_operator_fails_and_the_next_launches_once_it_is_there(
    kube, operator, cluster, tmp_path
) -> None:
    """The Spark Operator's CRD is taken away for this test, then put back: the next run
    launches at once (the operator asks the API server again, it does not go on believing
    what it found a moment ago)."""
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
    kube.apply(job("there", spark={"launcher": "SparkApplication", "image": IMAGE}))
    status = wait_for("the next run launched or ended", lambda: (
        s if (s := (kube.get("dlj", "there") or {}).get("status") or {}).get("state") in ("Running", "Failed") else None))  # fmt: skip
    assert status["state"] == "Running", status["message"]
    cancel(kube, "there")
    assert ended(kube, "there")["status"]["state"] == "Cancelled"


def driver_pod(kube, batch: str) -> str:
    """The name of the pod the job controller made for the Job ``batch``."""
    pods = wait_for(f"the pod of Job {batch}", lambda: [p for p in kube.list("pods")
                                                        if p["metadata"]["labels"].get("job-name") == batch])  # fmt: skip
    return str(pods[0]["metadata"]["name"])


def now_stamp(seconds_ago: float = 0) -> str:
    return datetime.fromtimestamp(datetime.now(UTC).timestamp() - seconds_ago, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def kubelet_confirms_deletion(kube, pod: str) -> None:
    """What the kubelet does once a pod marked for deletion has stopped: delete it for good."""
    wait_for(f"{pod} marked for deletion", lambda: (kube.get("pod", pod) or {}).get("metadata", {}).get(
        "deletionTimestamp"))  # fmt: skip
    kube.kubectl("delete", "pod", pod, "--grace-period=0", "--force", "--wait=false")


def test_an_image_not_on_the_node_fails_the_run_at_once_and_is_not_retried(kube, operator, tmp_path) -> None:
    small_files_lake(kube, tmp_path, inserts=1)
    spark = {"launcher": "Job", "image": IMAGE, "imagePullPolicy": "Never"}
    kube.apply(job("never-pulled", retries=2, timeout="30m", spark=spark))
    batch = launched(kube, "never-pulled", 1)["name"]
    assert kube.get("job", batch)["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Never"
    pod = driver_pod(kube, batch)
    bind(kube, pod, "node-1")
    patch_pod_status(kube, pod, {"phase": "Pending", "conditions": [scheduled()],
                                 "containerStatuses": [waiting("driver", IMAGE, *NEVER_PULLED)]})  # fmt: skip
    # the Job is deleted at once; its pod, on a node, runs until the kubelet says it stopped
    stopping = wait_for("the attempt stopping", lambda: "waiting for Job" in (kube.get("dlj", "never-pulled")[
        "status"].get("message") or ""))  # fmt: skip
    assert stopping and state(kube, "never-pulled") == "Running"
    kubelet_confirms_deletion(kube, pod)
    status = ended(kube, "never-pulled")["status"]
    assert status["state"] == "Failed" and status["attempts"] == 1, status  # retries left, but no retry helps
    assert status["message"].startswith(
        f'pod {pod} (driver), container driver cannot run: ErrImageNeverPull: Container image "{IMAGE}" is not '
        "present with pull policy of Never; set spark.image to an image the node can pull"
    )
    assert status["message"].endswith(
        "; nothing was committed, it left no uncommitted files; not retried: another attempt would fail the same way"
    )
    assert "attemptFailure" not in status and kube.get("job", batch) is None and kube.list("leases") == []
    kube.event("never-pulled", "Failed", containing="ErrImageNeverPull")
    described = kube.kubectl("describe", "ducklakejob", "never-pulled")
    assert "ErrImageNeverPull" in described and "Failed" in described


def test_a_pod_no_node_can_take_fails_the_attempt_after_the_grace_and_is_retried(kube, operator, tmp_path) -> None:
    small_files_lake(kube, tmp_path, inserts=1)
    kube.apply(job("too-big", retries=1, timeout="30m", spark={"launcher": "Job", "image": IMAGE,
                                                                "driver": {"cores": "64", "memory": "2g"}}))  # fmt: skip
    first = launched(kube, "too-big", 1)["name"]
    assert kube.get("job", first)["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "64"
    pod = driver_pod(kube, first)
    patch_pod_status(kube, pod, {"phase": "Pending", "conditions": [unschedulable(now_stamp(30))]})
    waiting_message = wait_for("the scheduler's words", lambda: "cannot be scheduled yet" in (kube.get(
        "dlj", "too-big")["status"].get("message") or "") and kube.get("dlj", "too-big")["status"]["message"])  # fmt: skip
    assert waiting_message.startswith(f"pod {pod} (driver) cannot be scheduled yet (0/1 nodes are available: 1 "
                                      "Insufficient cpu.")  # fmt: skip
    assert state(kube, "too-big") == "Running"
    # unschedulable since 10 minutes: past the grace a cluster autoscaler gets (300 s)
    patch_pod_status(kube, pod, {"phase": "Pending", "conditions": [unschedulable(now_stamp(600))]})
    second = launched(kube, "too-big", 2)["name"]  # not on a node: nothing of it ran, so the retry goes at once
    assert second != first and kube.get("job", first) is None
    (failed,) = [e for e in kube.events("too-big") if e["reason"] == "AttemptFailed"]
    assert failed["message"].startswith(f"attempt 1 failed (pod {pod} (driver) cannot run: Unschedulable: 0/1 nodes "
                                        "are available: 1 Insufficient cpu.")  # fmt: skip
    assert "lower spark.driver/spark.executor cores or memory" in failed["message"]
    assert "attemptFailure" not in kube.get("dlj", "too-big")["status"]
    finish_job(kube, second, ok=True)
    assert ended(kube, "too-big")["status"]["state"] == "Succeeded"


def test_a_driver_killed_for_memory_says_what_to_raise(kube, operator, tmp_path) -> None:
    small_files_lake(kube, tmp_path, inserts=1)
    kube.apply(job("oom", spark={"launcher": "Job", "image": IMAGE, "driver": {"memory": "1g"}}))
    batch = launched(kube, "oom", 1)["name"]
    pod = driver_pod(kube, batch)
    limit = kube.get("pod", pod)["spec"]["containers"][0]["resources"]["limits"]["memory"]
    bind(kube, pod, "node-1")
    patch_pod_status(kube, pod, {"phase": "Failed", "conditions": [scheduled()],
                                 "containerStatuses": [oom_killed("driver", IMAGE)]})  # fmt: skip
    finish_job(kube, batch, ok=False)  # the job controller's verdict: BackoffLimitExceeded
    status = ended(kube, "oom")["status"]
    assert status["state"] == "Failed"
    assert status["message"] == (
        f"Job {batch} failed (BackoffLimitExceeded: Job has reached the specified backoff limit); the driver ran out "
        f"of memory (pod {pod}, container driver was OOMKilled (exit code 137) at its pod's memory limit of {limit}): "
        "raise spark.driver.memory (its pod gets 40 % more, at least 384 MiB, for the job program's Python); nothing "
        "was committed, it left no uncommitted files"
    )
    assert limit == "1433Mi"


def test_a_run_ends_at_its_deadline_while_its_pod_on_a_lost_node_cannot_stop(kube, operator, tmp_path) -> None:
    """The pod is on a node whose kubelet is away: deleted, it stays (marked) until the
    kubelet comes back. The run ends at its deadline anyway: past it, its program commits
    nothing (its run document carries the deadline)."""
    location = small_files_lake(kube, tmp_path, inserts=2)
    kube.apply(job("lost", timeout=15, spark={"launcher": "Job", "image": IMAGE}))
    batch = launched(kube, "lost", 1)["name"]
    run = kube.get("dlj", "lost")
    document = json.loads(kube.get("configmap", batch)["data"]["run.json"])
    assert document["job"]["deadline"] == run["status"]["deadline"]
    pod = driver_pod(kube, batch)
    bind(kube, pod, "lost-node")
    patch_pod_status(kube, pod, {"phase": "Running", "conditions": [scheduled()], "containerStatuses": [
        {"name": "driver", "image": IMAGE, "imageID": "", "ready": True, "restartCount": 0, "started": True,
         "state": {"running": {"startedAt": now_stamp()}}, "lastState": {}}]})  # fmt: skip
    try:
        status = ended(kube, "lost", timeout=60)["status"]
        left = kube.get("pod", pod)
        assert left is not None and left["metadata"].get("deletionTimestamp")  # still there, marked for deletion
    finally:
        kube.kubectl("delete", "pod", pod, "--grace-period=0", "--force", "--ignore-not-found", "--wait=false")
    assert status["state"] == "Failed" and status["message"].startswith("timed out after 15 s; nothing was committed")
    assert status["message"].endswith(f"(Job {batch} has not stopped yet (its node may be unreachable; it cannot "
                                      "commit))")  # fmt: skip
    assert status["completionTime"] >= status["deadline"] and kube.list("leases") == []
    assert data_files(location) == 2


def test_a_refused_launch_says_what_the_api_server_said_and_goes_once_it_is_accepted(
    kube, operator, tmp_path, spark_application_crd
) -> None:
    small_files_lake(kube, tmp_path, inserts=1)
    hook = f"refuse-{kube.namespace}"
    install_refusing_webhook(kube.cluster, hook, kube.namespace)
    try:
        kube.apply(job("refused", spark={"launcher": "SparkApplication", "image": IMAGE}))
        said = wait_for("the server's words", lambda: "failed calling webhook" in (
            (kube.get("dlj", "refused").get("status") or {}).get("message") or "") and kube.get("dlj", "refused"
                                                                                                )["status"]["message"])  # fmt: skip
        assert said.startswith("waiting: a request to the API server failed, trying again in 5 s: HTTP 500 Internal "
                               f'Server Error: Internal error occurred: failed calling webhook "{hook}.ducklake.dev"')  # fmt: skip
        assert (
            f'HTTP 500 Internal Server Error: Internal error occurred: failed calling webhook "{hook}.ducklake.dev"'
            in (operator.log())
        )
        assert "launched" not in kube.get("dlj", "refused")["status"]  # nothing launched, nothing half-launched
    finally:
        kube.cluster.kubectl("delete", "validatingwebhookconfiguration", hook)
    app = launched(kube, "refused", 1)["name"]  # tried again: launched once the server accepts it
    assert kube.get("sparkapplication", app) is not None
    cancel(kube, "refused")
    assert ended(kube, "refused")["status"]["state"] == "Cancelled"


def test_a_run_that_waited_for_its_table_and_is_then_refused_says_so_and_holds_nothing_once_cancelled(
    kube, operator, tmp_path, spark_application_crd
) -> None:
    """What a Pending run waits for is its message until something else holds it up. The
    table's Lease it took before the launch that was refused is in its status, and goes when
    it is cancelled."""
    small_files_lake(kube, tmp_path, inserts=1)
    spark = {"launcher": "SparkApplication", "image": IMAGE}
    kube.apply(job("first", spark=spark))
    launched(kube, "first", 1)
    kube.apply(job("second", spark=spark))
    wait_for("second waiting for the table", lambda: (
        (kube.get("dlj", "second").get("status") or {}).get("waitingFor") == "DuckLakeJob first, which holds table main.orders"))  # fmt: skip
    hook = f"refuse-{kube.namespace}"
    install_refusing_webhook(kube.cluster, hook, kube.namespace)
    try:
        cancel(kube, "first")
        assert ended(kube, "first")["status"]["state"] == "Cancelled"
        status = wait_for("the server's words", lambda: (
            s if "failed calling webhook" in (s := kube.get("dlj", "second").get("status") or {}).get("message", "") else None))  # fmt: skip
        assert status["message"].startswith(
            "waiting: a request to the API server failed, trying again in 5 s: HTTP 500"
        )
        assert not status.get("waitingFor") and status["state"] == "Pending"
        attempt = object_name("second", kube.get("dlj", "second")["metadata"]["uid"], 1)
        leases = kube.list("leases")
        assert [lease["spec"]["holderIdentity"] for lease in leases] == [kube.get("dlj", "second")["metadata"]["uid"]]
        # written to its status before the launch the webhook refused
        assert status["locks"] == [leases[0]["metadata"]["name"]]
        # the launch created the attempt's ConfigMap before the SparkApplication was refused
        assert [m["metadata"]["name"] for m in attempt_config_maps(kube, "second")] == [attempt]
        cancel(kube, "second")
        status = ended(kube, "second")["status"]
    finally:
        kube.cluster.kubectl("delete", "validatingwebhookconfiguration", hook)
    assert status["state"] == "Cancelled" and status["message"] == (
        f"cancelled: spec.cancel is true; what its unfinished launch of SparkApplication {attempt} had created was "
        "deleted; nothing was committed, it left no uncommitted files"
    )
    assert kube.list("leases") == [] and attempt_config_maps(kube, "second") == []


def test_a_retry_whose_launch_was_refused_leaves_nothing_once_cancelled(
    kube, operator, tmp_path, spark_application_crd
) -> None:
    """A retry's status still shows its first attempt, which had stopped; what the refused
    launch of its second left (the second attempt's ConfigMap) goes when it is cancelled."""
    small_files_lake(kube, tmp_path, inserts=1)
    kube.apply(job("again", retries=1, spark={"launcher": "SparkApplication", "image": IMAGE}))
    first = launched(kube, "again", 1)["name"]
    second = object_name("again", kube.get("dlj", "again")["metadata"]["uid"], 2)
    hook = f"refuse-retry-{kube.namespace}"
    install_refusing_webhook(kube.cluster, hook, kube.namespace)
    try:
        patch_status(kube, "sparkapplication", first, {"applicationState": {
            "state": "FAILED", "errorMessage": "driver container failed with ExitCode: 1"}, "driverInfo": {}})  # fmt: skip
        wait_for("the second launch refused", lambda: "failed calling webhook" in (
            kube.get("dlj", "again")["status"].get("message") or ""))  # fmt: skip
        status = kube.get("dlj", "again")["status"]
        assert status["state"] == "Pending" and status["launched"]["name"] == first and status["locks"]
        assert second in [m["metadata"]["name"] for m in attempt_config_maps(kube, "again")]
        cancel(kube, "again")
        status = ended(kube, "again")["status"]
    finally:
        kube.cluster.kubectl("delete", "validatingwebhookconfiguration", hook)
    assert status["state"] == "Cancelled" and status["message"].startswith(
        f"cancelled: spec.cancel is true; what its unfinished launch of SparkApplication {second} had created was "
        "deleted; nothing was committed"
    )
    assert second not in [m["metadata"]["name"] for m in attempt_config_maps(kube, "again")]
    assert kube.list("leases") == []


def attempt_config_maps(kube: Any, job_name: str) -> list[dict[str, Any]]:
    """The ConfigMaps of the DuckLakeJob's attempts (owned by it)."""
    uid = kube.get("dlj", job_name)["metadata"]["uid"]
    return [m for m in kube.list("configmaps") if uid in {o["uid"] for o in m["metadata"].get("ownerReferences") or []}]
