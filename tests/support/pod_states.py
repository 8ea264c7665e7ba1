"""A pod's status as Kubernetes v1.34 writes it, for the states the launchers must read: the
kubelet's container statuses (waiting with its reason and message, terminated; ``k8s.io/api``
``ContainerStatus``) and the scheduler's ``PodScheduled`` condition. On the test cluster
without a node, ``kubectl patch --subresource=status`` writes them where the kubelet and the
scheduler would; ``bind`` assigns a pod to a node as the scheduler does (``pods/binding``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from support.kube_namespace import Kube

# the kubelet's words (pkg/kubelet/images/image_manager.go, pkg/kubelet/kubelet_pods.go)
NEVER_PULLED = "ErrImageNeverPull", 'Container image "{image}" is not present with pull policy of Never'
BACK_OFF = "ImagePullBackOff", 'Back-off pulling image "{image}"'
NOT_FOUND = "ErrImagePull", 'rpc error: code = NotFound desc = failed to pull and unpack image "{image}": not found'
NO_KEY = "CreateContainerConfigError", "couldn't find key password in Secret data/lake-pg"
INSUFFICIENT_CPU = (
    "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims "
    "found for incoming pod."
)


def waiting(container: str, image: str, reason: str, message: str) -> dict[str, Any]:
    """A ``containerStatuses`` entry of a container that has not started."""
    state = {"waiting": {"reason": reason, **({"message": message.format(image=image)} if message else {})}}
    return {"name": container, "image": image, "imageID": "", "ready": False, "restartCount": 0, "started": False,
            "state": state, "lastState": {}}  # fmt: skip


def oom_killed(container: str, image: str, *, last: bool = False) -> dict[str, Any]:
    """A container the kernel's OOM killer ended at its memory limit (now, or before a restart)."""
    ended = {"terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": "2026-03-01T11:59:00Z",
                            "finishedAt": "2026-03-01T11:59:40Z", "containerID": "containerd://0f3c5e"}}  # fmt: skip
    running = {"running": {"startedAt": "2026-03-01T11:59:41Z"}}
    return {"name": container, "image": image, "imageID": f"{image}@sha256:{'0' * 64}", "ready": last,
            "restartCount": int(last), "started": last, "state": running if last else ended,
            "lastState": ended if last else {}}  # fmt: skip


def scheduled(since: str = "2026-03-01T11:58:00Z") -> dict[str, Any]:
    return {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": since}


def unschedulable(since: str, message: str = INSUFFICIENT_CPU) -> dict[str, Any]:
    """The scheduler's condition on a pod that fits no node, since ``since`` (RFC 3339)."""
    return {"type": "PodScheduled", "status": "False", "lastProbeTime": None, "lastTransitionTime": since,
            "reason": "Unschedulable", "message": message}  # fmt: skip


def patch_pod_status(kube: Kube, pod: str, status: dict[str, Any]) -> None:
    kube.kubectl("patch", "pod", pod, "--subresource=status", "--type=merge", "-p", json.dumps({"status": status}))


def bind(kube: Kube, pod: str, node: str) -> None:
    """Assign ``pod`` to ``node``, as the scheduler does."""
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod},
               "target": {"apiVersion": "v1", "kind": "Node", "name": node}}  # fmt: skip
    kube.kubectl("create", "--raw", f"/api/v1/namespaces/{kube.namespace}/pods/{pod}/binding", "-f", "-",
                 input=json.dumps(binding))  # fmt: skip
