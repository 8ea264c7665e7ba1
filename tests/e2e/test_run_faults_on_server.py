"""Runs that do not simply succeed, through the operator process and the Local launcher on the
real API server: cancelled (``spec.cancel``, deletion), timed out, the operator restarted
while a run runs, the job program SIGKILLed after it wrote its files. Each ends with nothing
of the run left running, its locks given back and the table as DuckDB read it before (or
compacted, when the run landed)."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest

from ducklake_operator.model.job_marker import file_marker, is_marked
from support import duck
from support.job_program import pause_env
from support.operator_process import wait_for
from support.runs import IN_PROCESS, LOCAL, ended, job, small_files_lake, state


def running(kube, name: str) -> dict[str, Any]:
    return wait_for(f"{name} Running", lambda: state(kube, name) == "Running" and kube.get("dlj", name), timeout=60)


def process_gone(pid: int) -> bool:
    """No process of the group ``pid`` leads (the program, Spark's JVM) is left."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pid and fields[0] != "Z":
                return False
    return True


def spark_pid(run: dict[str, Any]) -> int:
    return int(run["status"]["launched"]["detail"]["pid"])


@pytest.mark.parametrize("how", ["spec.cancel", "deletion"])
def test_a_cancelled_run_stops_its_processes_and_commits_nothing(kube, operator, tmp_path, how: str) -> None:
    location = small_files_lake(kube, tmp_path, inserts=4)
    before = duck.observe_table(location, "orders")
    kube.apply(job("cancel-me", spark=LOCAL))  # Spark: seconds to start, time to cancel it
    pid = spark_pid(running(kube, "cancel-me"))
    if how == "spec.cancel":
        kube.kubectl("patch", "dlj", "cancel-me", "--type=merge", "-p", '{"spec": {"cancel": true}}')
        status = ended(kube, "cancel-me", timeout=60)["status"]
        assert status["state"] == "Cancelled", status
        assert status["message"].startswith("cancelled: spec.cancel is true; nothing was committed")
        assert status["duration"].endswith("s")  # every end says how long the run took
    else:
        kube.delete("dlj", "cancel-me")
        wait_for("deleted", lambda: kube.get("dlj", "cancel-me") is None, timeout=60)
    assert process_gone(pid)
    assert kube.list("leases") == []
    assert duck.same_as_before(duck.observe_table(location, "orders"), before)


def test_a_run_past_its_timeout_is_stopped_and_fails(kube, operator, tmp_path) -> None:
    location = small_files_lake(kube, tmp_path, inserts=4)
    before = duck.observe_table(location, "orders")
    kube.apply(job("slow", spark=LOCAL, timeout=2))
    pid = spark_pid(running(kube, "slow"))
    status = ended(kube, "slow", timeout=60)["status"]
    assert status["state"] == "Failed" and status["message"].startswith("timed out after 2 s; nothing was committed")
    assert status["duration"].endswith("s")
    assert process_gone(pid) and kube.list("leases") == []
    assert duck.same_as_before(duck.observe_table(location, "orders"), before)


def test_a_restarted_operator_reattaches_to_a_running_run(kube, operator, tmp_path) -> None:
    location = small_files_lake(kube, tmp_path, inserts=4)
    before = duck.observe_table(location, "orders")
    kube.apply(job("survivor", spark=LOCAL))
    pid = spark_pid(running(kube, "survivor"))
    # the job program reports its phase to the run's status while it runs (before and after the restart)
    seen = wait_for("progress from the program", lambda: (kube.get("dlj", "survivor")["status"].get("progress") or "")
                    .split(" ")[0] in ("planning", "writing", "committing", "done"))  # fmt: skip
    assert seen
    operator.restart()  # the program runs on, in its own session
    status = ended(kube, "survivor", timeout=120)["status"]
    assert status["state"] == "Succeeded" and status["attempts"] == 1 and spark_pid({"status": status}) == pid
    assert [e["reason"] for e in kube.events("survivor")].count("Launched") == 1  # never launched twice
    after = duck.observe_table(location, "orders")
    assert after["now"] == before["now"] and status["after"]["files"] == 1


def test_a_killed_job_program_fails_the_run_and_its_files_are_deleted(kube, operator, tmp_path) -> None:
    location = small_files_lake(kube, tmp_path, inserts=4)
    before = duck.observe_table(location, "orders")
    marker = tmp_path / "paused"
    paused = pause_env("before_commit", str(marker))
    operator.env.update(paused)
    operator.restart()  # its runs hang right before their commit (the job program's test seam)
    try:
        kube.apply(job("killed", spark=IN_PROCESS))
        wait_for("paused before its commit", marker.exists, timeout=60)
        run = kube.get("dlj", "killed")
        written = [os.path.join(d, f) for d, _, names in os.walk(tmp_path / "lake-data") for f in names
                   if is_marked(f, file_marker(run["metadata"]["uid"]))]  # fmt: skip
        assert written  # its merged file, not committed
        os.kill(spark_pid(run), signal.SIGKILL)
        status = ended(kube, "killed", timeout=60)["status"]
    finally:
        for name in paused:
            del operator.env[name]
        operator.restart()
    assert status["state"] == "Failed", status
    assert "without a result" in status["message"] and f"{len(written)} uncommitted files deleted" in status["message"]
    assert not any(os.path.exists(f) for f in written)
    assert duck.same_as_before(duck.observe_table(location, "orders"), before)
    assert kube.list("leases") == []  # released before the run's end was written
