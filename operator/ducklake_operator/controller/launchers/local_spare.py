"""The Local launcher's warm spare: a job program started before its run
(``ducklake_jobs.spare``), so that a run on Spark does not wait for Spark to start.

After a run whose program used Spark, when no other program runs, the launcher starts one
spare with that run's Spark settings and environment; it starts its SparkContext and its
workers, then waits. The next attempt whose settings are the same is handed to it (its run
file and credentials on the spare's stdin) and becomes that process: its pid, its process
group, its scratch directory, its logs. An attempt with other settings gets a fresh program
and the spare is stopped first, so at most ``maxRuns`` programs are ever in the operator's
pod; a spare no run came to within ``IDLE_SECONDS`` exits by itself.
Chart value ``jobs.local.warmSpare`` (``DUCKLAKE_LOCAL_WARM_SPARE``), on by default.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass

from ...model.spare_handoff import Handoff, handoff_line
from .spec import LaunchSpec

WARM_SPARE_ENV = "DUCKLAKE_LOCAL_WARM_SPARE"
SPARE_PREFIX = "spare-"  # + 16 hex digits: a spare's name among the attempts' in the state directory
# a spare no run came to in this long exits (its memory back to the pod); the next run starts its own
IDLE_SECONDS = 900.0


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


def spare_key(spec: LaunchSpec) -> str | None:
    """What a spare must have been started with to run this attempt: the run document's Spark
    settings and the settings' ``spark.env`` (its JVM and workers keep the environment they
    started with). None: no spare runs it (a ``spark.env`` value from a Secret, which no
    process gets before it has a run; or a run document that does not read)."""
    if any(var.secret is not None for var in spec.env):
        return None
    try:
        spark = json.loads(spec.run_document).get("spark") or {}
    except (ValueError, AttributeError):
        return None
    return json.dumps({"spark": spark, "env": [[var.name, var.value] for var in spec.env]}, sort_keys=True)


def spark_settings(spec: LaunchSpec) -> str:
    """The run document's ``spark`` object (JSON), which a spare starts its session from."""
    return json.dumps(json.loads(spec.run_document).get("spark") or {})


@dataclass
class Spare:
    """A started spare: its program (stdin a pipe: the handoff, or its end) and its files."""

    name: str
    key: str
    proc: subprocess.Popen[bytes]
    scratch: str
    files: tuple[str, ...]  # its record and logs in the state directory
    out_path: str
    err_path: str

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
