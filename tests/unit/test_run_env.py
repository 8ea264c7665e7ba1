"""A run's ``spark.env``: read and checked with the manifest (and the chart's defaults), merged
job over policy over defaults, and rendered on the driver and the executors of both pod
launchers and in the Local launcher's process, values as written."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import pytest

from ducklake_operator.api.load import parse_manifest
from ducklake_operator.api.v1alpha1.job import JobSpec
from ducklake_operator.api.v1alpha1.spark import SparkSettings
from ducklake_operator.controller.launchers.local import LocalLauncher
from ducklake_operator.controller.launchers.render import (
    render_config_map,
    render_job,
    render_spark_application,
)
from ducklake_operator.controller.launchers.settings import SparkDefaults, effective_spark
from ducklake_operator.controller.launchers.spec import LaunchSpec, launch_spec
from ducklake_operator.errors import SpecError
from ducklake_operator.model.run_env import RESERVED, EnvVar, SecretKeyRef

UID = "5f1c2d3e-aaaa-bbbb-cccc-000000000001"
SECRETS = [("DUCKLAKE_CATALOG_USERNAME", "pg", "username"), ("DUCKLAKE_CATALOG_PASSWORD", "pg", "password"),
           ("AWS_ACCESS_KEY_ID", "s3", "username"), ("AWS_SECRET_ACCESS_KEY", "s3", "password")]  # fmt: skip
ENV: list[dict[str, Any]] = [
    {"name": "DUCKLAKE_FAULT_PAUSE", "value": "before_commit"},
    {"name": "GREETING", "value": "costs $(HOME) or $5 and $$"},  # reaches the program as written
    {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "api", "key": "token"}}},
]


def job_manifest(spark: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "ducklake.dev/v1alpha1", "kind": "DuckLakeJob", "metadata": {"name": "j", "namespace": "data"},
            "spec": {"catalogRef": {"name": "lake"}, "table": "main.orders", "operation": "compact",
                     "spark": spark}}  # fmt: skip


def spec(env: list[dict[str, Any]], launcher: str = "Job", instances: str = "2") -> LaunchSpec:
    return launch_spec(
        job_name="j", namespace="data", uid=UID, attempt=1, run_document={"job": {"uid": UID}},
        spark={"launcher": launcher, "executor": {"instances": instances}, "env": env}, env_from_secrets=SECRETS,
        timeout_seconds=None, env={"DUCKLAKE_JOB_IMAGE": "img:1", "DUCKLAKE_SPARK_VERSION": "4.0.1"},
    )  # fmt: skip


def by_name(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    names = [e["name"] for e in entries]
    assert len(names) == len(set(names)), names  # no variable twice
    return {e["name"]: e for e in entries}


def test_a_jobs_env_is_read_with_its_manifest() -> None:
    parsed = parse_manifest(job_manifest({"env": ENV}))
    assert isinstance(parsed, JobSpec) and parsed.spark is not None
    assert parsed.spark.env == (
        EnvVar("DUCKLAKE_FAULT_PAUSE", "before_commit"),
        EnvVar("GREETING", "costs $(HOME) or $5 and $$"),
        EnvVar("TOKEN", secret=SecretKeyRef("api", "token")),
    )
    assert [v.to_json() for v in parsed.spark.env] == ENV


@pytest.mark.parametrize(
    "env, problem",
    [
        ([{"name": "AWS_SECRET_ACCESS_KEY", "value": "x"}], "spec.spark.env[0].name: AWS_SECRET_ACCESS_KEY is set by "
         "the operator and may not be set here: the S3 credentials come from the DuckLakeCatalog's storage.s3."),
        ([{"name": "DUCKLAKE_CATALOG_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "pg", "key": "password"}}}],
         "DUCKLAKE_CATALOG_PASSWORD is set by the operator and may not be set here: the catalog's credentials"),
        ([{"name": "SPARK_LOCAL_IP", "value": "0.0.0.0"}], "SPARK_LOCAL_IP is set by the operator"),
        ([{"name": "DUCKLAKE_REPORT_TO_API", "value": "0"}], "DUCKLAKE_REPORT_TO_API is set by the operator"),
        ([{"name": "1ST", "value": "x"}], "spec.spark.env[0].name: '1ST' is not a valid environment variable name"),
        ([{"value": "x"}], "spec.spark.env[0].name: is required"),
        ([{"name": "A", "value": "1"}, {"name": "A", "value": "2"}], "spec.spark.env[1].name: A is given twice"),
        ([{"name": "A", "value": 1}], "spec.spark.env[0].value: must be a string, got int 1 (quote it)"),
        ([{"name": "A", "value": "1", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
         "spec.spark.env[0]: give value or valueFrom, not both"),
        ([{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}],
         "spec.spark.env[0].valueFrom: must be {secretKeyRef: {name, key}}"),
        ([{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s"}}}],
         "spec.spark.env[0].valueFrom.secretKeyRef.key: is required"),
        ([{"name": "A", "vaule": "x"}], "spec.spark.env[0].vaule: unknown field"),
        ({"A": "x"}, "spec.spark.env: must be a list"),
    ],
)  # fmt: skip
def test_a_variable_the_operator_sets_or_that_cannot_be_is_refused(env: Any, problem: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_manifest(job_manifest({"env": env}))
    assert problem in str(info.value)


def test_the_operators_defaults_are_checked_at_its_start() -> None:
    spark = {"env": [{"name": "A", "value": "a"}]}
    assert SparkDefaults.from_env({"DUCKLAKE_JOB_SPARK": json.dumps(spark)}).env == (EnvVar("A", "a"),)
    bad = {"env": [{"name": "AWS_ACCESS_KEY_ID", "value": "AKIA"}]}
    with pytest.raises(ValueError, match=r"DUCKLAKE_JOB_SPARK \(the chart's jobs.spark\): jobs.spark.env\[0\].name: "
                                         "AWS_ACCESS_KEY_ID is set by the operator"):  # fmt: skip
        SparkDefaults.from_env({"DUCKLAKE_JOB_SPARK": json.dumps(bad)})


def test_a_jobs_variables_replace_its_policys_and_the_operators_of_the_same_name() -> None:
    defaults = SparkDefaults(env=(EnvVar("A", "operator"), EnvVar("B", "operator")))
    policy = SparkSettings(env=(EnvVar("B", "policy"), EnvVar("C", "policy")))
    job = SparkSettings(env=(EnvVar("C", secret=SecretKeyRef("s", "k")), EnvVar("D", "job")))
    assert effective_spark(job, policy, defaults)["env"] == [
        {"name": "A", "value": "operator"}, {"name": "B", "value": "policy"},
        {"name": "C", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}, {"name": "D", "value": "job"},
    ]  # fmt: skip
    assert effective_spark(None, None, SparkDefaults())["env"] == []


def assert_user_env(container_env: list[dict[str, Any]]) -> None:
    env = by_name(container_env)
    assert env["DUCKLAKE_FAULT_PAUSE"] == {"name": "DUCKLAKE_FAULT_PAUSE", "value": "before_commit"}
    # Kubernetes expands $(NAME) and reads $$ as $: doubled, the program gets the value as written
    assert env["GREETING"]["value"] == "costs $$(HOME) or $$5 and $$$$"
    assert env["TOKEN"]["valueFrom"] == {"secretKeyRef": {"name": "api", "key": "token"}}
    assert env["DUCKLAKE_CATALOG_PASSWORD"]["valueFrom"] == {"secretKeyRef": {"name": "pg", "key": "password"}}


def test_the_batch_jobs_driver_and_executors_get_the_variables() -> None:
    s = spec(ENV)
    driver = render_job(s)["spec"]["template"]["spec"]["containers"][0]
    assert_user_env(driver["env"])
    assert by_name(driver["env"])["SPARK_LOCAL_IP"]["value"] == "$(POD_IP)"  # the launcher's own: still expanded
    executor = json.loads(render_config_map(s)["data"]["executor-pod.json"])["spec"]["containers"][0]
    assert_user_env(executor["env"])
    # no executors: Spark in the driver's pod, which has them
    assert_user_env(render_job(spec(ENV, instances="0"))["spec"]["template"]["spec"]["containers"][0]["env"])


def test_the_spark_applications_driver_and_executors_get_the_variables() -> None:
    app = render_spark_application(spec(ENV, launcher="SparkApplication"))["spec"]
    for role in ("driver", "executor"):
        assert "env" not in app[role]  # the webhook's field: applied by the pod templates instead
        assert_user_env(app[role]["template"]["spec"]["containers"][0]["env"])


def test_every_variable_the_pod_launchers_set_is_refused_in_spark_env() -> None:
    s = spec([])
    driver = render_job(s)["spec"]["template"]["spec"]["containers"][0]["env"]
    executor = json.loads(render_config_map(s)["data"]["executor-pod.json"])["spec"]["containers"][0]["env"]
    app = render_spark_application(spec([], launcher="SparkApplication"))["spec"]
    templates = [app[r]["template"]["spec"]["containers"][0]["env"] for r in ("driver", "executor")]
    assert {e["name"] for entries in (driver, executor, *templates) for e in entries} <= set(RESERVED)


def test_the_local_launchers_process_gets_the_variables(tmp_path: Any) -> None:
    """A real child process: its environment as it sees it, the Secret's value read by the operator."""
    show = "import json, os; print(json.dumps({k: os.environ.get(k) for k in ('GREETING', 'TOKEN', 'PATH')}))"
    secrets = {("data", "api", "token"): "s3cr3t", ("data", "pg", "username"): "u", ("data", "pg", "password"): "p",
               ("data", "s3", "username"): "k", ("data", "s3", "password"): "s"}  # fmt: skip
    launcher = LocalLauncher(lambda ns, name, key: secrets[(ns, name, key)], state_dir=str(tmp_path),
                             program=(sys.executable, "-c", show), env={"PATH": "/usr/bin", "GREETING": "inherited"})  # fmt: skip
    launched = launcher.launch(spec(ENV, launcher="Local"))
    deadline = time.time() + 30
    while launcher.observe(launched).state == "Running" and time.time() < deadline:
        time.sleep(0.05)
    with open(launched.detail["log"]) as fh:
        seen = json.loads(fh.read().splitlines()[-1])
    assert seen == {"GREETING": "costs $(HOME) or $5 and $$", "TOKEN": "s3cr3t", "PATH": "/usr/bin"}
