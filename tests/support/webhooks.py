"""Admission webhooks for the tests: one whose service is not there makes the API server refuse
what it admits with 500 (Internal error occurred: failed calling webhook ...), as a Spark
Operator whose webhook pod is down does."""

from __future__ import annotations

import json
from typing import Any

from .kube_cluster import KubeCluster
from .operator_process import wait_for


def refusing_webhook(name: str, namespace: str) -> dict[str, Any]:
    """A validating webhook on SparkApplications of ``namespace`` whose service does not exist."""
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [{"name": f"{name}.ducklake.dev", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                          "failurePolicy": "Fail", "timeoutSeconds": 5,
                          "clientConfig": {"service": {"namespace": namespace, "name": "no-such-webhook",
                                                       "path": "/validate"}},
                          "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                          "rules": [{"apiGroups": ["sparkoperator.k8s.io"], "apiVersions": ["v1beta2"],
                                     "resources": ["sparkapplications"], "operations": ["CREATE"]}]}]}  # fmt: skip


def install_refusing_webhook(cluster: KubeCluster, name: str, namespace: str) -> None:
    """``refusing_webhook``, applied and in force: the API server takes a webhook configuration
    in through a watch of its own, a moment after the apply returns (under load, long enough
    for a launch to get through first); so until a server-side dry run of a SparkApplication
    in ``namespace`` (admission runs, nothing is stored) is refused by it."""
    cluster.kubectl("apply", "-f", "-", input=json.dumps(refusing_webhook(name, namespace)))
    probe = {"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
             "metadata": {"name": f"{name}-probe", "namespace": namespace},
             "spec": {"type": "Python", "sparkVersion": "3.5.0", "mainApplicationFile": "local:///probe.py",
                      "driver": {}, "executor": {}}}  # fmt: skip
    path = f"/apis/sparkoperator.k8s.io/v1beta2/namespaces/{namespace}/sparkapplications?dryRun=All"

    def refused() -> bool:
        try:
            cluster.request("POST", path, probe)
        except RuntimeError as exc:
            if "failed calling webhook" in str(exc) and f"{name}.ducklake.dev" in str(exc):  # JSON-quoted
                return True
            raise
        return False

    wait_for(f"webhook {name} in force", refused, timeout=60)
