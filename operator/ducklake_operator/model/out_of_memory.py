"""A run's Spark pods running out of memory: what the evidence says ran out (the driver or the
executors, the container at its memory limit or the JVM's heap), and what to raise. The one
home of the diagnosis and of its words, for the controller (a pod the kubelet reports
``OOMKilled``) and for the job program (Spark's word that an executor's pod was killed).
Pure.

The evidence, as Kubernetes and Spark write it:

- a container's ``state.terminated`` (or ``lastState.terminated``) with ``reason: OOMKilled``
  and ``exitCode: 137``: the kernel's OOM killer ended it at its cgroup's memory limit (the
  CRI API requires that reason: k8s.io/cri-api ``ContainerStatus.reason``);
- Spark's loss of an executor (``ExecutorPodsLifecycleManager``): "The executor with id 6
  exited with exit code 137(SIGKILL, possible container OOM)", followed by the container
  statuses the API gave ("... OOMKilled ..."); exit code 52 is the executor JVM's own
  ``OutOfMemoryError`` (Spark's ``SparkExitCode.OOM``). Spark deletes a failed executor's pod
  at once (``spark.kubernetes.executor.deleteOnTermination``), so its words are the evidence
  that lasts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

DRIVER, EXECUTOR = "driver", "executor"
OOM_KILLED = "OOMKilled"  # the container's terminated reason (CRI)
SIGKILL_EXIT, JVM_OOM_EXIT = 137, 52  # 128 + SIGKILL; Spark's SparkExitCode.OOM
_EXECUTOR_EXIT = re.compile(r"The executor with id (\d+) exited with exit code (-?\d+)")

# what to raise, by what ran out; spark.executor.memory and spark.driver.memory are also the
# DuckLakeJob's fields spec.spark.executor.memory and spec.spark.driver.memory
_RAISE = {
    (EXECUTOR, False): "raise spark.executor.memory, or spark.executor.memoryOverhead in spark.conf (the memory beside "
    "the JVM, where the tasks' Python, DuckDB and pyarrow work)",
    (EXECUTOR, True): "raise spark.executor.memory (the executors' JVM heap)",
    (DRIVER, False): "raise spark.driver.memory (its pod gets 40 % more, at least 384 MiB, for the job program's "
    "Python)",
    (DRIVER, True): "raise spark.driver.memory (the driver's JVM heap)",
}


@dataclass(frozen=True)
class OutOfMemory:
    role: str  # DRIVER | EXECUTOR
    who: str  # "pod x, container y", "executor 6"
    how: str  # what the evidence says happened
    limit: str | None = None  # the pod's memory limit when known, e.g. 2867Mi
    heap: bool = False  # the JVM's heap ran out (not the container's limit)


def killed_container(role: str, pod: str, container: str, exit_code: object, limit: str | None) -> OutOfMemory:
    """A container the kubelet reports ``OOMKilled``."""
    return OutOfMemory(role, f"pod {pod}, container {container}", f"was {OOM_KILLED} (exit code {exit_code})", limit)


def from_spark_error(text: str, executor_limit: str | None = None) -> list[OutOfMemory]:
    """The executors that Spark's error ``text`` says were killed for memory (exit code 137,
    or 52: the JVM's heap), once each. ``executor_limit``: their pods' memory, if known."""
    killed = OOM_KILLED in text
    found: dict[str, OutOfMemory] = {}
    for executor, code in _EXECUTOR_EXIT.findall(text):
        if int(code) == SIGKILL_EXIT:
            how = (
                f"was {OOM_KILLED} (exit code 137)"
                if killed
                else "was killed (exit code 137, SIGKILL: most likely at its memory limit)"
            )
            found.setdefault(executor, OutOfMemory(EXECUTOR, f"executor {executor}", how, executor_limit))
        elif int(code) == JVM_OOM_EXIT:
            how = "ran out of JVM heap (exit code 52, java.lang.OutOfMemoryError)"
            found.setdefault(executor, OutOfMemory(EXECUTOR, f"executor {executor}", how, executor_limit, heap=True))
    return list(found.values())


def describe(found: Iterable[OutOfMemory]) -> str:
    """One sentence: what ran out of memory, how, and what to raise. Empty without evidence."""
    items = list(found)
    if not items:
        return ""
    roles = dict.fromkeys(o.role for o in items)
    parts = []
    for role in roles:
        mine = [o for o in items if o.role == role]
        alike: dict[tuple[str, str | None], list[OutOfMemory]] = {}  # a retried executor dies the same way
        for o in mine:
            alike.setdefault((o.how, o.limit if not o.heap else None), []).append(o)
        said = "; ".join(
            f"{same[0].who} {how}"
            + (f" at its pod's memory limit of {limit}" if limit else "")
            + (f", and {len(same) - 1} more the same way" if len(same) > 1 else "")
            for (how, limit), same in alike.items()
        )
        advice = "; ".join(dict.fromkeys(_RAISE[(role, o.heap)] for o in mine))
        subject = "the driver" if role == DRIVER else "the executors"
        parts.append(f"{subject} ran out of memory ({said}): {advice}")
    return "; ".join(parts)
