"""The run's executor pods as Kubernetes reports them, followed from the driver while Spark on
Kubernetes runs them: the containers the kubelet ended ``OOMKilled``.

Spark's own words do not always say it: it deletes a failed executor's pod at once, and when
executors die before they register (a JVM at its pod's limit from its start) or more of them
fail than ``spark.executor.maxNumFailures`` allows, the driver stops with "Spark context
stopped while waiting for backend" or exit code 11, naming no executor. The pods' statuses,
seen as they end (a watch: one event per change, the final one before the deletion), are the
evidence. The driver's service account may watch pods (Spark's driver does so itself).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ducklake_operator.api.v1alpha1.names import ATTEMPT_LABEL, JOB_LABEL
from ducklake_operator.controller.launchers.pods import out_of_memory
from ducklake_operator.controller.launchers.spec import label_value
from ducklake_operator.model.job_marker import JobIdentity
from ducklake_operator.model.out_of_memory import OutOfMemory

from .job_status import kubernetes_client

log = logging.getLogger(__name__)
WATCH_SECONDS = 300  # one watch request's length; it is made again while the run goes on


class ExecutorPods:
    """Keeps what the pods ``events`` gives (each a pod as the API server writes it) say ran
    out of memory, reading them in a daemon thread."""

    def __init__(self, events: Callable[[], Iterable[Mapping[str, Any]]]) -> None:
        self._events = events
        self._lock = threading.Lock()
        self._found: dict[str, OutOfMemory] = {}  # by pod and container
        self._thread = threading.Thread(target=self._follow, name="executor-pods", daemon=True)

    def start(self) -> ExecutorPods:
        self._thread.start()
        return self

    def seen(self, pod: Mapping[str, Any]) -> None:
        for found in out_of_memory(pod):
            with self._lock:
                self._found.setdefault(found.who, found)

    def out_of_memory(self) -> list[OutOfMemory]:
        with self._lock:
            return list(self._found.values())

    def _follow(self) -> None:
        try:
            for pod in self._events():
                self.seen(pod)
        except Exception as exc:  # the evidence is a help, never the run's failure
            log.info("stopped following the executors' pods: %s", exc)


def executor_selector(job: JobIdentity) -> str:
    """The label selector of the attempt's executors (the launchers label every pod of it)."""
    return f"{JOB_LABEL}={label_value(job.name)},{ATTEMPT_LABEL}={job.attempt},spark-role=executor"


def follow_executors(job: JobIdentity, master: str) -> ExecutorPods | None:
    """The attempt's executor pods followed, when Spark runs them on Kubernetes and the API
    server can be reached; None otherwise."""
    if not master.startswith("k8s://"):
        return None
    found = kubernetes_client("Spark runs the executors on Kubernetes", "their pods are not followed")
    if found is None:
        return None
    from kubernetes import watch

    core = found.CoreV1Api()
    namespace, selector = job.namespace or "default", executor_selector(job)

    def events() -> Iterable[Mapping[str, Any]]:
        while True:  # each request ends after WATCH_SECONDS; the run may go on longer
            stream = watch.Watch().stream(
                core.list_namespaced_pod, namespace, label_selector=selector, timeout_seconds=WATCH_SECONDS
            )
            for event in stream:
                raw = event.get("raw_object")
                if isinstance(raw, Mapping):
                    yield raw

    return ExecutorPods(events).start()
