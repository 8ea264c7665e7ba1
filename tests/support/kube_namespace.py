"""kubectl in one namespace of a test cluster: what the end-to-end tests drive the operator with."""

from __future__ import annotations

import builtins
import json
from typing import Any

import yaml

from support.kube_cluster import KubeCluster
from support.operator_process import grant_secrets, wait_for


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
        """The object as ``kubectl get -o json`` prints it; None when there is none."""
        path = self._path(kind)
        if path is None:  # a name only kubectl knows how to read
            out = self.cluster.kubectl_result("-n", self.namespace, "get", kind, name, "-o", "json")
            if out.returncode != 0:
                if "NotFound" in out.stderr:
                    return None
                raise AssertionError(out.stderr)
            return json.loads(out.stdout)
        found: dict[str, Any] | None = self.cluster.request("GET", f"{path}/{name}")
        return found

    def list(self, kind: str) -> builtins.list[dict[str, Any]]:
        """The objects of a kind in the namespace, each with its apiVersion and kind as kubectl prints them."""
        path = self._path(kind)
        if path is None:
            return json.loads(self.kubectl("get", kind, "-o", "json"))["items"]
        listed = self.cluster.request("GET", path)
        item_kind = listed["kind"].removesuffix("List")
        return [{"apiVersion": listed["apiVersion"], "kind": item_kind, **item} for item in listed["items"]]

    def events(self, name: str) -> builtins.list[dict[str, Any]]:
        return [e for e in self.list("events") if e["involvedObject"].get("name") == name]

    def event(self, name: str, reason: str, containing: str = "") -> dict[str, Any]:
        """The first event of ``reason`` about ``name`` whose message has ``containing``, once
        it is there: kopf posts a handler's events from a queue of its own, so one may reach
        the API server after the status the same handler patched."""
        return wait_for(
            f"a {reason} event about {name}" + (f" saying {containing!r}" if containing else ""),
            lambda: next(
                (e for e in self.events(name) if e["reason"] == reason and containing in e.get("message", "")), None
            ),
        )

    def _path(self, kind: str) -> str | None:
        """The REST path of the kind's objects in this namespace: a poll by kubectl spawns a
        process that costs about 0.24 s of CPU (on 2 cores, polls every 0.1 s took one),
        a request a few milliseconds."""
        found = self.cluster.resource(kind)
        if found is None:
            return None
        base, plural, namespaced = found
        return f"{base}/namespaces/{self.namespace}/{plural}" if namespaced else f"{base}/{plural}"

    def delete(self, kind: str, name: str, wait: bool = False) -> None:
        self.kubectl("delete", kind, name, f"--wait={'true' if wait else 'false'}")

    def grant_secrets(self, *names: str) -> None:
        """Let the operator read these Secrets of the namespace, by the chart (``helm upgrade``):
        it may read no other."""
        grant_secrets(self.cluster, self.namespace, *names)
