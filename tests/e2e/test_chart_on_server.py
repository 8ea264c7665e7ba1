"""The Helm chart: helm lint --strict, every rendering accepted by the real API server
(server-side dry run), values.schema.json refusing bad values, and the RBAC the installed
chart grants checked with ``kubectl auth can-i`` as its service account, and for Secrets with
the service account's own requests too."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from typing import Any

import pytest
import yaml
from kubernetes import config, watch
from kubernetes.client import CoreV1Api
from kubernetes.client.exceptions import ApiException

import ducklake_operator
from ducklake_operator.api.v1alpha1.spark import SparkSettings
from ducklake_operator.controller.launchers.local_spare import WARM_SPARE_ENV, warm_spare_enabled
from ducklake_operator.controller.launchers.render import CONTAINER_SECURITY, POD_SECURITY, PROGRAM
from ducklake_operator.controller.launchers.settings import SparkDefaults, effective_spark
from ducklake_operator.controller.launchers.spec import (
    DRIVER_CORES,
    DRIVER_MEMORY,
    EXECUTOR_CORES,
    EXECUTOR_INSTANCES,
    EXECUTOR_MEMORY,
)
from support.helm import ROOT, helm_binary
from support.operator_process import (
    CHART,
    RELEASE_NS,
    SERVICE_ACCOUNT,
    dump,
    grant_secrets,
    render_chart,
    service_account_kubeconfig,
)

NAMESPACED = ["--set", "rbac.scope=namespaced", "--set", "watchNamespaces={data,analytics}"]


def test_lint_strict() -> None:
    for extra in ([], NAMESPACED):
        out = subprocess.run([helm_binary(), "lint", "--strict", CHART, *extra], capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize(
    "args",
    [
        [],
        NAMESPACED,
        ["--set", "metrics.enabled=false", "--set", "image.tag=1.2.3", "--set", "logLevel=DEBUG"],
        [*NAMESPACED, "--set", "jobs.serviceAccount.create=true"],
        ["--set", "rbac.catalogSecrets.data={lake-pg,lake-s3}", "--set", "rbac.catalogSecrets.analytics={pg}"],
        [*NAMESPACED, "--set", "rbac.catalogSecrets.analytics={pg}"],
    ],
    ids=["default", "namespaced", "no-metrics", "job-service-account", "catalog-secrets", "namespaced-secrets"],
)
def test_every_rendering_is_accepted_by_the_api_server(cluster, chart, args: list[str]) -> None:
    for namespace in ("data", "analytics"):
        cluster.kubectl("create", "namespace", namespace, check=False)
    docs = [d for d in render_chart(*args) if d["kind"] != "CustomResourceDefinition"]
    # the session's release is installed by helm (its field manager): a dry run may take its fields
    out = cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-", input=dump(docs)
    )
    assert out.count("(server dry run)") == len(docs)
    kinds = {d["kind"] for d in docs}
    assert {"Deployment", "ServiceAccount", "Service"} <= kinds or "metrics.enabled=false" in args
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert deployment["spec"]["replicas"] == 1 and container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True


def test_the_chart_crds_are_the_repository_crds(chart) -> None:
    crds = {d["metadata"]["name"] for d in chart if d["kind"] == "CustomResourceDefinition"}
    assert {"ducklaketables.ducklake.dev", "ducklakecatalogs.ducklake.dev", "kopfpeerings.kopf.dev"} <= crds


def test_values_schema_rejects_bad_values() -> None:
    for args, message in ((["--set", "rbac.scope=everywhere"], "scope"),
                          (["--set", "rbac.scope=namespaced"], "needs watchNamespaces"),
                          (["--set", "jobs.spark.launcher=Yarn"], "launcher"),
                          (["--set", "jobs.spark.executor.memory=lots"], "memory"),
                          (["--set", "jobs.spark.driver.gpus=1"], "gpus"),
                          (["--set", "jobs.local.maxRuns=0"], "maxRuns"),
                          (["--set", "jobs.local.warmSpare=maybe"], "warmSpare"),
                          # an empty resourceNames would allow every Secret of the namespace
                          (["--set-json", "rbac.catalogSecrets.data=[]"], "minItems"),
                          (["--skip-schema-validation", "--set-json", "rbac.catalogSecrets.data=[]"], "names no Secret"),
                          (["--set", "rbac.catalogSecrets.Data={pg}"], "Data"),
                          (["--set", "rbac.catalogSecrets.data={Not_A_Name}"], "Not_A_Name"),
                          (["--set", "rbac.catalogSecrets.data=pg"], "want array"),
                          ([*NAMESPACED, "--set", "rbac.catalogSecrets.elsewhere={pg}"],
                           "the operator does not watch namespace elsewhere"),
                          (["--set", "watchNamespaces={data}", "--set", "rbac.catalogSecrets.elsewhere={pg}"],
                           "the operator does not watch namespace elsewhere")):  # fmt: skip
        out = subprocess.run([helm_binary(), "template", "dl", CHART, *args], capture_output=True, text=True)
        assert out.returncode != 0 and message in out.stderr


def can_i(cluster, verb: str, resource: str, namespace: str | None = "data", account: str = SERVICE_ACCOUNT,
          account_namespace: str = RELEASE_NS) -> bool:  # fmt: skip
    """``kubectl auth can-i``; ``namespace`` None: cluster-scoped, "*": in every namespace (-A);
    ``resource`` "x/status": a subresource, "secrets:lake-pg": one object by name."""
    where = ["-A"] if namespace == "*" else ["-n", namespace] if namespace else []
    resource, _, name = resource.partition(":")
    resource, _, subresource = resource.partition("/")  # kubectl reads "x/status" as the object named status
    sub = [f"--subresource={subresource}"] if subresource else []
    target = f"{resource}/{name}" if name else resource
    out = cluster.kubectl_result(
        "auth", "can-i", verb, target, *sub, *where, f"--as=system:serviceaccount:{account_namespace}:{account}"
    )
    assert out.stdout.strip() in ("yes", "no"), out.stderr
    return out.stdout.strip() == "yes"


def test_the_installed_rbac_is_what_the_operator_needs_and_no_more(cluster, chart, spark_application_crd) -> None:
    cluster.kubectl("create", "namespace", "data", check=False)
    allowed = [
        ("watch", "ducklaketables.ducklake.dev"),
        ("patch", "ducklaketables.ducklake.dev"),
        ("patch", "ducklaketables.ducklake.dev/status"),
        ("patch", "ducklakeschemas.ducklake.dev/status"),
        ("patch", "ducklakecatalogs.ducklake.dev/status"),
        ("create", "events"),
        ("list", "customresourcedefinitions.apiextensions.k8s.io"),
        # maintenance: policies create their runs and trim their history; runs tick on status
        ("create", "ducklakejobs.ducklake.dev"),
        ("delete", "ducklakejobs.ducklake.dev"),
        ("watch", "ducklakemaintenancepolicies.ducklake.dev"),
        ("patch", "ducklakejobs.ducklake.dev/status"),
        ("patch", "ducklakemaintenancepolicies.ducklake.dev/status"),
        # what runs launch, and the Leases that lock tables
        ("create", "jobs.batch"),
        ("delete", "jobs.batch"),
        ("watch", "jobs.batch"),
        ("create", "sparkapplications.sparkoperator.k8s.io"),
        ("delete", "sparkapplications.sparkoperator.k8s.io"),
        ("get", "sparkapplications.sparkoperator.k8s.io"),
        ("create", "configmaps"),
        ("delete", "configmaps"),
        ("list", "pods"),  # an attempt has stopped once its pods have
        ("create", "leases.coordination.k8s.io"),
        ("update", "leases.coordination.k8s.io"),
        ("delete", "leases.coordination.k8s.io"),
    ]
    denied = [
        ("delete", "ducklaketables.ducklake.dev"),
        ("create", "ducklaketables.ducklake.dev"),
        ("update", "ducklakecatalogs.ducklake.dev"),
        # no Secret unless rbac.catalogSecrets names it (none in data)
        ("get", "secrets"),
        ("get", "secrets:lake-pg"),
        ("list", "secrets"),
        ("watch", "secrets"),
        ("watch", "secrets:lake-pg"),
        ("create", "secrets"),
        ("delete", "secrets"),
        ("patch", "secrets"),
        ("create", "pods"),
        ("delete", "events"),
        ("create", "customresourcedefinitions.apiextensions.k8s.io"),
        ("update", "ducklakejobs.ducklake.dev"),
        ("patch", "jobs.batch"),
        ("patch", "sparkapplications.sparkoperator.k8s.io"),
        ("update", "configmaps"),
        ("list", "configmaps"),
        ("patch", "leases.coordination.k8s.io"),
        ("create", "services"),
        ("*", "*"),
    ]
    assert [(v, r) for v, r in allowed if not can_i(cluster, v, r)] == []
    assert [(v, r) for v, r in denied if can_i(cluster, v, r)] == []
    assert not any(can_i(cluster, verb, "secrets", "*") for verb in ("get", "list", "watch"))
    assert can_i(cluster, "patch", "clusterkopfpeerings.kopf.dev", namespace=None)
    assert not can_i(cluster, "delete", "clusterkopfpeerings.kopf.dev", namespace=None)


def test_the_operator_may_read_the_secrets_the_chart_grants_and_no_other(cluster, chart, tmp_path) -> None:
    """rbac.catalogSecrets, granted by ``helm upgrade`` of the installed release: get and a
    watch by name of exactly those Secrets, asked of the API server (can-i) and done with the
    service account's own token; no other Secret, no list, and the Jobs it launches still get
    credentials by secretKeyRef."""
    for namespace in ("lakes", "unlisted"):
        cluster.kubectl("create", "namespace", namespace, check=False)
        for name in ("lake-pg", "lake-s3", "unrelated"):
            cluster.kubectl(
                "-n", namespace, "create", "secret", "generic", name, "--from-literal=password=pw-of-" + name
            )
    grant_secrets(cluster, "lakes", "lake-pg", "lake-s3")
    role = json.loads(cluster.kubectl("-n", "lakes", "get", "role", f"{SERVICE_ACCOUNT}-secrets", "-o", "json"))
    assert role["rules"] == [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["lake-pg", "lake-s3"],
                              "verbs": ["get", "watch"]}]  # fmt: skip

    allowed = [("get", "secrets:lake-pg"), ("get", "secrets:lake-s3"), ("watch", "secrets:lake-pg")]
    denied = [("get", "secrets:unrelated"), ("watch", "secrets:unrelated"), ("get", "secrets"), ("list", "secrets"),
              ("watch", "secrets"), ("list", "secrets:lake-pg"), ("update", "secrets:lake-pg"),
              ("patch", "secrets:lake-pg"), ("delete", "secrets:lake-pg")]  # fmt: skip
    assert [(v, r) for v, r in allowed if not can_i(cluster, v, r, "lakes")] == []
    assert [(v, r) for v, r in denied if can_i(cluster, v, r, "lakes")] == []
    assert not any(can_i(cluster, "get", f"secrets:{n}", "unlisted") for n in ("lake-pg", "lake-s3", "unrelated"))
    assert not any(can_i(cluster, verb, "secrets", "*") for verb in ("get", "list", "watch"))

    # what the operator's SecretStore does, as the service account: get, then watch by name
    api = CoreV1Api(
        config.new_client_from_config(config_file=service_account_kubeconfig(cluster, str(tmp_path / "kc")))
    )

    def refused(call: Any) -> str:
        with pytest.raises(ApiException) as caught:
            call()
        assert caught.value.status == 403
        return str(json.loads(caught.value.body or "{}").get("message"))

    secret = api.read_namespaced_secret("lake-pg", "lakes")
    events = watch.Watch().stream(api.list_namespaced_secret, "lakes", field_selector="metadata.name=lake-pg",
                                  resource_version="", timeout_seconds=1)  # fmt: skip
    assert [(e["type"], e["object"].metadata.name) for e in events] == [("ADDED", "lake-pg")]
    since = secret.metadata.resource_version
    cluster.kubectl("-n", "lakes", "patch", "secret", "lake-pg", "-p", '{"stringData": {"password": "rotated"}}')
    events = watch.Watch().stream(api.list_namespaced_secret, "lakes", field_selector="metadata.name=lake-pg",
                                  resource_version=since, timeout_seconds=1)  # fmt: skip
    assert [e["type"] for e in events] == ["MODIFIED"]
    assert "cannot get resource" in refused(lambda: api.read_namespaced_secret("unrelated", "lakes"))
    assert "cannot get resource" in refused(lambda: api.read_namespaced_secret("lake-pg", "unlisted"))
    assert "cannot list resource" in refused(lambda: api.list_namespaced_secret("lakes"))
    assert "cannot list resource" in refused(
        lambda: api.list_namespaced_secret("lakes", field_selector="metadata.name=lake-pg")
    )
    assert "cannot list resource" in refused(lambda: api.list_secret_for_all_namespaces())
    assert "cannot watch resource" in refused(
        lambda: list(watch.Watch().stream(api.list_namespaced_secret, "lakes", timeout_seconds=1))
    )
    assert "cannot watch resource" in refused(lambda: list(watch.Watch().stream(
        api.list_namespaced_secret, "lakes", field_selector="metadata.name=unrelated", timeout_seconds=1)))  # fmt: skip

    # a run's Job refers to its Secrets (secretKeyRef) without the right to read them
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "run-1", "namespace": "lakes"},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "driver", "image": "x", "env": [
               {"name": "PGPASSWORD", "valueFrom": {"secretKeyRef": {"name": "unrelated", "key": "password"}}}]}]}}}}  # fmt: skip
    out = cluster.kubectl("create", "--dry-run=server", "-f", "-", f"--as=system:serviceaccount:{RELEASE_NS}:{SERVICE_ACCOUNT}",
                          input=json.dumps(job))  # fmt: skip
    assert "job.batch/run-1 created (server dry run)" in out


def test_namespaced_rbac_grants_only_the_watched_namespaces(cluster, chart) -> None:
    """A second release, namespaced: its service account may act in data and analytics only."""
    for namespace in ("data", "analytics", "elsewhere"):
        cluster.kubectl("create", "namespace", namespace, check=False)
    docs = [
        d
        for d in render_chart(*NAMESPACED, release="scoped")
        if d["kind"] not in ("CustomResourceDefinition", "Deployment", "Service")
    ]
    cluster.kubectl("apply", "--server-side", "-f", "-", input=dump(docs))
    account = next(d["metadata"]["name"] for d in docs if d["kind"] == "ServiceAccount")
    assert can_i(cluster, "patch", "ducklaketables.ducklake.dev", "data", account)
    assert not can_i(cluster, "patch", "ducklaketables.ducklake.dev", "elsewhere", account)
    assert not any(can_i(cluster, "get", "secrets", namespace, account) for namespace in ("data", "analytics"))
    assert can_i(cluster, "list", "customresourcedefinitions.apiextensions.k8s.io", None, account)
    assert not can_i(cluster, "patch", "customresourcedefinitions.apiextensions.k8s.io", None, account)
    args = next(d for d in render_chart(*NAMESPACED) if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert {"--namespace=data", "--namespace=analytics"} <= set(args["containers"][0]["args"])
    cluster_wide = [d for d in docs if d["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    assert all(r["resources"] == ["customresourcedefinitions"] for d in cluster_wide for r in d.get("rules", []))

    # the Secrets of a watched namespace that rbac.catalogSecrets names, and only those
    granting = [*NAMESPACED, "--set", "rbac.catalogSecrets.analytics={lake-pg}"]
    secret_rbac = [
        d
        for d in render_chart(*granting, release="scoped")
        if d["metadata"]["name"] == "scoped-ducklake-operator-secrets"
    ]
    assert {(d["kind"], d["metadata"]["namespace"]) for d in secret_rbac} == {
        ("Role", "analytics"),
        ("RoleBinding", "analytics"),
    }
    cluster.kubectl("apply", "--server-side", "-f", "-", input=dump(secret_rbac))
    assert can_i(cluster, "get", "secrets:lake-pg", "analytics", account)
    assert can_i(cluster, "watch", "secrets:lake-pg", "analytics", account)
    assert not any(can_i(cluster, verb, resource, namespace, account) for verb, resource, namespace in
                   [("get", "secrets:lake-pg", "data"), ("get", "secrets:lake-s3", "analytics"),
                    ("list", "secrets", "analytics"), ("watch", "secrets", "analytics"), ("list", "secrets", "*")])  # fmt: skip


def test_the_job_service_account_may_do_what_a_spark_driver_does_and_no_more(
    cluster, chart, spark_application_crd
) -> None:
    """Off by default; enabled, in the namespaces runs run in: executors' pods, services,
    configmaps, volume claims, and the run's own status, nothing else."""
    assert not [d for d in render_chart() if d["metadata"]["name"].endswith("-job")]
    for namespace in ("data", "elsewhere"):
        cluster.kubectl("create", "namespace", namespace, check=False)
    enabled = ["--set", "jobs.serviceAccount.create=true", "--set", "jobs.serviceAccount.namespaces={data}"]
    docs = [d for d in render_chart(*enabled) if d["kind"] in ("ServiceAccount", "Role", "RoleBinding")
            and d["metadata"]["name"] == f"{SERVICE_ACCOUNT}-job"]  # fmt: skip
    assert {(d["kind"], d["metadata"]["namespace"]) for d in docs} == {
        ("ServiceAccount", "data"), ("Role", "data"), ("RoleBinding", "data")}  # fmt: skip
    cluster.kubectl("apply", "--server-side", "-f", "-", input=dump(docs))

    def job_can(verb: str, resource: str, namespace: str = "data") -> bool:
        return can_i(cluster, verb, resource, namespace, f"{SERVICE_ACCOUNT}-job", account_namespace="data")

    allowed = [(verb, resource) for resource in ("pods", "services", "configmaps", "persistentvolumeclaims")
               for verb in ("create", "get", "list", "watch", "delete", "deletecollection")]  # fmt: skip
    allowed.append(("patch", "ducklakejobs.ducklake.dev/status"))
    denied = [("get", "secrets"), ("list", "secrets"), ("watch", "secrets"), ("patch", "ducklakejobs.ducklake.dev"), ("get", "ducklakejobs.ducklake.dev"),
              ("create", "jobs.batch"), ("create", "sparkapplications.sparkoperator.k8s.io"),
              ("patch", "ducklaketables.ducklake.dev/status"), ("create", "pods/exec"), ("create", "roles.rbac.authorization.k8s.io")]  # fmt: skip
    assert [(v, r) for v, r in allowed if not job_can(v, r)] == []
    assert [(v, r) for v, r in denied if job_can(v, r)] == []
    assert not job_can("create", "pods", "elsewhere")
    # an executor's credentials come from secretKeyRef: creating such a pod needs no Secret read
    executor = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "executor-1", "namespace": "data"},
                "spec": {"containers": [{"name": "executor", "image": "spark", "env": [
                    {"name": "AWS_SECRET_ACCESS_KEY", "valueFrom": {"secretKeyRef": {"name": "lake-s3", "key": "password"}}}]}]}}  # fmt: skip
    out = cluster.kubectl("create", "--dry-run=server", "-f", "-", f"--as=system:serviceaccount:data:{SERVICE_ACCOUNT}-job",
                          input=json.dumps(executor))  # fmt: skip
    assert "pod/executor-1 created (server dry run)" in out


@pytest.mark.parametrize(
    "args, account",
    [([], None), (["--set", "jobs.serviceAccount.create=true"], f"{SERVICE_ACCOUNT}-job"),
     (["--set", "jobs.serviceAccount.create=true", "--set", "jobs.serviceAccount.name=spark"], "spark")],
    ids=["off", "on", "named"],
)  # fmt: skip
def test_the_operator_gives_its_own_image_and_the_job_service_account_to_runs(
    args: list[str], account: str | None
) -> None:
    docs = render_chart(*args, "--set", "image.tag=1.2.3")
    container = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["DUCKLAKE_JOB_IMAGE"] == container["image"] == "ghcr.io/ducklake-operator/ducklake-operator:1.2.3"
    # the chart's defaults for runs are the operator's (the launchers' own fallbacks agree)
    defaults = SparkDefaults.from_env({k: v for k, v in env.items() if v is not None})
    assert (defaults.launcher, defaults.in_process_below) == ("Job", None)
    assert dict(defaults.driver) == {"cores": str(DRIVER_CORES), "memory": DRIVER_MEMORY}
    assert dict(defaults.executor) == {"instances": EXECUTOR_INSTANCES, "cores": EXECUTOR_CORES,
                                       "memory": EXECUTOR_MEMORY}  # fmt: skip
    assert env.get("DUCKLAKE_JOB_SERVICE_ACCOUNT") == account
    if account:  # created where runs run: the release namespace unless watchNamespaces say otherwise
        assert [(d["kind"], d["metadata"]["namespace"]) for d in docs if d["metadata"]["name"] == account] == [
            ("ServiceAccount", RELEASE_NS), ("Role", RELEASE_NS), ("RoleBinding", RELEASE_NS)]  # fmt: skip
    watched = render_chart(*args, *NAMESPACED)
    assert {d["metadata"]["namespace"] for d in watched if d["kind"] == "ServiceAccount" and
            d["metadata"]["name"] == account} == ({"data", "analytics"} if account else set())  # fmt: skip


def test_the_charts_spark_values_reach_every_run() -> None:
    docs = render_chart("--set", "jobs.spark.launcher=SparkApplication", "--set", "jobs.spark.inProcessBelow=64MB",
                        "--set", "jobs.spark.executor.instances=4", "--set", "jobs.spark.conf.spark\\.ui\\.enabled=false",
                        "--set", "jobs.spark.sparkVersion=4.0.1")  # fmt: skip
    container = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    defaults = SparkDefaults.from_env(env)
    assert defaults.launcher == "SparkApplication" and defaults.in_process_below == 64_000_000
    assert dict(defaults.executor)["instances"] == "4" and dict(defaults.conf) == {"spark.ui.enabled": "false"}
    assert env["DUCKLAKE_SPARK_VERSION"] == "4.0.1"
    assert env["DUCKLAKE_LOCAL_MAX_RUNS"] == "2"  # the Local launcher's programs in the operator's pod
    assert warm_spare_enabled(env[WARM_SPARE_ENV])  # on unless the chart turns it off
    off = next(d for d in render_chart("--set", "jobs.local.warmSpare=false") if d["kind"] == "Deployment")
    off_env = {e["name"]: e.get("value") for e in off["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert not warm_spare_enabled(off_env[WARM_SPARE_ENV])
    spark = effective_spark(SparkSettings(executor=(("memory", "8g"),)), None, defaults)
    assert spark["launcher"] == "SparkApplication" and spark["executor"]["memory"] == "8g"
    assert spark["executor"]["instances"] == "4" and spark["inProcessBelow"] == 64_000_000


def test_chart_defaults_match_the_dockerfile() -> None:
    dockerfile = open(os.path.join(ROOT, "Dockerfile")).read()
    deployment = next(d for d in render_chart() if d["kind"] == "Deployment")
    spec = deployment["spec"]["template"]["spec"]
    assert f"USER {spec['securityContext']['runAsUser']}" in dockerfile
    assert spec["containers"][0]["command"] == ["ducklake-operator"]
    values = yaml.safe_load(open(os.path.join(CHART, "values.yaml")))
    assert f"EXPOSE {values['probes']['port']} {values['metrics']['port']}" in dockerfile
    # launched pods run as the operator's does, the job program the Dockerfile puts in place
    assert POD_SECURITY == spec["securityContext"]
    assert CONTAINER_SECURITY.items() <= spec["containers"][0]["securityContext"].items()
    assert f"COPY docker/run_job.py docker/spark-entrypoint.sh {os.path.dirname(PROGRAM)}/" in dockerfile
    assert 'ENTRYPOINT ["/opt/ducklake/spark-entrypoint.sh"]' in dockerfile


def test_the_chart_carries_the_project_version() -> None:
    """pyproject.toml is the version's one home: the chart's version and appVersion (its image
    tag by default, its pods' version label) are the same, and so is the installed package's."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        project = tomllib.load(fh)["project"]["version"]
    with open(os.path.join(CHART, "Chart.yaml")) as fh:
        chart = yaml.safe_load(fh)
    assert chart["appVersion"] == chart["version"] == project == ducklake_operator.__version__
    deployment = next(d for d in render_chart() if d["kind"] == "Deployment")
    assert deployment["metadata"]["labels"]["app.kubernetes.io/version"] == project
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"].endswith(f":{project}")
