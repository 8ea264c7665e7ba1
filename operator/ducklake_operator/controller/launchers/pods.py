"""What an attempt's pods say, read from the pods as the API server returns them (the JSON of
``GET /api/v1/namespaces/{namespace}/pods``): a pod that cannot run (its image, its
configuration, no node for it), what a pending pod waits for, containers killed for memory.
Pure: ``read_pods`` takes the pods and the time, so a test can hand it pods from anywhere.

The words are Kubernetes' own (v1.34): a container that cannot start waits with ``reason``
and ``message`` set by the kubelet (``pkg/kubelet/images/types.go``: ErrImagePull,
ImagePullBackOff, ErrImageNeverPull, InvalidImageName, ImageInspectError;
``pkg/kubelet/kuberuntime/kuberuntime_container.go``: CreateContainerConfigError,
CreateContainerError); a pod no node can take has the condition ``PodScheduled`` ``False``
with reason ``Unschedulable`` (``k8s.io/api/core/v1``: PodReasonUnschedulable) and the
scheduler's message, its ``lastTransitionTime`` the moment it first failed to fit.

Which pod is which: Spark labels its pods ``spark-role: driver | executor``; the batch Job's
pod is the driver (no such label). An attempt cannot go on when its driver cannot run, or
when every executor it has cannot (the driver then waits for them forever).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ...model import timestamps
from ...model.out_of_memory import DRIVER, EXECUTOR, OOM_KILLED, OutOfMemory, killed_container

ROLE_LABEL = "spark-role"
UNSCHEDULABLE = "Unschedulable"
# A pod that fits no node fails the attempt only after this long: a cluster autoscaler needs
# time to notice it (about 10 s), decide and add a node (typically 1 to 3 minutes for a cloud
# VM to join, sometimes more). The operator's DUCKLAKE_UNSCHEDULABLE_GRACE (seconds) sets it.
UNSCHEDULABLE_GRACE = 300.0
UNSCHEDULABLE_GRACE_ENV = "DUCKLAKE_UNSCHEDULABLE_GRACE"

_IMAGE_ADVICE = (
    "set spark.image to an image the node can pull (a private registry: imagePullSecrets on the pods' service "
    "account), or spark.imagePullPolicy (Never uses only images already on the node)"
)
# waiting reasons that stop a container for good, what to do, and whether another attempt
# could fare better (an image that is not there does not appear by trying again)
STUCK: dict[str, tuple[str, bool]] = {
    "ErrImagePull": (_IMAGE_ADVICE, False),
    "ImagePullBackOff": (_IMAGE_ADVICE, False),
    "ErrImageNeverPull": (_IMAGE_ADVICE, False),
    "InvalidImageName": ("set spark.image to a valid image reference", False),
    "ImageInspectError": ("check the image on the node (the container runtime cannot read it)", False),
    "CreateContainerConfigError": (
        "fix what the pod refers to (a missing Secret or key: the catalog's credentialsSecretRef; a user the image "
        "cannot run as), then run it again",
        False,
    ),
    "CreateContainerError": ("the container runtime could not create the container: see the pod's events", True),
}
UNSCHEDULABLE_ADVICE = (
    "lower spark.driver/spark.executor cores or memory (or spark.executor.instances), or add nodes that can take it"
)


@dataclass(frozen=True)
class PodProblem:
    """A pod of the attempt that cannot run."""

    pod: str
    role: str  # DRIVER | EXECUTOR
    container: str | None  # None: the pod itself (not scheduled)
    reason: str
    message: str  # the kubelet's or the scheduler's
    advice: str
    retriable: bool  # whether another attempt could fare better

    def describe(self) -> str:
        where = f"pod {self.pod} ({self.role})" + (f", container {self.container}" if self.container else "")
        said = f"{self.reason}: {self.message}" if self.message else self.reason
        return f"{where} cannot run: {said}; {self.advice}"


@dataclass(frozen=True)
class PodsView:
    problem: PodProblem | None  # the attempt cannot go on
    waiting: str | None  # what a pod of it waits for (for a Pending run's message)
    out_of_memory: tuple[OutOfMemory, ...]  # containers killed at their memory limit


def read_pods(pods: Iterable[Mapping[str, Any]], now: float, grace: float = UNSCHEDULABLE_GRACE) -> PodsView:
    """The attempt's pods (``now``: seconds since the epoch, for how long a pod has not fit)."""
    live = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
    drivers = [p for p in live if role(p) == DRIVER]
    executors = [p for p in live if role(p) == EXECUTOR and phase(p) in ("", "Pending", "Running")]
    seen = [(p, _blocked(p, now, grace)) for p in drivers + executors]
    problem = next((b for p, b in seen if b is not None and role(p) == DRIVER), None)
    executor_problems = [b for p, b in seen if role(p) == EXECUTOR]
    if problem is None and executor_problems and all(b is not None for b in executor_problems):
        problem = executor_problems[0]
    waiting = next((w for p in drivers + executors if (w := _waiting(p, now, grace)) is not None), None)
    return PodsView(problem, waiting, tuple(o for p in pods for o in out_of_memory(p)))


def unschedulable_grace(env: Mapping[str, str] = os.environ) -> float:
    return float(env.get(UNSCHEDULABLE_GRACE_ENV) or UNSCHEDULABLE_GRACE)


def pod_stopped(pod: Mapping[str, Any]) -> bool:
    """Nothing of the pod runs, or ever ran: it ended (Succeeded, Failed), or was never
    scheduled to a node. A pod being deleted runs until its grace period ends (and, on a node
    whose kubelet is away, until the kubelet comes back)."""
    return phase(pod) in ("Succeeded", "Failed") or (
        phase(pod) in ("", "Pending") and not (pod.get("spec") or {}).get("nodeName")
    )


def role(pod: Mapping[str, Any]) -> str:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return EXECUTOR if labels.get(ROLE_LABEL) == EXECUTOR else DRIVER


def phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name") or "")


def out_of_memory(pod: Mapping[str, Any]) -> list[OutOfMemory]:
    """The pod's containers killed at their memory limit (now, or before a restart)."""
    limits = {c.get("name"): ((c.get("resources") or {}).get("limits") or {}).get("memory")
              for c in (pod.get("spec") or {}).get("containers") or []}  # fmt: skip
    found = []
    for status in _container_statuses(pod):
        for state in (status.get("state") or {}, status.get("lastState") or {}):
            ended = state.get("terminated") or {}
            if ended.get("reason") == OOM_KILLED:
                container = str(status.get("name"))
                found.append(
                    killed_container(role(pod), name(pod), container, ended.get("exitCode"), limits.get(container))
                )
                break
    return found


def _container_statuses(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = pod.get("status") or {}
    return [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]


def _unschedulable(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == UNSCHEDULABLE:
            return c
    return None


def _unschedulable_for(condition: Mapping[str, Any], now: float) -> float:
    since = timestamps.parse(condition.get("lastTransitionTime"))
    return max(now - since.timestamp(), 0.0) if since is not None else 0.0


def _blocked(pod: Mapping[str, Any], now: float, grace: float) -> PodProblem | None:
    """Why ``pod`` cannot run (None: it runs, ended, or may still start)."""
    if phase(pod) not in ("", "Pending"):
        return None
    for status in _container_statuses(pod):
        waiting = (status.get("state") or {}).get("waiting") or {}
        reason = waiting.get("reason")
        if reason in STUCK:
            advice, retriable = STUCK[reason]
            return PodProblem(name(pod), role(pod), str(status.get("name")), str(reason),
                              str(waiting.get("message") or ""), advice, retriable)  # fmt: skip
    condition = _unschedulable(pod)
    if condition is not None and _unschedulable_for(condition, now) >= grace:
        message = (
            f"{condition.get('message') or 'no node can take it'} (for {_unschedulable_for(condition, now):.0f} s)"
        )
        return PodProblem(name(pod), role(pod), None, UNSCHEDULABLE, message, UNSCHEDULABLE_ADVICE, True)
    return None


def _waiting(pod: Mapping[str, Any], now: float, grace: float) -> str | None:
    """What a pending pod waits for, in a few words (None: nothing to say)."""
    if phase(pod) not in ("", "Pending"):
        return None
    where = f"pod {name(pod)} ({role(pod)})"
    condition = _unschedulable(pod)
    if condition is not None:
        waited = _unschedulable_for(condition, now)
        return (f"{where} cannot be scheduled yet ({condition.get('message') or 'no node can take it'}); the attempt "
                f"fails if it still cannot in {max(grace - waited, 0):.0f} s")  # fmt: skip
    if not (pod.get("spec") or {}).get("nodeName"):
        return f"{where} waits for a node"
    for status in _container_statuses(pod):
        waiting = (status.get("state") or {}).get("waiting") or {}
        if waiting.get("reason"):
            text = f"{where} is waiting: {waiting['reason']}"
            return text + (f" ({waiting['message']})" if waiting.get("message") else "")
    return None
