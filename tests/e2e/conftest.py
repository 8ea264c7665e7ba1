"""End to end on a real control plane (``support.kube_cluster``: etcd, kube-apiserver and
kube-controller-manager v1.34 built from Go modules; no kubelet, so pods never run).

The chart is installed with ``helm install``, and one operator process runs for the session as
the chart's service account, so the chart's RBAC is all it has: a test whose catalog names a
Secret grants it with ``kube.grant_secrets`` (a ``helm upgrade``). Each test works in a
namespace of its own and drives the operator with kubectl.
"""

from __future__ import annotations

import builtins
import itertools
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from support.kube_cluster import KubeCluster
from support.operator_process import Operator, grant_secrets, install_chart, service_account_kubeconfig
from support.spark_operator import install_spark_application_crd

_counter = itertools.count()


@pytest.fixture(scope="session")
def cluster() -> Iterator[KubeCluster]:
    server = KubeCluster.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def chart(cluster: KubeCluster) -> list[dict[str, Any]]:
    return install_chart(cluster)


@pytest.fixture(scope="session")
def spark_application_crd(cluster: KubeCluster) -> str:
    """The Kubeflow Spark Operator's SparkApplication CRD, installed as its chart would."""
    return install_spark_application_crd(cluster)


@pytest.fixture(scope="session")
def operator(cluster: KubeCluster, chart: list[dict[str, Any]], tmp_path_factory) -> Iterator[Operator]:
    tmp = tmp_path_factory.mktemp("operator")
    kubeconfig = service_account_kubeconfig(cluster, str(tmp / "kubeconfig"))
    # drift every 2 s, policies every second, a health trigger at most every 2 s per table, a
    # failed attempt retried after 1 s (then 2, 4, ...), runs without a launcher run as the operator's children
    op = Operator(kubeconfig, str(tmp / "operator.log"), DUCKLAKE_DRIFT_INTERVAL="2", DUCKLAKE_POLICY_INTERVAL="1",
                  DUCKLAKE_TRIGGER_INTERVAL="2s", DUCKLAKE_RETRY_BACKOFF="1", DUCKLAKE_JOB_LAUNCHER="Local",
                  DUCKLAKE_STATE_DIR=str(tmp / "runs")).start()  # fmt: skip
    try:
        yield op
    finally:
        op.stop()


class Kube:
    """kubectl in one namespace."""

    def __init__(self, cluster: KubeCluster, namespace: str) -> None:
        self.cluster = cluster
        self.namespace = namespace

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> str:
        return self.cluster.kubectl("-n", self.namespace, *args, input=input, check=check)

    def apply(self, *docs: dict[str, Any]) -> str:
        return self.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(list(docs), sort_keys=False))

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        out = self.cluster.kubectl_result("-n", self.namespace, "get", kind, name, "-o", "json")
        if out.returncode != 0:
            if "NotFound" in out.stderr:
                return None
            raise AssertionError(out.stderr)
        return json.loads(out.stdout)

    def list(self, kind: str) -> list[dict[str, Any]]:
        return json.loads(self.kubectl("get", kind, "-o", "json"))["items"]

    def events(self, name: str) -> builtins.list[dict[str, Any]]:  # list: the method above
        items = json.loads(self.kubectl("get", "events", "-o", "json"))["items"]
        return [e for e in items if e["involvedObject"].get("name") == name]

    def delete(self, kind: str, name: str, wait: bool = False) -> None:
        self.kubectl("delete", kind, name, f"--wait={'true' if wait else 'false'}")

    def grant_secrets(self, *names: str) -> None:
        """Let the operator read these Secrets of the namespace, by the chart (``helm upgrade``):
        it may read no other."""
        grant_secrets(self.cluster, self.namespace, *names)


@pytest.fixture
def kube(cluster: KubeCluster) -> Kube:
    namespace = f"t{os.getpid() % 10000}-{next(_counter)}"
    cluster.kubectl("create", "namespace", namespace)
    return Kube(cluster, namespace)
