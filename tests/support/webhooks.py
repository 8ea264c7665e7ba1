"""Admission webhooks for the tests: one whose service is not there makes the API server refuse
what it admits with 500 (Internal error occurred: failed calling webhook ...), as a Spark
Operator whose webhook pod is down does."""

from __future__ import annotations

from typing import Any


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
