"""End to end on a real control plane (``support.kube_cluster``: etcd, kube-apiserver and
kube-controller-manager v1.34 built from Go modules; no kubelet, so pods never run).

The chart is installed with ``helm install``, and one operator process runs for these tests as
the chart's service account, so the chart's RBAC is all it has: a test whose catalog names a
Secret grants it with ``kube.grant_secrets`` (a ``helm upgrade``). Each test works in a
namespace of its own and drives the operator with kubectl. The control plane and the operator
stop once the last of these tests has run, not at the end of the session: the operator keeps
every test's catalog on its 2 s drift timer, and the rest of the suite would share the cores
with it (this directory is no package, so pytest's "package" scope would be the session).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support.kube_cluster import KubeCluster
from support.kube_namespace import Kube
from support.operator_process import Operator, install_chart, service_account_kubeconfig
from support.spark_operator import install_spark_application_crd

_counter = itertools.count()
_HERE = Path(__file__).parent
_stops: list[Callable[[], None]] = []  # what the session fixtures started, in order


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After the last test of this directory: stop the operator, then the control plane (the
    fixtures' own teardown at the session's end finds them stopped)."""
    if nextitem is None or _HERE not in nextitem.path.parents:
        while _stops:
            _stops.pop()()


@pytest.fixture(scope="session")
def cluster() -> Iterator[KubeCluster]:
    server = KubeCluster.start()
    _stops.append(server.stop)
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
    # (8 at once: tests hold programs at fault points; the chart's limit is tested on the test node's pods)
    op = Operator(kubeconfig, str(tmp / "operator.log"), DUCKLAKE_DRIFT_INTERVAL="2", DUCKLAKE_POLICY_INTERVAL="1",
                  DUCKLAKE_TRIGGER_INTERVAL="2s", DUCKLAKE_RETRY_BACKOFF="1", DUCKLAKE_JOB_LAUNCHER="Local",
                  DUCKLAKE_LOCAL_MAX_RUNS="8", DUCKLAKE_STATE_DIR=str(tmp / "runs")).start()  # fmt: skip
    _stops.append(op.stop)
    try:
        yield op
    finally:
        op.stop()


@pytest.fixture
def kube(cluster: KubeCluster) -> Kube:
    namespace = f"t{os.getpid() % 10000}-{next(_counter)}"
    cluster.kubectl("create", "namespace", namespace)
    return Kube(cluster, namespace)
