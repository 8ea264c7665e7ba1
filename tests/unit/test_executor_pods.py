"""The driver's view of its executor pods (``ducklake_jobs.executor_pods``): the containers a
watch saw end ``OOMKilled``, from pods as the API server writes them (``support.pod_states``),
and the selector that finds the attempt's executors and no other pod."""

from __future__ import annotations

import time
from typing import Any

from ducklake_jobs.executor_pods import ExecutorPods, executor_selector
from ducklake_operator.controller.launchers.spec import launch_spec
from ducklake_operator.model.job_marker import JobIdentity
from ducklake_operator.model.out_of_memory import describe
from support import pod_states as states

IMAGE = "registry.example/ducklake-operator:0.1.0"
EXECUTOR = "spark-kubernetes-executor"


def executor(name: str, *statuses: dict[str, Any], memory: str = "513Mi") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"spark-role": "executor"}},
        "spec": {"containers": [{"name": EXECUTOR, "resources": {"limits": {"memory": memory}}}]},
        "status": {"phase": "Failed" if statuses else "Running", "containerStatuses": list(statuses)},
    }


def test_executors_seen_killed_for_memory_are_kept_once_each() -> None:
    killed = states.oom_killed(EXECUTOR, IMAGE)
    events = [
        executor("e-1"),
        executor("e-1", killed),
        executor("e-1", killed),
        executor("e-2"),
        executor("e-3", killed),
    ]
    pods = ExecutorPods(lambda: iter(events)).start()
    deadline = time.monotonic() + 10
    while len(pods.out_of_memory()) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    found = pods.out_of_memory()
    assert [o.who for o in found] == [f"pod e-1, container {EXECUTOR}", f"pod e-3, container {EXECUTOR}"]
    # executors Spark started again and again, killed the same way, are said once
    assert describe(found).startswith(
        f"the executors ran out of memory (pod e-1, container {EXECUTOR} was OOMKilled (exit code 137) at its pod's "
        "memory limit of 513Mi, and 1 more the same way): raise spark.executor.memory, or "
        "spark.executor.memoryOverhead in spark.conf"
    )


def test_a_failed_watch_leaves_what_was_seen() -> None:
    def events() -> Any:
        yield executor("e-1", states.oom_killed(EXECUTOR, IMAGE))
        raise RuntimeError("the watch was refused")

    pods = ExecutorPods(events).start()
    pods._thread.join(10)
    assert [o.who for o in pods.out_of_memory()] == [f"pod e-1, container {EXECUTOR}"]


def test_the_selector_is_the_attempts_executors_as_the_launchers_label_them() -> None:
    job = JobIdentity("5f1c2d3e-0001", "Compact.Orders_Nightly" * 4, "data", attempt=2)
    spec = launch_spec(job_name=job.name, namespace="data", uid=job.uid, attempt=2, run_document={}, spark={},
                       env_from_secrets=[], timeout_seconds=None, env={"DUCKLAKE_JOB_IMAGE": "img:1"})  # fmt: skip
    labels = {**dict(spec.labels), "spark-role": "executor"}  # Spark adds its role
    wanted = dict(term.split("=", 1) for term in executor_selector(job).split(","))
    assert (
        wanted.items() <= labels.items()
        and wanted["spark-role"] == "executor"
        and wanted["ducklake.dev/attempt"] == "2"
    )
