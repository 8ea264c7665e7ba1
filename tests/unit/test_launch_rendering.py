"""Launchers, the pure part: an attempt's defaults and name, the objects rendered for it, and
what their status (or the job program's last line) means."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ducklake_operator.api.load import parse_manifest
from ducklake_operator.api.v1alpha1.job import JobSpec
from ducklake_operator.controller.launchers.observe import (
    last_result,
    observe_finished_program,
    observe_job,
    observe_spark_application,
)
from ducklake_operator.controller.launchers.render import (
    Cpu,
    cpu,
    render_config_map,
    render_job,
    render_spark_application,
)
from ducklake_operator.controller.launchers.spec import (
    KUBERNETES_MASTER,
    MAX_NAME,
    LaunchSpec,
    launch_spec,
    object_name,
)
from ducklake_operator.controller.runs.attempts import time_left
from ducklake_operator.controller.runs.run_context import RunContext
from ducklake_operator.controller.runs.run_document import attempt_spec
from ducklake_operator.controller.runs.tick import parse_stamp
from ducklake_operator.errors import LaunchFailed

UID = "5f1c2d3e-aaaa-bbbb-cccc-000000000001"
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DOCUMENT: dict[str, Any] = {
    "job": {"name": "compact-orders-1", "namespace": "data", "uid": UID, "attempt": 1},
    "catalog": {"kind": "DuckLakeCatalog", "metadata": {"name": "lake"}, "spec": {"dataPath": "s3://b/lake"}},
    "table": "sales.orders",
    "operation": "compact",
    "params": {"targetFileSize": "128MB"},
    "inProcessBelow": None,
    "spark": {"master": "local[*]", "conf": {"spark.sql.shuffle.partitions": "4"}},
}
SECRETS = [("DUCKLAKE_CATALOG_USERNAME", "pg", "username"), ("DUCKLAKE_CATALOG_PASSWORD", "pg", "password")]


def spec(spark: dict[str, Any] | None = None, env: dict[str, str] | None = None, **kw: Any) -> LaunchSpec:
    args: dict[str, Any] = dict(
        job_name="compact-orders-1",
        namespace="data",
        uid=UID,
        attempt=1,
        run_document=DOCUMENT,
        spark={"launcher": "Job", "conf": {"spark.sql.shuffle.partitions": "4"}, **(spark or {})},
        env_from_secrets=SECRETS,
        timeout_seconds=600,
        labels={"ducklake.dev/catalog": "lake", "ducklake.dev/operation": "compact"},
        env={"DUCKLAKE_JOB_IMAGE": "registry/ducklake-operator:1.0", **(env or {})},
    )
    args.update(kw)
    return launch_spec(**args)


def test_defaults_come_from_the_operators_environment_then_the_launchers() -> None:
    s = spec(env={"DUCKLAKE_JOB_SERVICE_ACCOUNT": "ducklake-job", "DUCKLAKE_SPARK_VERSION": "4.0.1"})
    assert (s.image, s.service_account, s.spark_version) == ("registry/ducklake-operator:1.0", "ducklake-job", "4.0.1")
    assert (s.driver.cores, s.driver.memory) == ("500m", "1g")  # modest: a driver and 2 executors fit a small node
    assert (s.executor.instances, s.executor.cores, s.executor.memory) == ("1", "500m", "2g")
    assert s.image_pull_policy is None  # Kubernetes' own default
    assert s.ttl_seconds_after_finished == 86400 and s.timeout_seconds == 600
    chosen = spec({"image": "mine:2", "serviceAccount": "spark", "driver": {"memory": "4g"}, "executor": {"instances": "3"}},
                  env={"DUCKLAKE_JOB_SERVICE_ACCOUNT": "ducklake-job"})  # fmt: skip
    assert (chosen.image, chosen.service_account, chosen.driver.memory, chosen.executor.instances) == (
        "mine:2", "spark", "4g", "3")  # fmt: skip
    assert spec(env={"DUCKLAKE_JOB_IMAGE": ""}).image is None and spec().service_account is None
    labels = dict(spec().labels)
    assert labels["ducklake.dev/job"] == "compact-orders-1" and labels["ducklake.dev/attempt"] == "1"
    assert labels["app.kubernetes.io/managed-by"] == "ducklake-operator" and labels["ducklake.dev/catalog"] == "lake"


def test_the_run_document_carries_the_master_the_program_must_use() -> None:
    def master(s: LaunchSpec) -> str:
        doc = json.loads(s.run_document)
        assert {k: v for k, v in doc.items() if k != "spark"} == {k: v for k, v in DOCUMENT.items() if k != "spark"}
        assert doc["spark"]["conf"] == DOCUMENT["spark"]["conf"]
        assert doc["spark"]["master"] == s.master
        return s.master

    assert master(spec()) == KUBERNETES_MASTER
    assert master(spec({"launcher": "SparkApplication"})) == KUBERNETES_MASTER
    assert master(spec({"executor": {"instances": "0"}})) == "local[*]"  # no executors: Spark in the pod
    assert master(spec({"launcher": "Local"})) == "local[*]"
    assert master(spec({"launcher": "Local", "master": "local[2]"})) == "local[2]"


def test_names_are_stable_per_attempt_and_distinct_across_attempts_and_jobs() -> None:
    assert object_name("compact-orders-1", UID, 1) == "compact-orders-1-5f1c2d-1" == spec().name
    assert object_name("compact-orders-1", UID, 2) == "compact-orders-1-5f1c2d-2"
    assert object_name("compact-orders-1", "0a" + UID[2:], 1) != object_name("compact-orders-1", UID, 1)


@given(st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,250}[a-z0-9])?", fullmatch=True), st.integers(1, 10_000))
def test_every_job_name_gives_a_dns_label_short_enough_for_the_spark_operators_suffixes(
    name: str, attempt: int
) -> None:
    out = object_name(name, UID, attempt)
    assert DNS_1035.match(out) and len(out) <= MAX_NAME and out.endswith(f"-5f1c2d-{attempt}")
    assert object_name(name, UID, attempt) == out


def test_the_config_map_holds_the_run_document_and_is_owned_by_the_job() -> None:
    s = spec({"executor": {"instances": "0"}})  # no executors: nothing but the run document
    cm = render_config_map(s)
    assert cm["data"] == {"run.json": s.run_document} and cm["metadata"]["name"] == s.name
    app = spec({"launcher": "SparkApplication"})  # its executors' template is in the SparkApplication
    assert render_config_map(app)["data"] == {"run.json": app.run_document}
    assert cm["metadata"]["ownerReferences"] == [
        {"apiVersion": "ducklake.dev/v1alpha1", "kind": "DuckLakeJob", "name": "compact-orders-1", "uid": UID,
         "controller": True, "blockOwnerDeletion": True}]  # fmt: skip


def conf_of(command: list[str]) -> dict[str, str]:
    pairs = [command[i + 1] for i, arg in enumerate(command) if arg == "--conf"]
    return dict(p.split("=", 1) for p in pairs)


def test_the_batch_job_runs_spark_submit_in_client_mode_with_the_settings() -> None:
    s = spec({"serviceAccount": "ducklake-job", "driver": {"cores": "2", "memory": "2g"},
              "executor": {"instances": "3", "cores": "2", "memory": "4g"},
              "conf": {"spark.kubernetes.namespace": "elsewhere", "spark.sql.shuffle.partitions": "4"}})  # fmt: skip
    job = render_job(s)
    assert job["metadata"]["ownerReferences"][0]["uid"] == UID and job["metadata"]["labels"] == dict(s.labels)
    assert (
        job["spec"]["backoffLimit"],
        job["spec"]["activeDeadlineSeconds"],
        job["spec"]["ttlSecondsAfterFinished"],
    ) == (0, 600, 86400)
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and pod["serviceAccountName"] == "ducklake-job"
    assert pod["securityContext"]["runAsUser"] == 10001 and pod["securityContext"]["runAsNonRoot"] is True
    (container,) = pod["containers"]
    command = container["command"]
    assert command[:7] == ["spark-submit", "--master", KUBERNETES_MASTER, "--deploy-mode", "client", "--name", s.name]
    assert command[-4:] == ["/opt/ducklake/run_job.py", "run", "--run-file", "/etc/ducklake/run.json"]
    conf = conf_of(command)
    assert conf["spark.kubernetes.namespace"] == "data"  # the launcher's own settings win over conf
    assert conf["spark.sql.shuffle.partitions"] == "4" and conf["spark.kubernetes.container.image"] == s.image
    assert (conf["spark.executor.instances"], conf["spark.executor.cores"], conf["spark.executor.memory"]) == (
        "3",
        "2",
        "4096m",
    )
    # each executor's pod requests its CPUs; the Python beside the JVM (the tasks' DuckDB) gets 40 %
    assert conf["spark.kubernetes.executor.request.cores"] == "2" and conf["spark.executor.memoryOverhead"] == "1638m"
    assert conf["spark.driver.memory"] == "2g" and conf["spark.driver.host"] == "$(POD_IP)"
    assert conf["spark.kubernetes.driver.pod.name"] == "$(POD_NAME)"
    # the driver's Kubernetes client waits 60 s, not 10, for a busy API server
    assert (
        conf["spark.kubernetes.driver.connectionTimeout"] == conf["spark.kubernetes.driver.requestTimeout"] == "60000"
    )
    assert conf["spark.kubernetes.authenticate.executor.serviceAccountName"] == "ducklake-job"
    # the executors' pods from a template beside the run document (credentials, /tmp, security contexts)
    assert conf["spark.kubernetes.executor.podTemplateFile"] == "/etc/ducklake/executor-pod.json"
    assert conf["spark.kubernetes.executor.podTemplateContainerName"] == "spark-kubernetes-executor"
    assert not [k for k in conf if "secretKeyRef" in k]  # no credential's name or key on the command line either
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_IP"]["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert env["SPARK_LOCAL_IP"]["value"] == "$(POD_IP)" and env["DUCKLAKE_REPORT_TO_API"]["value"] == "1"
    assert env["DUCKLAKE_CATALOG_PASSWORD"] == {
        "name": "DUCKLAKE_CATALOG_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "pg", "key": "password"}}}  # fmt: skip
    # the pod holds the JVM's memory and the Python process beside it (40 %, at least 384 MiB)
    assert container["resources"] == {"requests": {"cpu": "2", "memory": "2867Mi"}, "limits": {"memory": "2867Mi"}}
    assert render_job(spec())["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {
        "memory": "1433Mi"
    }
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes[mounts["/etc/ducklake"]]["configMap"] == {"name": s.name} and "emptyDir" in volumes[mounts["/tmp"]]
    assert "activeDeadlineSeconds" not in render_job(spec(timeout_seconds=None))["spec"]
    assert "serviceAccountName" not in render_job(spec())["spec"]["template"]["spec"]
    assert "imagePullPolicy" not in container and "spark.kubernetes.container.image.pullPolicy" not in conf


def test_a_retry_gets_what_is_left_of_the_runs_timeout() -> None:
    """``timeout`` bounds the whole run, retries included: each attempt's Job gets the time
    left from the first attempt's start (fixed clock)."""
    run = parse_manifest({"kind": "DuckLakeJob", "metadata": {"name": "compact-orders-1", "namespace": "data"},
                          "spec": {"catalogRef": {"name": "lake"}, "table": "sales.orders", "operation": "compact",
                                   "timeout": "30m", "retries": 2}})  # fmt: skip
    assert isinstance(run, JobSpec) and run.timeout_seconds == 1800
    ctx = RunContext(None, None, True, None, {"launcher": "Job", "image": "registry/ducklake-operator:1.0"})
    start = parse_stamp("2026-01-01T02:00:00Z") or 0.0

    def deadline(attempt: int, now: float) -> Any:
        left = time_left(run.timeout_seconds, start, now)
        return render_job(attempt_spec(run, UID, ctx, attempt, left))["spec"].get("activeDeadlineSeconds")

    assert deadline(1, start) == 1800
    assert deadline(2, start + 95.5) == 1705  # the first attempt and the backoff took 95.5 s
    assert deadline(3, start + 1799.2) == 1
    assert time_left(run.timeout_seconds, start, start + 1800) == 0  # no attempt starts then: the run fails
    assert time_left(None, start, start + 10**6) is None
    # the program gets the run's deadline (it commits nothing past it), the same for every attempt
    for attempt in (1, 2):
        launched = attempt_spec(run, UID, ctx, attempt, time_left(1800, start, start + 95), deadline=start + 1800)
        assert json.loads(launched.run_document)["job"]["deadline"] == "2026-01-01T02:30:00Z"
    assert "deadline" not in json.loads(attempt_spec(run, UID, ctx, 1, None).run_document)["job"]


def test_a_job_without_executors_runs_spark_in_its_pod() -> None:
    command = render_job(spec({"executor": {"instances": "0"}}))["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[command.index("--master") + 1] == "local[*]"
    assert not any(k.startswith("spark.kubernetes.") or k.startswith("spark.executor.") for k in conf_of(command))


def test_the_spark_application_runs_the_program_in_cluster_mode() -> None:
    s = spec({"launcher": "SparkApplication", "serviceAccount": "ducklake-job", "executor": {"instances": "2"}},
             env={"DUCKLAKE_SPARK_VERSION": "4.0.1"})  # fmt: skip
    app = render_spark_application(s)
    assert (app["apiVersion"], app["kind"]) == ("sparkoperator.k8s.io/v1beta2", "SparkApplication")
    body = app["spec"]
    assert (body["type"], body["mode"], body["sparkVersion"], body["restartPolicy"]) == (
        "Python", "cluster", "4.0.1", {"type": "Never"})  # fmt: skip
    assert body["mainApplicationFile"] == "local:///opt/ducklake/run_job.py"
    assert body["arguments"] == ["run", "--run-file", "/etc/ducklake/run.json"]
    assert body["timeToLiveSeconds"] == 86400 and body["sparkConf"] == {
        "spark.sql.shuffle.partitions": "4",
        # Spark 4.2's NetworkPolicy for the driver, which the Spark Operator's chart may not create
        "spark.kubernetes.driver.pod.excludedFeatureSteps": "org.apache.spark.deploy.k8s.features.NetworkPolicyFeatureStep",
        # the Kubernetes clients of spark-submit and of the driver wait 60 s, not 10, for a busy API server
        "spark.kubernetes.submission.connectionTimeout": "60000",
        "spark.kubernetes.submission.requestTimeout": "60000",
        "spark.kubernetes.driver.connectionTimeout": "60000",
        "spark.kubernetes.driver.requestTimeout": "60000",
    }
    driver, executor = body["driver"], body["executor"]
    assert (driver["cores"], driver["coreRequest"], driver["memory"], driver["memoryOverhead"]) == (1, "500m", "1g",
                                                                                                    "409m")  # fmt: skip
    assert driver["serviceAccount"] == "ducklake-job"
    assert (executor["instances"], executor["cores"], executor["coreRequest"], executor["memory"]) == (2, 1, "500m",
                                                                                                       "2g")  # fmt: skip
    assert executor["memoryOverhead"] == "819m" and "imagePullPolicy" not in body
    alone = render_spark_application(spec({"launcher": "SparkApplication", "executor": {"instances": "0"}}))
    assert "instances" not in alone["spec"]["executor"]  # the CRD's minimum is 1; Spark runs in the driver


def test_the_spark_applications_pods_get_what_they_need_from_their_templates_not_the_webhook() -> None:
    """Without the Spark Operator's mutating webhook, ``driver.configMaps``, ``env``,
    ``securityContext``... are never applied (v2.5.0 applies them in the webhook alone); the
    pod templates are Spark's own (spark-submit builds the pods from them), so everything
    the pods need is there: the run document, the credentials, a writable /tmp, the user."""
    s = spec({"launcher": "SparkApplication", "executor": {"instances": "2"}}, env={"DUCKLAKE_SPARK_VERSION": "4.0.1"})
    body = render_spark_application(s)["spec"]
    webhook_only = {"configMaps", "secrets", "env", "envFrom", "volumeMounts", "podSecurityContext", "securityContext"}
    assert not webhook_only & set(body["driver"]) and not webhook_only & set(body["executor"])
    assert "volumes" not in body
    for role, container_name in (("driver", "spark-kubernetes-driver"), ("executor", "spark-kubernetes-executor")):
        pod = body[role]["template"]["spec"]
        assert pod["securityContext"]["runAsUser"] == 10001 and pod["securityContext"]["runAsNonRoot"] is True
        (container,) = pod["containers"]
        assert container["name"] == container_name and container["workingDir"] == "/tmp"
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        mounts = {m["mountPath"]: volumes[m["name"]] for m in container["volumeMounts"]}
        assert mounts["/tmp"]["emptyDir"] == {}
        refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container["env"] if "valueFrom" in e}
        assert refs == {"DUCKLAKE_CATALOG_USERNAME": {"name": "pg", "key": "username"},
                        "DUCKLAKE_CATALOG_PASSWORD": {"name": "pg", "key": "password"}}  # fmt: skip
        assert body[role]["template"]["metadata"]["labels"] == dict(s.labels)
    driver = body["driver"]["template"]["spec"]
    mounts = {m["mountPath"]: m for m in driver["containers"][0]["volumeMounts"]}
    run = next(v for v in driver["volumes"] if v["name"] == mounts["/etc/ducklake"]["name"])
    assert run["configMap"] == {"name": s.name} and mounts["/etc/ducklake"]["readOnly"] is True
    assert {"name": "DUCKLAKE_REPORT_TO_API", "value": "1"} in driver["containers"][0]["env"]
    executor_env = body["executor"]["template"]["spec"]["containers"][0]["env"]
    assert "DUCKLAKE_REPORT_TO_API" not in {e["name"] for e in executor_env}  # only the driver reports
    # the batch Job's executors get the same pod, from a file Spark reads in the driver
    job = spec({"executor": {"instances": "2"}})
    in_file = json.loads(render_config_map(job)["data"]["executor-pod.json"])
    assert (in_file.pop("apiVersion"), in_file.pop("kind")) == ("v1", "Pod")
    assert in_file == body["executor"]["template"]


@pytest.mark.parametrize("launcher", ["Job", "SparkApplication"])
def test_the_image_pull_policy_comes_from_the_settings_else_the_operator(launcher: str) -> None:
    env = {"DUCKLAKE_SPARK_VERSION": "4.0.1", "DUCKLAKE_JOB_IMAGE_PULL_POLICY": "IfNotPresent"}
    for settings, expected in (({}, "IfNotPresent"), ({"imagePullPolicy": "Never"}, "Never")):
        s = spec({"launcher": launcher, "executor": {"instances": "2"}, **settings}, env=env)
        assert s.image_pull_policy == expected
        if launcher == "Job":
            container = render_job(s)["spec"]["template"]["spec"]["containers"][0]
            assert container["imagePullPolicy"] == expected  # the driver
            assert conf_of(container["command"])["spark.kubernetes.container.image.pullPolicy"] == expected  # executors
        else:  # the Spark Operator passes it to spark-submit as spark.kubernetes.container.image.pullPolicy
            assert render_spark_application(s)["spec"]["imagePullPolicy"] == expected
    with pytest.raises(ValueError, match="DUCKLAKE_JOB_IMAGE_PULL_POLICY: 'Sometimes' is not one of Always, "):
        spec(env={"DUCKLAKE_JOB_IMAGE_PULL_POLICY": "Sometimes"})


@pytest.mark.parametrize(
    "text, request_, slots",
    [("2", "2", 2), ("0.5", "500m", 1), ("500m", "500m", 1), ("100m", "100m", 1), ("1.5", "1500m", 1),
     ("2500m", "2500m", 2), ("4000m", "4", 4), (" 1 ", "1", 1), ("0.001", "1m", 1)],
)  # fmt: skip
def test_cpus_are_requested_as_given_and_spark_gets_whole_task_slots(text: str, request_: str, slots: int) -> None:
    assert cpu(text, "spark.executor.cores") == Cpu(request_, slots)
    s = spec({"driver": {"cores": text}, "executor": {"instances": "2", "cores": text}})
    container = render_job(s)["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["requests"]["cpu"] == request_
    conf = conf_of(container["command"])
    assert (conf["spark.kubernetes.executor.request.cores"], conf["spark.executor.cores"]) == (request_, str(slots))
    app = render_spark_application(spec({"launcher": "SparkApplication", "driver": {"cores": text},
                                         "executor": {"cores": text}}, env={"DUCKLAKE_SPARK_VERSION": "4.0.1"}))  # fmt: skip
    for role in ("driver", "executor"):  # cores: spark.*.cores (an int32 >= 1); coreRequest: the pod's request
        assert (app["spec"][role]["cores"], app["spec"][role]["coreRequest"]) == (slots, request_)


def test_spark_settings_made_by_hand_in_conf_still_win() -> None:
    """A request or an overhead set in ``conf`` before the launcher set them stays."""
    conf = {"spark.kubernetes.executor.request.cores": "100m", "spark.executor.memoryOverheadFactor": "0.2"}
    command = render_job(spec({"executor": {"instances": "2"}, "conf": conf}))["spec"]["template"]["spec"]
    got = conf_of(command["containers"][0]["command"])
    assert got["spark.kubernetes.executor.request.cores"] == "100m" and "spark.executor.memoryOverhead" not in got
    assert got["spark.executor.memoryOverheadFactor"] == "0.2"


@pytest.mark.parametrize(
    "spark, env, message",
    [
        ({"driver": {"memory": "2 GiB"}}, {}, "spark.driver.memory: '2 GiB' is not a memory size Spark reads"),
        ({"executor": {"memory": "lots"}}, {}, "spark.executor.memory: 'lots'"),
        (
            {"driver": {"cores": "1.5 CPUs"}},
            {},
            "spark.driver.cores: '1.5 CPUs' is not a CPU amount, such as 2, 0.5 or 500m",
        ),
        ({"driver": {"cores": "-1"}}, {}, "spark.driver.cores: '-1' is not a CPU amount"),
        ({"executor": {"cores": "0.0001"}}, {}, "spark.executor.cores: '0.0001' is not a CPU amount"),
        ({"executor": {"cores": "0m"}}, {}, "spark.executor.cores: '0m' is no CPU at all: request at least 1m"),
        ({"executor": {"cores": "0"}}, {}, "spark.executor.cores: '0' is no CPU at all"),
        ({"executor": {"instances": "-1"}}, {}, "spark.executor.instances: '-1'"),
        ({}, {"DUCKLAKE_JOB_IMAGE": ""}, "no image to run the job in: set spark.image, or DUCKLAKE_JOB_IMAGE"),
    ],
)
def test_settings_that_cannot_be_rendered_are_named(spark: dict[str, Any], env: dict[str, str], message: str) -> None:
    for launcher, render in (("Job", render_job), ("SparkApplication", render_spark_application)):
        with pytest.raises(LaunchFailed) as info:
            render(spec({**spark, "launcher": launcher}, env={"DUCKLAKE_SPARK_VERSION": "4.0.1", **env}))
        assert message in str(info.value)


def test_a_spark_application_needs_a_spark_version() -> None:
    with pytest.raises(LaunchFailed, match="DUCKLAKE_SPARK_VERSION"):
        render_spark_application(dataclasses.replace(spec({"launcher": "SparkApplication"}), spark_version=None))


def job(*conditions: dict[str, str], **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "j"}, "status": {"conditions": list(conditions), **status}}


def test_a_batch_jobs_conditions_map_to_states() -> None:
    assert observe_job({"metadata": {"name": "j"}}).state == "Pending"
    assert observe_job(job(active=1, ready=0)).state == "Pending"  # created, not scheduled or started yet
    assert observe_job(job(active=1, ready=1)).state == "Running"
    assert observe_job(job({"type": "Complete", "status": "True"})).state == "Succeeded"
    assert observe_job(job({"type": "Complete", "status": "False"}, active=1, ready=1)).state == "Running"
    timed_out = observe_job(job({"type": "Failed", "status": "True", "reason": "DeadlineExceeded", "message": "x"}))
    assert timed_out.state == "Failed" and timed_out.message.startswith("timed out")
    failed = observe_job(job({"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                              "message": "Job has reached the specified backoff limit"}))  # fmt: skip
    assert (failed.state, failed.message) == (
        "Failed", "Job j failed (BackoffLimitExceeded: Job has reached the specified backoff limit)")  # fmt: skip


@pytest.mark.parametrize(
    "state, expected",
    [("", "Pending"), ("SUBMITTED", "Pending"), ("RUNNING", "Running"), ("SUCCEEDING", "Running"),
     ("FAILING", "Running"), ("COMPLETED", "Succeeded"), ("FAILED", "Failed"), ("SUBMISSION_FAILED", "Failed")],
)  # fmt: skip
def test_a_spark_applications_state_maps_to_states(state: str, expected: str) -> None:
    app = {"metadata": {"name": "a"}, "status": {"applicationState": {"state": state, "errorMessage": "driver OOM"}}}
    observed = observe_spark_application(app)
    assert observed.state == expected
    assert ("driver OOM" in observed.message) == (expected == "Failed")
    assert observe_spark_application({"metadata": {"name": "a"}}).state == "Pending"


def test_the_programs_last_line_says_how_it_ended() -> None:
    result = {"event": "result", "state": "Failed", "message": "compact sales.orders: boom"}
    lines = ['{"event": "progress", "phase": "writing", "done": 1, "total": 2}', json.dumps(result), '{"event": "res']
    assert last_result(lines) == result and last_result(["not json", "{}"]) is None
    assert observe_finished_program(result, 1, "").message == "compact sales.orders: boom"
    ok = observe_finished_program({**result, "state": "Succeeded", "message": "committed"}, 0, "")
    assert (ok.state, ok.detail["exitCode"]) == ("Succeeded", 0)
    crashed = observe_finished_program(None, 3, "MemoryError")
    assert (crashed.state, crashed.message) == (
        "Failed",
        "the job program exited with code 3 without a result: MemoryError",
    )
    killed = observe_finished_program(None, -9, "")  # in a pod, most often the memory limit
    assert killed.state == "Failed" and "killed (SIGKILL)" in killed.message and "jobs.local.maxRuns" in killed.message
    assert observe_finished_program(None, None, "").state == "Gone"  # after a restart: no exit code, no result


def test_a_run_may_have_sparks_network_policy_back() -> None:
    s = spec({"launcher": "SparkApplication", "conf": {"spark.kubernetes.driver.pod.excludedFeatureSteps": ""}},
             env={"DUCKLAKE_SPARK_VERSION": "4.3.0"})  # fmt: skip
    assert render_spark_application(s)["spec"]["sparkConf"]["spark.kubernetes.driver.pod.excludedFeatureSteps"] == ""


def test_a_runs_conf_sets_the_kubernetes_clients_waits() -> None:
    waits = {"spark.kubernetes.driver.requestTimeout": "5000", "spark.kubernetes.submission.connectionTimeout": "7000"}
    job_conf = conf_of(render_job(spec({"conf": waits}))["spec"]["template"]["spec"]["containers"][0]["command"])
    assert job_conf["spark.kubernetes.driver.requestTimeout"] == "5000"
    assert job_conf["spark.kubernetes.driver.connectionTimeout"] == "60000"  # the one not set keeps the launcher's
    assert "spark.kubernetes.submission.connectionTimeout" in job_conf  # passed on as any conf is
    app = render_spark_application(spec({"launcher": "SparkApplication", "conf": waits},
                                        env={"DUCKLAKE_SPARK_VERSION": "4.3.0"}))  # fmt: skip
    assert {k: app["spec"]["sparkConf"][k] for k in waits} == waits
    assert app["spec"]["sparkConf"]["spark.kubernetes.submission.requestTimeout"] == "60000"
