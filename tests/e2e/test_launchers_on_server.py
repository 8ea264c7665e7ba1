"""The Job and SparkApplication launchers on the real API server, as the chart's service
account (so the chart's RBAC is all they have), with the Kubeflow Spark Operator's CRD
installed. There is no kubelet: pods never run, so the objects are checked as the server
accepted them, and their status is driven with ``kubectl patch --subresource=status``."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from ducklake_operator.api.v1alpha1.job import JobSpec
from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.controller.catalog_pool import CatalogPool
from ducklake_operator.controller.launchers.api_errors import api_error
from ducklake_operator.controller.launchers.kube import JobLauncher, KubeLauncher, SparkApplicationLauncher
from ducklake_operator.controller.launchers.local import LocalLauncher
from ducklake_operator.controller.launchers.render import render_config_map, render_job, render_spark_application
from ducklake_operator.controller.launchers.spec import Launched, LaunchSpec, attempt_selector, launch_spec
from ducklake_operator.controller.runs.locks import Holder, Leases, lease_name
from ducklake_operator.controller.runs.run_context import RunContext
from ducklake_operator.controller.runs.state_machine import Runs
from ducklake_operator.errors import LauncherNotInstalled, LaunchFailed
from support.manifests import manifest, parse_as
from support.operator_process import service_account_kubeconfig, wait_for
from support.pod_states import NEVER_PULLED, bind, patch_pod_status, scheduled, waiting
from support.reconcile_specs import catalog_spec
from support.webhooks import install_refusing_webhook

IMAGE = "registry.example/ducklake-operator:0.1.0"
JOB_ACCOUNT = "ducklake-job"
SECRETS = [("DUCKLAKE_CATALOG_USERNAME", "pg", "username"), ("DUCKLAKE_CATALOG_PASSWORD", "pg", "password"),
           ("AWS_ACCESS_KEY_ID", "s3", "key"), ("AWS_SECRET_ACCESS_KEY", "s3", "secret")]  # fmt: skip


@pytest.fixture(scope="module")
def api_client(cluster, chart, spark_application_crd, tmp_path_factory) -> Callable[[], Any]:
    """A kubernetes client holding a token of the chart's service account (with the
    SparkApplication CRD installed)."""
    path = service_account_kubeconfig(cluster, str(tmp_path_factory.mktemp("launchers") / "kubeconfig"))
    client = config.new_client_from_config(config_file=path)
    return lambda: client


@pytest.fixture
def secrets(kube) -> dict[str, str]:
    """The catalog's credentials, in two Secrets, and the job service account."""
    values = {"password": f"pw-{uuid.uuid4().hex}", "secret": f"s3-{uuid.uuid4().hex}"}
    kube.apply(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pg"},
         "stringData": {"username": "lake_user", "password": values["password"]}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s3"},
         "stringData": {"key": "AKIAEXAMPLE", "secret": values["secret"]}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": JOB_ACCOUNT}},
    )  # fmt: skip
    return values


def ducklake_job(kube, name: str = "compact-orders-1") -> str:
    """A DuckLakeJob to own what is launched; its uid."""
    kube.apply(manifest("DuckLakeJob", name, {"catalogRef": {"name": "lake"}, "table": "sales.orders",
                                              "operation": "compact"}))  # fmt: skip
    return str(kube.get("dlj", name)["metadata"]["uid"])


def attempt(kube, uid: str, launcher: str, name: str = "compact-orders-1", number: int = 1, **spark: Any) -> LaunchSpec:
    catalog = {"apiVersion": "ducklake.dev/v1alpha1", "kind": "DuckLakeCatalog",
               "metadata": {"name": "lake", "namespace": kube.namespace},
               "spec": {"metadata": {"postgres": {"host": "pg.data", "database": "lake",
                                                  "credentialsSecretRef": {"name": "pg"}}},
                        "dataPath": "s3://bucket/lake/", "storage": {"s3": {"credentialsSecretRef": {"name": "s3"}}}}}  # fmt: skip
    document = {"job": {"name": name, "namespace": kube.namespace, "uid": uid, "attempt": number},
                "catalog": catalog, "table": "sales.orders", "operation": "compact",
                "params": {"targetFileSize": "128MB"}, "inProcessBelow": None,
                "spark": {"master": "local[*]", "conf": {}}}  # fmt: skip
    return launch_spec(
        job_name=name,
        namespace=kube.namespace,
        uid=uid,
        attempt=number,
        run_document=document,
        spark={"launcher": launcher, "serviceAccount": JOB_ACCOUNT, "conf": {"spark.sql.shuffle.partitions": "8"},
               "driver": {"cores": "2", "memory": "2g"}, "executor": {"instances": "2", "memory": "3g"}, **spark},
        env_from_secrets=SECRETS,
        timeout_seconds=900,
        labels={"ducklake.dev/catalog": "lake", "ducklake.dev/operation": "compact"},
        env={"DUCKLAKE_JOB_IMAGE": IMAGE},
    )  # fmt: skip


def pruned(sent: Any, got: Any, path: str = "") -> list[str]:
    """Where the object read back lacks or changed what was sent (the server may add)."""
    if isinstance(sent, dict):
        if not isinstance(got, dict):
            return [f"{path}: {got!r}"]
        return [p for k, v in sent.items() for p in (pruned(v, got[k], f"{path}.{k}") if k in got else [f"{path}.{k}"])]
    if isinstance(sent, list):
        if not isinstance(got, list) or len(got) != len(sent):
            return [f"{path}: {got!r}"]
        return [p for i, (s, g) in enumerate(zip(sent, got, strict=True)) for p in pruned(s, g, f"{path}[{i}]")]
    return [] if sent == got else [f"{path}: sent {sent!r}, read {got!r}"]


def no_credentials(kube, values: dict[str, str]) -> None:
    """No Secret value, plain or base64, in any object a run made (or the pods made for it)."""
    text = kube.kubectl("get", "configmaps,jobs,pods,sparkapplications", "-o", "json")
    for value in values.values():
        assert value not in text and base64.b64encode(value.encode()).decode() not in text


def secret_refs(env: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    return {e["name"]: e["valueFrom"]["secretKeyRef"] for e in env if "secretKeyRef" in e.get("valueFrom", {})}


EXPECTED_REFS = {env: {"name": secret, "key": key} for env, secret, key in SECRETS}


def test_a_batch_job_is_accepted_as_rendered_and_its_pod_gets_credentials_from_secrets(
    kube, api_client, secrets
) -> None:
    spec = attempt(kube, ducklake_job(kube), "Job")
    launched = JobLauncher(api_client).launch(spec)
    assert launched == Launched("Job", spec.name, {"namespace": kube.namespace, "pods": attempt_selector(spec)})
    for kind, sent in (("configmap", render_config_map(spec)), ("job", render_job(spec))):
        assert pruned(sent, kube.get(kind, spec.name)) == [], kind
    assert json.loads(kube.get("configmap", spec.name)["data"]["run.json"])["spark"]["master"].startswith("k8s://")
    # the real job controller makes the pod (never scheduled here): as the job service account,
    # its credentials from the Secrets
    pods = wait_for("the Job's pod", lambda: kube.list("pods"), timeout=60)
    (pod,) = pods
    assert pod["metadata"]["ownerReferences"][0]["name"] == spec.name
    assert pod["spec"]["serviceAccountName"] == JOB_ACCOUNT and pod["spec"]["securityContext"]["runAsUser"] == 10001
    assert secret_refs(pod["spec"]["containers"][0]["env"]) == EXPECTED_REFS
    command = pod["spec"]["containers"][0]["command"]
    assert "spark.kubernetes.executor.podTemplateFile=/etc/ducklake/executor-pod.json" in command
    executors = json.loads(kube.get("configmap", spec.name)["data"]["executor-pod.json"])  # Spark reads it there
    assert secret_refs(executors["spec"]["containers"][0]["env"]) == EXPECTED_REFS
    no_credentials(kube, secrets)
    # launching the same attempt again (the operator died before recording it) finds it
    assert JobLauncher(api_client).launch(spec) == launched
    assert len(kube.list("jobs")) == 1


def test_a_spark_application_is_accepted_as_rendered(kube, api_client, secrets) -> None:
    spec = attempt(kube, ducklake_job(kube), "SparkApplication")
    launcher = SparkApplicationLauncher(api_client)
    assert launcher.available() is None
    launched = launcher.launch(spec)
    assert launched == Launched(
        "SparkApplication", spec.name, {"namespace": kube.namespace, "pods": attempt_selector(spec)}
    )
    app = kube.get("sparkapplication", spec.name)
    assert pruned(render_spark_application(spec), app) == []
    assert pruned(render_config_map(spec), kube.get("configmap", spec.name)) == []
    # the pods' templates, kept whole by the v2.5.0 CRD (its template field preserves unknown fields)
    driver, executor = (app["spec"][role]["template"]["spec"]["containers"][0] for role in ("driver", "executor"))
    assert secret_refs(driver["env"]) == EXPECTED_REFS == secret_refs(executor["env"])
    assert app["spec"]["driver"]["serviceAccount"] == JOB_ACCOUNT and app["spec"]["executor"]["instances"] == 2
    assert (app["spec"]["driver"]["cores"], app["spec"]["driver"]["coreRequest"]) == (2, "2")
    no_credentials(kube, secrets)
    assert launcher.launch(spec) == launched
    assert launcher.observe(launched).state == "Pending"  # no Spark Operator here: never submitted


def test_the_spark_applications_pod_templates_are_valid_pod_templates(kube, api_client, secrets) -> None:
    """The Spark Operator keeps ``template`` whole (its CRD preserves unknown fields) and Spark
    builds its pods from it: the API server's own pod validation (a v1 PodTemplate, strict
    fields) is what the pods will meet. Spark sets the image; here it is given."""
    spec = attempt(kube, ducklake_job(kube), "SparkApplication")
    app = render_spark_application(spec)["spec"]
    batch = attempt(kube, ducklake_job(kube, "compact-orders-2"), "Job", name="compact-orders-2")
    in_file = json.loads(render_config_map(batch)["data"]["executor-pod.json"])  # the batch Job's executors
    templates = {**{role: app[role]["template"] for role in ("driver", "executor")},
                 "job-executor": {k: v for k, v in in_file.items() if k not in ("apiVersion", "kind")}}  # fmt: skip
    for role, template in templates.items():
        containers = [{**c, "image": IMAGE} for c in template["spec"]["containers"]]
        body = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": f"{spec.name}-{role}"},
                "template": {**template, "spec": {**template["spec"], "containers": containers}}}  # fmt: skip
        kube.kubectl("create", "--validate=strict", "-f", "-", input=json.dumps(body))
        stored = kube.get("podtemplate", f"{spec.name}-{role}")
        assert pruned(body["template"], stored["template"]) == [], role


def patch_status(kube, kind: str, name: str, status: dict[str, Any]) -> None:
    kube.kubectl("patch", kind, name, "--subresource=status", "--type=merge", "-p", json.dumps({"status": status}))


@pytest.mark.parametrize(
    "conditions, state, message",
    [
        ([{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}], "Succeeded",
         "completed"),
        ([{"type": "FailureTarget", "status": "True", "reason": "DeadlineExceeded"},
          {"type": "Failed", "status": "True", "reason": "DeadlineExceeded", "message": "Job was active longer than"
           " specified deadline"}], "Failed", "timed out: Job compact-orders-1-"),
        ([{"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded"},
          {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
           "message": "Job has reached the specified backoff limit"}], "Failed", "Job has reached the specified backoff limit"),
    ],
    ids=["complete", "deadline", "failed"],
)  # fmt: skip
def test_a_batch_jobs_status_is_observed(kube, api_client, conditions, state: str, message: str) -> None:
    spec = attempt(kube, ducklake_job(kube), "Job", serviceAccount=None)
    launcher = JobLauncher(api_client)
    launched = launcher.launch(spec)
    assert launcher.observe(launched).state == "Pending"
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    stamped = [{**c, "lastProbeTime": now, "lastTransitionTime": now} for c in conditions]
    ended = {"completionTime": now} if state == "Succeeded" else {}
    # as the job controller writes a finished Job (the server checks it): no pod counted active
    patch_status(kube, "job", spec.name, {"conditions": stamped, "active": 0, "ready": 0, **ended})
    observed = launcher.observe(launched)
    assert observed.state == state and message in observed.message


@pytest.mark.parametrize(
    "application_state, state, message",
    [({"state": "RUNNING"}, "Running", "is RUNNING"),
     ({"state": "COMPLETED"}, "Succeeded", "completed"),
     ({"state": "FAILED", "errorMessage": "driver container failed with ExitCode: 1"}, "Failed",
      "FAILED: driver container failed with ExitCode: 1"),
     ({"state": "SUBMISSION_FAILED", "errorMessage": "failed to run spark-submit"}, "Failed", "failed to run spark-submit")],
    ids=["running", "completed", "failed", "submission-failed"],
)  # fmt: skip
def test_a_spark_applications_state_is_observed(kube, api_client, application_state, state,
                                                message) -> None:  # fmt: skip
    spec = attempt(kube, ducklake_job(kube), "SparkApplication")
    launcher = SparkApplicationLauncher(api_client)
    launched = launcher.launch(spec)
    patch_status(kube, "sparkapplication", spec.name, {"applicationState": application_state, "driverInfo": {}})
    observed = launcher.observe(launched)
    assert observed.state == state and message in observed.message


@pytest.mark.parametrize("launcher_type", [JobLauncher, SparkApplicationLauncher], ids=["job", "spark-application"])
def test_cancel_deletes_what_was_launched(kube, api_client, launcher_type: type[KubeLauncher]) -> None:
    launcher = launcher_type(api_client)
    spec = attempt(kube, ducklake_job(kube), launcher.kind)
    launched = launcher.launch(spec)
    launcher.cancel(launched)
    wait_for("the object deleted", lambda: kube.get(launcher.plural, spec.name) is None, timeout=60)
    assert kube.get("configmap", spec.name) is None
    observed = launcher.observe(launched)
    assert observed.state == "Gone" and spec.name in observed.message
    launcher.cancel(launched)  # nothing left: no error


def test_what_a_run_launched_goes_with_its_ducklakejob(kube, api_client, secrets) -> None:
    """Every object is owned by the DuckLakeJob: the real garbage collector deletes them all
    when it goes, attempts of both launchers alike."""
    uid = ducklake_job(kube)
    first, second = attempt(kube, uid, "Job"), attempt(kube, uid, "SparkApplication", number=2)
    JobLauncher(api_client).launch(first)
    SparkApplicationLauncher(api_client).launch(second)
    for kind, name in (("job", first.name), ("sparkapplication", second.name), ("configmap", first.name),
                       ("configmap", second.name)):  # fmt: skip
        owners = kube.get(kind, name)["metadata"]["ownerReferences"]
        assert owners == [{"apiVersion": "ducklake.dev/v1alpha1", "kind": "DuckLakeJob", "name": "compact-orders-1",
                           "uid": uid, "controller": True, "blockOwnerDeletion": True}]  # fmt: skip
    kube.delete("dlj", "compact-orders-1")

    def collected() -> bool:
        left = json.loads(kube.kubectl("get", "jobs,sparkapplications,configmaps,pods", "-o", "json"))["items"]
        return not [o for o in left if o["metadata"].get("labels", {}).get("ducklake.dev/job") == "compact-orders-1"]

    wait_for("the run's objects collected", collected, timeout=120, interval=1)


def test_a_launcher_whose_resource_is_not_served_says_so_and_creates_nothing(kube, api_client, secrets) -> None:
    spec = attempt(kube, ducklake_job(kube), "SparkApplication")
    for launcher, resource in (
        (SparkApplicationLauncher(api_client, plural="sparkapplicationz"), "sparkapplicationz.sparkoperator.k8s.io"),
        (SparkApplicationLauncher(api_client, group="sparkoperator.example.com"), "sparkapplications.sparkoperator.example.com"),
    ):  # fmt: skip
        expected = f"the Kubeflow Spark Operator is not installed (no {resource})"
        assert launcher.available() == expected
        with pytest.raises(LauncherNotInstalled) as info:
            launcher.launch(spec)
        assert str(info.value) == expected
    assert kube.get("configmap", spec.name) is None


def test_a_refused_object_is_a_launch_failure_with_the_servers_reason(kube, api_client, secrets) -> None:
    spec = attempt(kube, ducklake_job(kube), "Job", serviceAccount="Spark_Jobs")  # not a valid name
    with pytest.raises(LaunchFailed) as info:
        JobLauncher(api_client).launch(spec)
    message = str(info.value)
    assert message.startswith(f"the API server refused Job {kube.namespace}/{spec.name}: ")
    assert "serviceAccountName" in message and "Spark_Jobs" in message
    assert kube.get("configmap", spec.name) is None  # nothing half-launched stays


def test_a_pod_that_cannot_start_fails_the_attempt_with_the_kubelets_words(kube, api_client, secrets) -> None:
    """The Job's pod, as the job controller made it; its status as the kubelet writes it for an
    image that is not on the node (pull policy Never): the attempt has failed, for good, and
    the launcher says so before the Job would (it never would: the pod just waits)."""
    spec = attempt(kube, ducklake_job(kube), "Job", imagePullPolicy="Never")
    launcher = JobLauncher(api_client)
    launched = launcher.launch(spec)
    (pod,) = wait_for("the Job's pod", lambda: kube.list("pods"), timeout=60)
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == "Never"
    name = pod["metadata"]["name"]
    observed = launcher.observe(launched)
    assert (observed.state, observed.message) == ("Pending", f"pod {name} (driver) waits for a node")
    bind(kube, name, "node-1")  # the scheduler's part (no node is needed for the binding)
    patch_pod_status(kube, name, {"phase": "Pending", "conditions": [scheduled()],
                                  "containerStatuses": [waiting("driver", IMAGE, *NEVER_PULLED)]})  # fmt: skip
    observed = launcher.observe(launched)
    assert observed.state == "Failed" and observed.stop and not observed.retriable
    assert observed.message.startswith(f"pod {name} (driver), container driver cannot run: ErrImageNeverPull: "
                                       f'Container image "{IMAGE}" is not present with pull policy of Never; set '
                                       "spark.image")  # fmt: skip
    assert not launcher.stopped(launched)  # bound to a node: it runs until the kubelet says it stopped
    launcher.cancel(launched)
    wait_for("the Job gone", lambda: kube.get("job", spec.name) is None, timeout=60)


def test_the_api_servers_own_words_when_it_refuses(kube, api_client, secrets) -> None:
    """A failing admission webhook makes the API server answer 500; what it said (which
    webhook, why) is what the launcher's caller sees, and the launch is tried again (a 5xx is
    not the request's fault)."""
    hook = f"refuse-{kube.namespace}"
    install_refusing_webhook(kube.cluster, hook, kube.namespace)
    try:
        spec = attempt(kube, ducklake_job(kube), "SparkApplication")
        with pytest.raises(ApiException) as info:
            SparkApplicationLauncher(api_client).launch(spec)
        said = api_error(info.value)
        assert said is not None and said.startswith("HTTP 500 Internal Server Error: Internal error occurred: failed "
                                                    f'calling webhook "{hook}.ducklake.dev"')  # fmt: skip
        assert "no-such-webhook" in said
    finally:
        kube.cluster.kubectl("delete", "validatingwebhookconfiguration", hook)
    launched = SparkApplicationLauncher(api_client).launch(spec)  # the same attempt, launched now
    assert kube.get("sparkapplication", launched.name) is not None


@dataclass
class LostLaunch:
    """A run whose attempt 1 was launched as a Job, the launch's answer lost (the run's status
    shows no attempt), and the run's state machine with the Local and Job launchers."""

    uid: str
    began: LaunchSpec
    runs: Runs
    leases: Leases
    spec: JobSpec


@pytest.fixture
def lost_launch(kube, api_client, secrets, tmp_path) -> Iterator[LostLaunch]:
    uid = ducklake_job(kube)
    job_launcher = JobLauncher(api_client)
    began = attempt(kube, uid, "Job")
    job_launcher.launch(began)
    assert kube.get("job", began.name) is not None
    pool = CatalogPool(credentials=lambda *_: ("", None))
    leases = Leases(lambda: client.CoordinationV1Api(api_client()), lambda *_: False)
    local = LocalLauncher(lambda *_: "", state_dir=str(tmp_path / "runs"))
    spec = parse_as(JobSpec, kube.get("dlj", "compact-orders-1"))
    try:
        yield LostLaunch(uid, began, Runs(pool, leases, {"Local": local, "Job": job_launcher}), leases, spec)
    finally:
        local.close()
        pool.close()


def test_a_cancel_finds_what_a_launch_on_the_launcher_named_before_left(kube, lost_launch: LostLaunch) -> None:
    """A launch that never returned (the run's status lists its Lease, not its attempt) was on
    the launcher the run's settings named then; they name another now (its policy's
    ``spark.launcher`` edited). Cancelling the run still finds what that launch created,
    deletes it, says so and gives its Lease back."""
    uid, began, runs, spec = lost_launch.uid, lost_launch.began, lost_launch.runs, lost_launch.spec
    lock = lease_name("table", "lake", "sales.orders")
    assert lost_launch.leases.acquire(kube.namespace, lock, Holder(uid, spec.ref.name), "table sales.orders") is None
    now_named = RunContext(None, None, True, None, {"launcher": "Local"})
    status = {"state": "Pending", "attempts": 0, "locks": [lock]}
    tick = runs.tick(spec, uid, status, now_named, cancel="spec.cancel")
    deadline = time.monotonic() + 60
    while tick.status.get("state") != "Cancelled" and time.monotonic() < deadline:  # the Job's deletion
        assert tick.status["message"] == f"spec.cancel: stopping Job {began.name}", tick.status
        time.sleep(0.5)
        tick = runs.tick(spec, uid, status, now_named, cancel="spec.cancel")
    assert tick.status.get("state") == "Cancelled", tick.status
    assert tick.status["message"].startswith(
        f"spec.cancel; what its unfinished launch of Job {began.name} had created was deleted; "
        "DuckLakeCatalog 'lake' no longer exists"
    ), tick.status["message"]
    assert kube.get("job", began.name) is None and kube.get("configmap", began.name) is None
    assert tick.status["locks"] == [] and kube.list("leases") == []


def test_an_attempt_goes_to_the_launcher_named_now_once_what_a_launch_with_the_one_before_left_has_stopped(
    kube, lost_launch: LostLaunch, tmp_path
) -> None:
    """The run's status says its launch went to Job, and that launch never returned; its
    settings name Local now. The attempt is not launched on Local while the Job runs: the Job
    is deleted first (the message says so meanwhile), then the status names Local. A status
    without the field (a CRD from before it) does not hold the launch up."""
    uid, began, runs, spec = lost_launch.uid, lost_launch.began, lost_launch.runs, lost_launch.spec
    location, data = CatalogLocation(kind="sqlite", path=str(tmp_path / "lake.sqlite")), str(tmp_path / "data") + "/"
    Catalog.create(location, data).close()
    now_named = RunContext(catalog_spec(location, data), None, True, None, {"launcher": "Local"})
    status: dict[str, Any] = {"state": "Pending", "attempts": 0, "locks": [], "launcher": "Job"}
    messages = []
    deadline = time.monotonic() + 60
    while status.get("launcher") == "Job" and time.monotonic() < deadline:
        status.update(runs.tick(spec, uid, status, now_named).status)
        messages.append(status["message"])
        assert "launched" not in status and status["state"] == "Pending", status
        time.sleep(0.2)
    assert status["launcher"] == "Local" and status["message"] == "launching attempt 1", messages
    assert messages[0] == (
        f"launching attempt 1 with Local, as the run's settings say now: stopping Job {began.name}, which its "
        "launch with Job had created"
    ) or messages == ["launching attempt 1"]  # deleted at once: nothing to wait for
    assert kube.get("job", began.name) is None and kube.get("configmap", began.name) is None
    assert status["locks"] and [lease["metadata"]["name"] for lease in kube.list("leases")] == status["locks"]
    # a CRD from before the field (Helm upgrades no CRD) drops status.launcher: launched all the same
    del status["launcher"]
    tick = runs.tick(spec, uid, status, now_named)
    assert tick.status.get("state") == "Running" and tick.status["launched"]["kind"] == "Local", tick.status
    status.update(tick.status)
    while status["state"] == "Running" and time.monotonic() < deadline:
        status.update(runs.tick(spec, uid, status, now_named, cancel="spec.cancel").status)
        time.sleep(0.2)
    assert status["state"] == "Cancelled" and kube.list("leases") == [], status
