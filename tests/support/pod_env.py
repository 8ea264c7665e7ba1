"""The operator as a platform team runs it, on a node that runs pods: the test cluster with
its node (``support.kube_node``), the images built from the repository (``support.images``)
and imported there, a PostgreSQL server and an S3 server inside the node's network (where
pods reach them; the tests reach them through the server's unix socket and a forwarded
port), and the chart installed with ``helm install`` and the operator's image. Used by the
pod tests (``tests/pods``) and ``bench/pods.py``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import duckdb

from ducklake_operator.catalog import CatalogLocation
from ducklake_operator.duckdb_client import configure_s3
from support import duck, spark_operator
from support.images import Image, operator_image, pause_image
from support.kube_cluster import KubeCluster
from support.kube_namespace import Kube
from support.kube_node import NODE_IP, KubeNode, start_cluster_with_node
from support.manifests import manifest
from support.operator_process import CHART, RELEASE, RELEASE_NS, helm, install_chart, is_ready, wait_for
from support.pgserver import PgServer
from support.s3server import S3Server

PG_PORT, S3_PORT = 5432, 9000
BUCKET = "lake"
S3_KEYS = {"username": "test-key", "password": "test-secret"}  # the access key id and secret (moto takes any)
PG_PASSWORD = "Node-Pa55word"


@dataclass
class PodEnv:
    cluster: KubeCluster
    node: KubeNode
    image: Image
    pg: PgServer
    s3: S3Server
    namespaces: int = 0
    chart_values: list[str] = field(default_factory=list)
    spark_operator_image: Image | None = None

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    @contextmanager
    def running(cls, *chart_args: str) -> Iterator[PodEnv]:
        image, pause = operator_image(), pause_image()
        cluster, node = start_cluster_with_node([str(pause.archive), str(image.archive)], pause.ref)
        pg = s3 = None
        try:
            pg = PgServer.start(listen=NODE_IP, port=PG_PORT, wrap=node.nsenter)
            s3 = S3Server.start(listen=NODE_IP, wrap=node.nsenter, forward=node.forward)
            env = cls(cluster, node, image, pg, s3)
            env.s3_bucket(BUCKET)
            env.install(*chart_args)
            yield env
        finally:
            if s3 is not None:
                s3.stop()
            if pg is not None:
                pg.stop()
            node.stop()
            cluster.stop()

    def install(self, *chart_args: str) -> None:
        """``helm install`` of the chart with the image built here (never pulled: there is no
        registry), as users install it, then wait for the operator's pod to be Ready (its
        probes)."""
        repository, tag = self.image.ref.rsplit(":", 1)
        self.chart_values = [
            "--set", f"image.repository={repository}", "--set", f"image.tag={tag}",
            "--set", "image.pullPolicy=Never", "--set", "jobs.serviceAccount.create=true",
            "--set-json", f"jobs.serviceAccount.namespaces={json.dumps([RELEASE_NS])}", *chart_args,
        ]  # fmt: skip
        install_chart(self.cluster, *self.chart_values)
        self.wait_operator_ready()

    def install_spark_operator(self) -> Image:
        """The Kubeflow Spark Operator (its chart and controller from its Go module, no webhook),
        once; its image."""
        if self.spark_operator_image is None:
            image = spark_operator.image(self.image)
            self.node.import_image(str(image.archive))
            spark_operator.install(self.cluster, image)
            self.spark_operator_image = image
        return self.spark_operator_image

    def wait_operator_ready(self, timeout: float = 120) -> dict[str, Any]:
        def ready() -> dict[str, Any] | None:
            for pod in self.operator_pods():
                if pod["metadata"].get("deletionTimestamp"):
                    continue
                conditions = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions") or []}
                if conditions.get("Ready") == "True":
                    return pod
            return None

        return wait_for("the operator's pod Ready", ready, timeout=timeout, interval=0.5)

    def operator_pods(self) -> list[dict[str, Any]]:
        out = self.cluster.kubectl(
            "-n", RELEASE_NS, "get", "pods", "-l", f"app.kubernetes.io/instance={RELEASE}", "-o", "json"
        )
        return list(json.loads(out)["items"])

    def operator_tmp(self) -> list[str]:
        """What the operator pod's /tmp (its emptyDir: the Local launcher's runs) holds, two
        levels deep, relative to it: read on the node, as the kubelet keeps the volume."""
        uid = self.operator_pods()[0]["metadata"]["uid"]
        root = f"{self.node.directory}/kubelet/pods/{uid}/volumes/kubernetes.io~empty-dir/tmp"
        found = self.node.run("find", root, "-mindepth", "1", "-maxdepth", "2").stdout.splitlines()
        return sorted(os.path.relpath(path, root) for path in found)

    def operator_exec(self, *command: str) -> str:
        """``command``'s output in the operator's running container (``kubectl exec``)."""
        pod = self.wait_operator_ready()["metadata"]["name"]
        return self.cluster.kubectl("-n", RELEASE_NS, "exec", pod, "--", *command)

    def operator_log(self) -> str:
        return self.cluster.kubectl("-n", RELEASE_NS, "logs", f"deployment/{RELEASE}-ducklake-operator", check=False)

    # ------------------------------------------------------------------ servers

    def s3fs(self) -> Any:
        """pyarrow's S3 filesystem on the node's S3 server (through the forwarded port)."""
        import pyarrow.fs as pafs

        return pafs.S3FileSystem(
            access_key=S3_KEYS["username"], secret_key=S3_KEYS["password"], region="us-east-1",
            endpoint_override=self.s3.endpoint.split("://")[1], scheme="http", allow_bucket_creation=True,
        )  # fmt: skip

    def s3_bucket(self, name: str) -> None:
        self.s3fs().create_dir(name)

    def namespace(self) -> Kube:
        """A new namespace where runs may run: the chart's job service account is put there (a
        ``helm upgrade`` adding it to ``jobs.serviceAccount.namespaces``, as a platform team does)."""
        self.namespaces += 1
        name = f"p{os.getpid() % 10000}-{self.namespaces}"
        self.cluster.kubectl("create", "namespace", name)
        values = json.loads(helm(self.cluster, "get", "values", RELEASE, "--namespace", RELEASE_NS, "--output", "json"))
        listed = ((values or {}).get("jobs") or {}).get("serviceAccount", {}).get("namespaces") or []
        helm(self.cluster, "upgrade", RELEASE, CHART, "--namespace", RELEASE_NS, "--reuse-values", "--history-max=3",
             "--set-json", f"jobs.serviceAccount.namespaces={json.dumps([*listed, name])}")  # fmt: skip
        return Kube(self.cluster, name)

    def lake(self, kube: Kube, name: str = "lake", **spec: Any) -> CatalogLocation:
        """A PostgreSQL catalog whose password is only in a Secret, and an S3 lake in the node's
        servers, Ready; where the tests find its catalog (the server's unix socket)."""
        role = f"{kube.namespace.replace('-', '_')}_{name}"
        self.pg.create_password_role(role, PG_PASSWORD)
        self.pg.create_database(role, owner=role)
        kube.apply(
            secret(f"{name}-pg", username=role, password=PG_PASSWORD),
            secret(f"{name}-s3", **S3_KEYS),
        )
        kube.grant_secrets(f"{name}-pg", f"{name}-s3")
        kube.apply(
            manifest(
                "DuckLakeCatalog",
                name,
                {
                    "metadata": {"postgres": {"host": NODE_IP, "port": PG_PORT, "database": role,
                                              "credentialsSecretRef": {"name": f"{name}-pg"}}},
                    "dataPath": f"s3://{BUCKET}/{kube.namespace}/{name}/",
                    "storage": {"s3": {"endpoint": self.s3.served_at, "region": "us-east-1", "urlStyle": "path",
                                       "credentialsSecretRef": {"name": f"{name}-s3"}}},
                    **spec,
                },
            )
        )  # fmt: skip
        wait_for(f"catalog {name} Ready", lambda: is_ready(kube.get("ducklakecatalog", name)), timeout=60)
        return CatalogLocation(kind="postgres", host=self.pg.host, port=self.pg.port, database=role, user=role,
                               password=PG_PASSWORD)  # fmt: skip

    @property
    def s3_env(self) -> dict[str, str]:
        """The tests' own S3 settings (DuckDB and pyarrow on this machine) for the node's server."""
        return self.s3.env

    def duckdb(self, location: CatalogLocation) -> duckdb.DuckDBPyConnection:
        """DuckDB on this machine attached to a lake of ``lake``: its catalog through the
        server's socket, its files through the forwarded S3 port."""
        con = duck.connect()
        configure_s3(con, key_id=S3_KEYS["username"], secret=S3_KEYS["password"], region="us-east-1",
                     endpoint=self.s3.endpoint)  # fmt: skip
        return duck.attach(location, con=con)


def secret(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "type": "Opaque", "stringData": data}
