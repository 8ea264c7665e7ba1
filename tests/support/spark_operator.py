"""The Kubeflow Spark Operator for the tests, from its Go module pinned in
``tests/kube/spark-operator/go.mod``: its CRDs and Helm chart copied out of the module, its
controller binary built from it, both by ``tests/kube/spark-operator/build.sh`` (cached under
``~/.cache`` by version). The CRDs alone need no compiling."""

from __future__ import annotations

import functools
import glob
import os
import subprocess
from pathlib import Path

from support.helm import ROOT
from support.images import Image, build_image
from support.kube_cluster import KubeCluster
from support.operator_process import helm

BUILD = os.path.join(ROOT, "tests", "kube", "spark-operator", "build.sh")
SPARK_APPLICATION_CRD = "sparkapplications.sparkoperator.k8s.io"
CONTAINERFILE = Path(ROOT) / "tests" / "images" / "spark-operator" / "Containerfile"
RELEASE, RELEASE_NS = "spark-operator", "spark-operator"


@functools.cache
def _built(*args: str) -> str:
    """The build's output directory; ``manifests`` for the CRDs and the chart without the binary."""
    out = subprocess.run(["bash", BUILD, *args], capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(f"the Spark Operator's build failed:\n{out.stderr[-4000:]}")
    return out.stdout.strip().splitlines()[-1]


def binary() -> str:
    """The ``spark-operator`` binary (static): ``spark-operator controller start ...``."""
    return os.path.join(_built(), "bin", "spark-operator")


def crd_files() -> list[str]:
    """The module's CRDs (``config/crd/bases``), one file each."""
    return sorted(glob.glob(os.path.join(_built("manifests"), "crds", "*.yaml")))


def crd_file(name: str) -> str:
    """The file of the CRD ``name`` (``<plural>.<group>``, named as controller-gen names it)."""
    plural, group = name.split(".", 1)
    return os.path.join(_built("manifests"), "crds", f"{group}_{plural}.yaml")


def chart_dir() -> str:
    """The module's Helm chart (``charts/spark-operator-chart``)."""
    return os.path.join(_built("manifests"), "chart")


def install_spark_application_crd(cluster: KubeCluster) -> str:
    """The SparkApplication CRD, installed as the Spark Operator's chart would, once Established; its name."""
    (name,) = cluster.install_crds([crd_file(SPARK_APPLICATION_CRD)])
    return name


def image(operator_image: Image) -> Image:
    """The controller's image: its binary on the operator's image (``tests/images/spark-operator``)."""
    return build_image("spark-operator", CONTAINERFILE, Path(binary()).parent, {"OPERATOR_IMAGE": operator_image})


def install(cluster: KubeCluster, controller_image: Image, *args: str) -> None:
    """``helm install`` of the module's chart with that image, as a platform team installs it
    without the mutating webhook (``webhook.enable=false``): the controller alone, for SparkApplications
    in every namespace; then wait for its pod to be Ready."""
    registry, _, rest = controller_image.ref.partition("/")
    repository, tag = rest.rsplit(":", 1)
    helm(
        cluster, "install", RELEASE, chart_dir(), "--namespace", RELEASE_NS, "--create-namespace",
        "--set", f"image.registry={registry}", "--set", f"image.repository={repository}",
        "--set", f"image.tag={tag}", "--set", "image.pullPolicy=Never",
        "--set", "webhook.enable=false", "--set", "spark.jobNamespaces={}",
        "--set", "controller.leaderElection.enable=false", "--set", "controller.uiService.enable=false",
        *args,
    )  # fmt: skip
    cluster.kubectl(
        "-n", RELEASE_NS, "wait", "--for=condition=Available", "deployment", "--all", "--timeout=120s"
    )  # fmt: skip
