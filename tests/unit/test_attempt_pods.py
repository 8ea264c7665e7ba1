"""What an attempt's pods say (``launchers.pods``, ``observe.with_pods``) and what ran out of
memory (``model.out_of_memory``), from pods and Spark errors exactly as Kubernetes and Spark
write them: the pod JSON of ``GET /api/v1/namespaces/{ns}/pods`` with the kubelet's waiting
reasons and messages (k8s.io/kubernetes v1.34 ``pkg/kubelet/images/image_manager.go``:
"Container image %q is not present with pull policy of Never", "Back-off pulling image %q";
``pkg/kubelet/kubelet_pods.go``: "couldn't find key %v in Secret %v/%v"), the scheduler's
``PodScheduled`` condition (reason ``Unschedulable``), containers ``OOMKilled`` (the CRI's
reason); Spark's executor loss (``ExecutorPodsLifecycleManager.exitReasonMessage``). Also
the API server's refusals (``api_errors``) and how a failure's reason is told."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ducklake_operator.controller.launchers.api_errors import api_error, server_message
from ducklake_operator.controller.launchers.observe import with_pods
from ducklake_operator.controller.launchers.pods import pod_stopped, read_pods
from ducklake_operator.controller.launchers.spec import Observed
from ducklake_operator.controller.runs.attempts import failure_reason
from ducklake_operator.errors import NOTHING_COMMITTED
from ducklake_operator.model.out_of_memory import describe, from_spark_error
from support import pod_states as states
from support.pod_states import scheduled, unschedulable
from support.spark_errors import SPARK_LOST

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC).timestamp()
IMAGE = "registry.example/ducklake-operator:0.1.0"
GRACE = 300.0


def pod(
    name: str,
    role: str | None = None,
    *,
    phase: str = "Pending",
    node: str | None = "node-1",
    waiting: tuple[str, str] | None = None,
    statuses: list[dict[str, Any]] | None = None,
    unschedulable_since: str | None = None,
    deleting: bool = False,
    container: str = "driver",
    memory: str = "1433Mi",
) -> dict[str, Any]:
    """A pod as the API server returns it, in the state the kubelet and the scheduler wrote."""
    labels = {"ducklake.dev/job": "compact-1", "ducklake.dev/attempt": "1"}
    if role:
        labels["spark-role"] = role
    condition = unschedulable(unschedulable_since) if unschedulable_since else scheduled()
    status: dict[str, Any] = {"phase": phase, "qosClass": "Burstable", "conditions": [condition]}
    if waiting:
        statuses = [states.waiting(container, IMAGE, *waiting)]
    if statuses is not None:
        status["containerStatuses"] = statuses
    meta: dict[str, Any] = {"name": name, "namespace": "data", "labels": labels}
    if deleting:
        meta["deletionTimestamp"], meta["deletionGracePeriodSeconds"] = "2026-03-01T11:59:30Z", 30
    spec: dict[str, Any] = {"containers": [{"name": container, "image": IMAGE,
                                            "resources": {"limits": {"memory": memory}}}]}  # fmt: skip
    if node:
        spec["nodeName"] = node
    return {"kind": "Pod", "apiVersion": "v1", "metadata": meta, "spec": spec, "status": status}


def kubelets(words: tuple[str, str]) -> tuple[str, str]:
    return words[0], words[1].format(image=IMAGE)


NEVER_PULL, BACK_OFF, PULL, NO_KEY = (kubelets(w) for w in (states.NEVER_PULLED, states.BACK_OFF, states.NOT_FOUND,
                                                            states.NO_KEY))  # fmt: skip


@pytest.mark.parametrize(
    "waiting, retriable",
    [(NEVER_PULL, False), (BACK_OFF, False), (PULL, False), (("InvalidImageName", 'Failed to apply default image tag'
      ' "Registry/X": couldn\'t parse image name'), False), (NO_KEY, False),
     (("CreateContainerError", "context deadline exceeded"), True)],
)  # fmt: skip
def test_a_driver_that_cannot_start_fails_the_attempt_with_the_kubelets_words(waiting, retriable: bool) -> None:
    view = read_pods([pod("compact-1-5f1c2d-1-x7k2p", waiting=waiting)], NOW, GRACE)
    problem = view.problem
    assert problem is not None and (problem.reason, problem.message) == waiting
    assert (problem.pod, problem.role, problem.container, problem.retriable) == (
        "compact-1-5f1c2d-1-x7k2p", "driver", "driver", retriable)  # fmt: skip
    text = problem.describe()
    assert text.startswith(f"pod compact-1-5f1c2d-1-x7k2p (driver), container driver cannot run: {waiting[0]}: ")
    assert waiting[1] in text
    observed = with_pods(Observed("Pending", "Job compact-1-5f1c2d-1's pod is not running yet"), view)
    assert (observed.state, observed.message, observed.stop, observed.retriable) == ("Failed", text, True, retriable)


def test_what_to_do_is_said_for_an_image_and_for_a_missing_secret() -> None:
    (image,) = [read_pods([pod("d", waiting=NEVER_PULL)], NOW).problem]
    assert image is not None and "set spark.image" in image.describe() and "spark.imagePullPolicy" in image.describe()
    secret = read_pods([pod("d", waiting=NO_KEY)], NOW).problem
    assert secret is not None and "credentialsSecretRef" in secret.describe()


def test_a_pod_waiting_as_usual_is_not_a_problem_but_says_what_it_waits_for() -> None:
    creating = pod("d", waiting=("ContainerCreating", ""))
    view = read_pods([creating], NOW)
    assert view.problem is None and view.waiting == "pod d (driver) is waiting: ContainerCreating"
    unbound = read_pods([pod("d", node=None)], NOW)
    assert unbound.problem is None and unbound.waiting == "pod d (driver) waits for a node"
    observed = with_pods(Observed("Pending", "Job j's pod is not running yet"), view)
    assert (observed.state, observed.message) == ("Pending", "pod d (driver) is waiting: ContainerCreating")
    assert read_pods([pod("d", phase="Running")], NOW) == read_pods([], NOW)  # nothing to say


def test_an_unschedulable_pod_fails_the_attempt_only_after_the_grace() -> None:
    recent = pod("d", node=None, unschedulable_since="2026-03-01T11:59:00Z")  # 60 s ago
    view = read_pods([recent], NOW, GRACE)
    assert view.problem is None
    assert view.waiting is not None and view.waiting.startswith("pod d (driver) cannot be scheduled yet (0/1 nodes are")
    assert view.waiting.endswith("the attempt fails if it still cannot in 240 s")
    stuck = read_pods([pod("d", node=None, unschedulable_since="2026-03-01T11:54:00Z")], NOW, GRACE).problem
    assert stuck is not None and (stuck.reason, stuck.container, stuck.retriable) == ("Unschedulable", None, True)
    assert "Insufficient cpu" in stuck.message and "(for 360 s)" in stuck.message
    assert "lower spark.driver/spark.executor cores or memory" in stuck.describe()


def test_executors_fail_the_attempt_only_when_none_of_them_can_run() -> None:
    driver = pod("d", phase="Running")
    stuck = [pod(f"e{i}", "executor", waiting=BACK_OFF, container="spark-kubernetes-executor") for i in (1, 2)]
    running = pod("e3", "executor", phase="Running", container="spark-kubernetes-executor")
    gone = pod("e4", "executor", waiting=BACK_OFF, deleting=True)
    assert read_pods([driver, *stuck, running], NOW).problem is None  # the job goes on with e3
    problem = read_pods([driver, *stuck, gone], NOW).problem
    assert problem is not None and (problem.pod, problem.role, problem.reason) == ("e1", "executor", "ImagePullBackOff")
    assert read_pods([driver], NOW).problem is None  # no executor yet
    observed = with_pods(Observed("Running", "Job j is running"), read_pods([driver, *stuck], NOW))
    assert observed.state == "Failed" and observed.stop and not observed.retriable


def test_a_pod_being_deleted_is_not_judged() -> None:
    assert read_pods([pod("d", waiting=NEVER_PULL, deleting=True)], NOW).problem is None


def test_which_pods_have_stopped() -> None:
    assert pod_stopped(pod("d", phase="Succeeded")) and pod_stopped(pod("d", phase="Failed"))
    assert pod_stopped(pod("d", node=None))  # never scheduled: never ran
    assert not pod_stopped(pod("d", waiting=BACK_OFF)) and not pod_stopped(pod("d", phase="Running"))
    assert not pod_stopped(pod("d", phase="Running", deleting=True))  # runs until its grace period ends


def test_a_driver_killed_for_memory_explains_the_jobs_failure() -> None:
    killed = pod("d", phase="Failed", statuses=[states.oom_killed("driver", IMAGE)])
    view = read_pods([killed], NOW)
    assert view.problem is None
    failed = Observed("Failed", "Job j failed (BackoffLimitExceeded: Job has reached the specified backoff limit)")
    observed = with_pods(failed, view)
    assert observed.message == (
        "Job j failed (BackoffLimitExceeded: Job has reached the specified backoff limit); the driver ran out of "
        "memory (pod d, container driver was OOMKilled (exit code 137) at its pod's memory limit of 1433Mi): raise "
        "spark.driver.memory (its pod gets 40 % more, at least 384 MiB, for the job program's Python)"
    )
    # an executor Spark replaced, seen before it was deleted
    executor = "spark-kubernetes-executor"
    again = [states.oom_killed(executor, IMAGE, last=True)]
    restarted = pod("e1", "executor", phase="Running", statuses=again, container=executor, memory="2867Mi")
    (found,) = read_pods([restarted], NOW).out_of_memory
    assert (found.role, found.who, found.limit) == ("executor", "pod e1, container spark-kubernetes-executor", "2867Mi")
    assert with_pods(Observed("Succeeded", "done"), view).message == "done"


def test_sparks_word_that_executors_were_killed_for_memory_says_what_to_raise() -> None:
    (found,) = from_spark_error(SPARK_LOST, "2048m + 819m overhead")
    assert (found.role, found.who, found.heap) == ("executor", "executor 6", False)
    assert describe([found]) == (
        "the executors ran out of memory (executor 6 was OOMKilled (exit code 137) at its pod's memory limit of "
        "2048m + 819m overhead): raise spark.executor.memory, or spark.executor.memoryOverhead in spark.conf (the "
        "memory beside the JVM, where the tasks' Python, DuckDB and pyarrow work)"
    )
    without_statuses = SPARK_LOST.replace("OOMKilled", "Error")
    (killed,) = from_spark_error(without_statuses)
    assert killed.how == "was killed (exit code 137, SIGKILL: most likely at its memory limit)" and killed.limit is None
    heap = SPARK_LOST.replace("exit code 137(SIGKILL, possible container OOM)", "exit code 52(JVM OOM)")
    (jvm,) = from_spark_error(heap)
    assert jvm.heap and "raise spark.executor.memory (the executors' JVM heap)" in describe([jvm])
    assert from_spark_error(SPARK_LOST.replace("137(SIGKILL, possible container OOM)", "1(generic)")) == []
    assert from_spark_error("java.lang.IllegalStateException: boom") == [] and describe([]) == ""


class ApiException(Exception):
    """The shape of kubernetes.client.exceptions.ApiException: status, reason, the body as sent."""

    def __init__(self, status: int, reason: str, body: str | bytes | None) -> None:
        super().__init__(f"({status})\nReason: {reason}\nHTTP response body: {body!r}")
        self.status, self.reason, self.body = status, reason, body


WEBHOOK = ('{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Internal error occurred: '
           'failed calling webhook \\"mutate-sparkapplication.sparkoperator.k8s.io\\": failed to call webhook: Post '
           '\\"https://spark-operator-webhook-svc.spark-operator.svc:9443/mutate-sparkoperator-k8s-io-v1beta2-'
           'sparkapplication?timeout=10s\\": dial tcp 10.96.0.17:9443: connect: connection refused","reason":'
           '"InternalError","details":{"causes":[{"message":"failed calling webhook"}]},"code":500}')  # fmt: skip


def test_a_refusal_says_what_the_api_server_said() -> None:
    said = api_error(ApiException(500, "Internal Server Error", WEBHOOK))
    assert said is not None and said.startswith(
        "HTTP 500 Internal Server Error: Internal error occurred: failed calling"
    )
    assert 'webhook "mutate-sparkapplication.sparkoperator.k8s.io"' in said and "connection refused" in said
    assert api_error(ApiException(503, "Service Unavailable", None)) == "HTTP 503 Service Unavailable"
    assert server_message(ApiException(502, "Bad Gateway", b"<html>bad gateway</html>\n")) == "<html>bad gateway</html>"
    assert api_error(ValueError("not an API error")) is None


def test_a_failures_reason_is_the_programs_words_then_the_launchers() -> None:
    launcher = Observed("Failed", "Job j failed (BackoffLimitExceeded: Job has reached the specified backoff limit)")
    program = {"state": "Failed", "message": "compact main.orders: the executors ran out of memory (...)"}
    assert failure_reason(launcher, program) == f"{program['message']} ({launcher.message})"
    assert failure_reason(launcher, {}) == launcher.message
    assert failure_reason(launcher, {"state": "Succeeded", "message": "nothing to do"}) == launcher.message
    local = Observed("Failed", program["message"])  # the Local launcher's message is the program's own
    assert failure_reason(local, program) == program["message"]
    # what the program adds for a person at a terminal, the run's message says from the catalog
    told = {"state": "Failed", "message": f"compact main.orders: IOError: gone; {NOTHING_COMMITTED}"}
    assert failure_reason(launcher, told) == f"compact main.orders: IOError: gone ({launcher.message})"
