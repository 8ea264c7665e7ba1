"""Third-party test data from the shared directory (never copied into the repository)."""

from __future__ import annotations

import json
import os

import pytest

from support.helm import ROOT
from support.kube_cluster import KubeCluster
from support.operator_process import wait_for

SPARK_APPLICATION_CRD = "sparkapplications.sparkoperator.k8s.io"  # the Kubeflow Spark Operator's


def shared_fixture(name: str) -> str:
    """A file of the shared directory's ``fixtures/``: ``$DUCKLAKE_SHARED``, else a ``shared``
    directory beside the repository or beside one of its parents (a clone may sit deeper)."""
    explicit = os.environ.get("DUCKLAKE_SHARED")
    candidates = [explicit] if explicit else []
    parent = os.path.abspath(ROOT)
    while os.path.dirname(parent) != parent:
        parent = os.path.dirname(parent)
        candidates.append(os.path.join(parent, "shared"))
    for shared in candidates:
        path = os.path.join(shared, "fixtures", name)
        if os.path.isfile(path):
            return path
    pytest.fail(f"test data {name} is missing: looked in {', '.join(candidates)} (set DUCKLAKE_SHARED)")


def install_spark_application_crd(cluster: KubeCluster) -> str:
    """The SparkApplication CRD from ``fixtures/`` of the shared directory, installed as the
    Spark Operator's chart would, once Established; its name. Missing is a failure."""
    path = shared_fixture("sparkoperator.k8s.io_sparkapplications.yaml")
    cluster.kubectl("apply", "--server-side", "-f", path)  # server-side: too large for the last-applied annotation

    def established() -> bool:
        crd = json.loads(cluster.kubectl("get", "crd", SPARK_APPLICATION_CRD, "-o", "json"))
        return any(
            c["type"] == "Established" and c["status"] == "True"
            for c in (crd.get("status") or {}).get("conditions") or []
        )

    wait_for(f"CRD {SPARK_APPLICATION_CRD} established", established, timeout=60)
    return SPARK_APPLICATION_CRD
