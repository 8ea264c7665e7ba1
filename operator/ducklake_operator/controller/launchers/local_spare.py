"""The Local launcher's warm spare: a job program started before its run
(``ducklake_jobs.spare``), so that a run on Spark does not wait for Spark to start.

After a run whose program used Spark, when no other program runs, the launcher starts one
spare with that run's Spark settings and environment; it starts its SparkContext and its
workers, then waits. The next attempt whose settings are the same is handed to it (its run
file and credentials on the spare's stdin) and becomes that process: its pid, its process
group, its scratch directory, its logs. An attempt with other settings gets a fresh program
and the spare is stopped first, so at most ``maxRuns`` programs are ever in the operator's
pod; a spare no run came to within ``IDLE_SECONDS`` exits by itself, and none is started
where the pod's memory limit leaves less than ``SPARE_MEMORY`` (the operator's own memory
grows with the objects it watches: 0.4 GB at 10,000 tables).
Chart value ``jobs.local.warmSpare`` (``DUCKLAKE_LOCAL_WARM_SPARE``), on by default.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass

from ...model.spare_handoff import Handoff, handoff_line
from .spec import LaunchSpec

WARM_SPARE_ENV = "DUCKLAKE_LOCAL_WARM_SPARE"
SPARE_PREFIX = "spare-"  # + 16 hex digits: a spare's name among the attempts' in the state directory
# a spare no run came to in this long exits (its memory back to the pod); the next run starts its own
IDLE_SECONDS = 900.0
# what an idle spare holds resident (about 640 MB measured: its JVM, Python and Spark's workers),
# with a margin: no spare is started where the pod's memory limit leaves less
SPARE_MEMORY = 768 * 2**20
CGROUP_ROOT = "/sys/fs/cgroup"
_NO_LIMIT = 2**60  # cgroup v1 says "no limit" with a page-rounded 2**63 - 1


def warm_spare_enabled(value: str | None) -> bool:
    """The chart's ``jobs.local.warmSpare`` as the operator's environment carries it."""
    if value is None or not value.strip():
        return True
    text = value.strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"{WARM_SPARE_ENV}={value!r}: not true or false")


@dataclass(frozen=True)
class SpareKey:
    """What a spare must have been started with to run an attempt: the run document's Spark
    settings (the ``spark`` object, as JSON: what the spare starts its session from) and the
    settings' ``spark.env`` (its JVM and workers keep the environment they started with)."""

    spark: str
    env: tuple[tuple[str, str], ...]


def spare_key(spec: LaunchSpec) -> SpareKey | None:
    """The attempt's ``SpareKey``; None: no spare runs it (a ``spark.env`` value from a
    Secret, which no process gets before it has a run; or a run document that does not read)."""
    if any(var.secret is not None for var in spec.env):
        return None
    try:
        spark = json.loads(spec.run_document).get("spark") or {}
    except (ValueError, AttributeError):
        return None
    return SpareKey(json.dumps(spark, sort_keys=True), tuple((var.name, str(var.value)) for var in spec.env))


@dataclass
class Spare:
    """A started spare: its program (stdin a pipe: the handoff, or its end) and its files."""

    name: str
    key: SpareKey
    proc: subprocess.Popen[bytes]
    scratch: str
    record: str  # its launch record (pid, start time): a sweep leaves its scratch alone
    out_path: str
    err_path: str

    @property
    def files(self) -> tuple[str, str, str]:
        """Its files in the state directory."""
        return self.record, self.out_path, self.err_path

    def alive(self) -> bool:
        return self.proc.poll() is None

    def hand_off(self, handoff: Handoff) -> bool:
        """Give it its run; False when it has exited."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(handoff_line(handoff).encode())
            self.proc.stdin.close()
        except OSError:  # BrokenPipeError: it exited since ``alive``
            return False
        return True


def memory_room(root: str = CGROUP_ROOT) -> int | None:
    """Bytes this process's memory cgroup (the pod's container) has left under its limit, the
    files' page cache not counted as used (the kernel reclaims it before it kills anything; a
    run's written files fill it); None when it has no limit or says nothing (cgroup v2, else
    v1)."""
    if os.path.exists(os.path.join(root, "memory.max")):
        directory, limit_file, usage_file, prefix = root, "memory.max", "memory.current", ""
    else:
        directory, limit_file, usage_file, prefix = (
            os.path.join(root, "memory"), "memory.limit_in_bytes", "memory.usage_in_bytes", "total_"
        )  # fmt: skip
    limit, usage = _read(os.path.join(directory, limit_file)), _read(os.path.join(directory, usage_file))
    if not (limit and limit.isdigit() and int(limit) < _NO_LIMIT and usage and usage.isdigit()):
        return None
    values = _stat_values(os.path.join(directory, "memory.stat"))
    cache = sum(values.get(f"{prefix}{kind}_file", 0) for kind in ("active", "inactive"))
    return int(limit) - (int(usage) - cache)


def _read(path: str) -> str | None:
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return None


def _stat_values(path: str) -> dict[str, int]:
    """A cgroup's ``memory.stat``: ``name value`` lines."""
    values = {}
    for line in (_read(path) or "").splitlines():
        name, _, value = line.partition(" ")
        if value.strip().isdigit():
            values[name] = int(value)
    return values
