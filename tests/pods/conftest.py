"""Pods for real: the test cluster with a node (kubelet, containerd, kube-proxy), the
operator's image built from the Dockerfile and installed with its chart, DuckLakeJob runs
whose drivers and executors are pods, on a PostgreSQL catalog and an S3 lake the pods reach
(``support.pod_env``). The session's environment is started once; each test works in a
namespace of its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.kube_namespace import Kube
from support.pod_env import PodEnv


@pytest.fixture(scope="session")
def pods() -> Iterator[PodEnv]:
    with PodEnv.running() as env:
        yield env


@pytest.fixture
def kube(pods: PodEnv) -> Kube:
    return pods.namespace()


@pytest.fixture
def s3_env(pods: PodEnv, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The node's S3 server for DuckDB and pyarrow in this process."""
    for key, value in pods.s3_env.items():
        monkeypatch.setenv(key, value)
    return pods.s3_env
