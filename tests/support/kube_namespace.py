"""kubectl in one namespace of a test cluster: what the end-to-end tests drive the operator with."""

from __future__ import annotations

import builtins
import json
from typing import Any

import yaml

from support.kube_cluster import KubeCluster
from support.operator_process import grant_secrets


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
