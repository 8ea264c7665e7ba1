"""The Helm chart: helm lint --strict and helm template with a real helm, built-in objects
validated with kubernetes-validate, RBAC exactly what the operator uses."""

from __future__ import annotations

import json
import os
import subprocess

import kubernetes_validate
import pytest
import yaml

from support.helm import ROOT, helm_binary

CHART = os.path.join(ROOT, "charts", "ducklake-operator")
K8S_VERSION = "1.31"


@pytest.fixture(scope="module")
def helm() -> str:
    return helm_binary()


def template(helm: str, *args: str) -> list[dict]:  # type: ignore[type-arg]
    out = subprocess.run(
        [helm, "template", "dl", CHART, "--namespace", "ducklake-system", "--include-crds", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def test_lint_strict(helm: str) -> None:
    for extra in ([], ["--set", "rbac.scope=namespaced", "--set", "watchNamespaces={data,analytics}"]):
        out = subprocess.run([helm, "lint", "--strict", CHART, *extra], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--set", "rbac.scope=namespaced", "--set", "watchNamespaces={data,analytics}"],
        ["--set", "metrics.enabled=false", "--set", "image.tag=1.2.3", "--set", "logLevel=DEBUG"],
    ],
)
def test_rendered_objects_are_valid(helm: str, args: list[str]) -> None:
    docs = template(helm, *args)
    builtin = [d for d in docs if not d["apiVersion"].startswith(("ducklake.dev", "kopf.dev"))]
    for doc in builtin:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    kinds = {d["kind"] for d in docs}
    assert {"Deployment", "ServiceAccount", "CustomResourceDefinition"} <= kinds
    crds = {d["metadata"]["name"] for d in docs if d["kind"] == "CustomResourceDefinition"}
    assert {"ducklaketables.ducklake.dev", "ducklakecatalogs.ducklake.dev", "kopfpeerings.kopf.dev"} <= crds
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert deployment["spec"]["replicas"] == 1
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True


def test_values_schema_rejects_bad_values(helm: str) -> None:
    out = subprocess.run(
        [helm, "template", "dl", CHART, "--set", "rbac.scope=everywhere"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode != 0 and "scope" in out.stderr
    out = subprocess.run(
        [helm, "template", "dl", CHART, "--set", "rbac.scope=namespaced"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode != 0 and "needs watchNamespaces" in out.stderr


def test_rbac_is_least_privilege(helm: str) -> None:
    cluster = next(d for d in template(helm) if d["kind"] == "ClusterRole")
    rules = {(tuple(r["apiGroups"]), tuple(r["resources"])): set(r["verbs"]) for r in cluster["rules"]}
    assert rules[(("",), ("secrets",))] == {"get"}
    assert rules[(("",), ("events",))] == {"create"}
    assert all("delete" not in v and "create" not in v for k, v in rules.items() if k[0] == ("ducklake.dev",))
    assert all("*" not in r["verbs"] and "*" not in r["resources"] for r in cluster["rules"])
    namespaced = template(helm, "--set", "rbac.scope=namespaced", "--set", "watchNamespaces={data,analytics}")
    assert not [d for d in namespaced if d["kind"].startswith("Cluster") and d["kind"] != "ClusterKopfPeering"]
    assert sorted(d["metadata"]["namespace"] for d in namespaced if d["kind"] == "Role") == ["analytics", "data"]
    args = next(d for d in namespaced if d["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--namespace=data" in args and "--namespace=analytics" in args


def test_chart_defaults_match_the_dockerfile(helm: str) -> None:
    dockerfile = open(os.path.join(ROOT, "Dockerfile")).read()
    deployment = next(d for d in template(helm) if d["kind"] == "Deployment")
    spec = deployment["spec"]["template"]["spec"]
    assert f"USER {spec['securityContext']['runAsUser']}" in dockerfile
    assert spec["containers"][0]["command"] == ["ducklake-operator"]
    values = yaml.safe_load(open(os.path.join(CHART, "values.yaml")))
    assert f"EXPOSE {values['probes']['port']} {values['metrics']['port']}" in dockerfile
    json.loads(open(os.path.join(CHART, "values.schema.json")).read())
