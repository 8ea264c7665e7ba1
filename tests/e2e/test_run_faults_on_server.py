"""Runs that do not simply succeed, through the operator process and the Local launcher on the
real API server: cancelled (``spec.cancel``, deletion), timed out, the operator restarted
while a run runs, the job program SIGKILLed after it wrote its files. Each ends with nothing
of the run left running, its locks given back and the table as DuckDB read it before (or
compacted, when the run landed)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from ducklake_operator.model.job_marker import file_marker, is_marked
from support import duck
from support.job_program import pause_env
from support.operator_process import wait_for
from support.runs import (
    IN_PROCESS,
    LOCAL,
    cancel,
    commit_report,
    data_files,
    ended,
    ended_going_on,
    job,
    paused_programs,
    small_files_lake,
    state,
)


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


def held_on_spark(marker: Path) -> dict[str, Any]:
    """Spark settings of a Local run whose program holds before its commit until ``marker`` is
    deleted (its own ``spark.env``, which no warm spare has: a fresh program, and the run
    still going when the test cancels it or its deadline passes, however fast Spark starts)."""
    return {**LOCAL, "env": [{"name": k, "value": v} for k, v in pause_env("before_commit", str(marker)).items()]}


@pytest.mark.parametrize("how", ["spec.cancel", "deletion"])
def test_a_cancelled_run_stops_its_processes_and_commits_nothing(kube, operator, tmp_path, how: str) -> None:
    location = small_files_lake(kube, tmp_path, inserts=4)
    before = duck.observe_table(location, "orders")
    kube.apply(job("cancel-me", spark=held_on_spark(tmp_path / "held")))
    pid = spark_pid(running(kube, "cancel-me"))
    wait_for("held before its commit", (tmp_path / "held").exists, timeout=60)
    if how == "spec.cancel":
        cancel(kube, "cancel-me")
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
    kube.apply(job("slow", spark=held_on_spark(tmp_path / "held"), timeout=2))
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
    with paused_programs(operator, "before_commit", marker):  # its runs hang right before their commit
        kube.apply(job("killed", spark=IN_PROCESS))
        wait_for("paused before its commit", marker.exists, timeout=60)
        run = kube.get("dlj", "killed")
        written = [os.path.join(d, f) for d, _, names in os.walk(tmp_path / "lake-data") for f in names
                   if is_marked(f, file_marker(run["metadata"]["uid"]))]  # fmt: skip
        assert written  # its merged file, not committed
        os.kill(spark_pid(run), signal.SIGKILL)
        status = ended(kube, "killed", timeout=60)["status"]
    assert status["state"] == "Failed", status
    assert "without a result" in status["message"]
    assert status["message"].endswith(
        f"nothing was committed, the operator deleted its {len(written)} uncommitted files"
    )
    assert not any(os.path.exists(f) for f in written)
    assert duck.same_as_before(duck.observe_table(location, "orders"), before)
    assert kube.list("leases") == []  # released before the run's end was written


@pytest.mark.parametrize("how", ["SIGKILL", "spec.cancel"])
def test_a_run_stopped_after_its_commit_landed_succeeded_and_is_not_run_again(kube, operator, tmp_path, how) -> None:
    """The job program stopped right after its commit, before it could say so: the catalog
    says the run landed, so it ends Succeeded with its snapshot, and its retries are not
    used (one launch)."""
    location = small_files_lake(kube, tmp_path, inserts=4)
    marker = tmp_path / "paused"
    with paused_programs(operator, "after_commit", marker):
        kube.apply(job("landed", spark=IN_PROCESS, retries=2))
        wait_for("paused after its commit", marker.exists, timeout=60)
        run = kube.get("dlj", "landed")
        if how == "SIGKILL":
            os.kill(spark_pid(run), signal.SIGKILL)
        else:
            cancel(kube, "landed")
        status = ended(kube, "landed", timeout=60)["status"]
    assert status["state"] == "Succeeded" and status["attempts"] == 1, status
    con = duck.attach(location, con=duck.connect())
    try:
        latest = duck.scalar(con, "SELECT max(snapshot_id) FROM lk.snapshots()")
        report = commit_report(con, status["committedSnapshot"])
    finally:
        con.close()
    assert status["committedSnapshot"] == latest and report["ducklakeJob"]["uid"] == run["metadata"]["uid"]
    assert status["filesRead"] == 4 and status["filesWritten"] == 1 and status["after"]["files"] == 1
    note = "" if how == "SIGKILL" else "cancelled: spec.cancel is true, but it had committed: "
    assert status["message"].startswith(f"{note}committed snapshot {latest}"), status["message"]
    assert [e["reason"] for e in kube.events("landed")].count("Launched") == 1
    assert process_gone(spark_pid(run)) and kube.list("leases") == [] and data_files(location) == 1


def test_a_held_table_stays_held_across_an_operator_restart(kube, operator, tmp_path) -> None:
    """A run holding its table (held before its commit) keeps it while the operator restarts:
    a run on the same table created afterwards waits for it, and starts once it has ended."""
    small_files_lake(kube, tmp_path, inserts=4)
    marker = tmp_path / "paused"
    with paused_programs(operator, "before_commit", marker):
        kube.apply(job("first", spark=IN_PROCESS))
        wait_for("first paused before its commit", marker.exists, timeout=60)
        uid = kube.get("dlj", "first")["metadata"]["uid"]
        (lease,) = [item for item in kube.list("leases") if item["spec"]["holderIdentity"] == uid]
        operator.restart()
        kube.apply(job("second", operation="rewriteDeletes", spark=IN_PROCESS))  # any operation: one run per table
        waiting = wait_for("second waiting", lambda: kube.get("dlj", "second").get("status", {}).get("waitingFor"))
        assert waiting == "DuckLakeJob first, which holds table main.orders"
        time.sleep(3)  # the point: the restarted operator looks again meanwhile and starts nothing
        assert state(kube, "second") == "Pending" and state(kube, "first") == "Running"
        held = kube.get("lease", lease["metadata"]["name"])
        assert held["spec"]["holderIdentity"] == uid and not kube.get("dlj", "second")["status"].get("locks")
        first = ended_going_on(kube, "first", marker)["status"]
        second = ended_going_on(kube, "second", marker)["status"]
    assert first["state"] == second["state"] == "Succeeded" and first["attempts"] == second["attempts"] == 1
    assert first["completionTime"] <= second["startTime"]
    kube.event("second", "Waiting", containing="DuckLakeJob first")
    assert kube.list("leases") == []
