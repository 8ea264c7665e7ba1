"""Faults on real pods: DuckLakeJob runs on the test node whose pods are lost, killed, cannot
start or run out of memory, whose operator is replaced or whose node's kubelet stops. Each
test says what the run's status says, that nothing was committed twice (the catalog's
snapshots carrying the run's uid), that no row was lost (DuckDB reads the same rows), and
that the run's words on its files are true (the S3 bucket listed).

A test holds a job at one of the job program's fault points (``ducklake_jobs.fault_points.
fault_point``) through the run's ``spark.env``: the program writes a marker file in its pod's
/tmp and waits while it exists; the test sees it with ``kubectl exec`` and lets the job go on
by deleting it, or deletes the pod there."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from ducklake_operator.catalog import CatalogLocation
from ducklake_operator.model.job_marker import file_marker, job_commit_report
from support.kube_namespace import Kube
from support.operator_process import wait_for
from support.pod_env import PodEnv
from support.pod_runs import SMALL, explain, many_files_lake, rows, run_to_end, s3_files, s3_url
from support.runs import ENDED, job

MARKER = "/tmp/ducklake-fault"  # in the pods' writable /tmp
ONE_EXECUTOR = {"launcher": "Job", "driver": SMALL, "executor": {"instances": 1, **SMALL}}
TWO_EXECUTORS = {"launcher": "Job", "driver": SMALL, "executor": {"instances": 2, **SMALL}}


# ---------------------------------------------------------------------- what the lake says


def commits_of(pods: PodEnv, location: CatalogLocation, uid: str) -> list[int]:
    """The snapshots committed by the DuckLakeJob with ``uid``, as DuckDB reads the catalog."""
    con = pods.duckdb(location)
    try:
        found = con.execute("SELECT snapshot_id, commit_extra_info FROM lk.snapshots() ORDER BY snapshot_id").fetchall()
    finally:
        con.close()
    return [int(s) for s, info in found if job_commit_report(info, uid) is not None]


def snapshot_count(pods: PodEnv, location: CatalogLocation) -> int:
    con = pods.duckdb(location)
    try:
        return int(con.execute("SELECT count(*) FROM lk.snapshots()").fetchone()[0])  # type: ignore[index]
    finally:
        con.close()


def table_files(pods: PodEnv, location: CatalogLocation) -> set[str]:
    """The data and delete files of ``main.orders`` now (s3://bucket/key)."""
    con = pods.duckdb(location)
    try:
        found = con.execute("SELECT data_file, delete_file FROM ducklake_list_files('lk', 'orders')").fetchall()
    finally:
        con.close()
    return {path for pair in found for path in pair if path}


def files_of_run(pods: PodEnv, kube: Kube, uid: str) -> set[str]:
    """The objects of the namespace's lake in the bucket that the run with ``uid`` wrote (their
    names carry its marker), listed."""
    marker = file_marker(uid)
    keys = s3_files(pods, f"{kube.namespace}/")
    return {s3_url(k) for k in keys if k.endswith((f"-{marker}.parquet", f"-{marker}-delete.parquet"))}


def uncommitted_files(pods: PodEnv, kube: Kube, location: CatalogLocation, uid: str) -> set[str]:
    return files_of_run(pods, kube, uid) - table_files(pods, location)


# ---------------------------------------------------------------------- runs and their pods


def uid_of(kube: Kube, name: str) -> str:
    return str((kube.get("dlj", name) or {})["metadata"]["uid"])


def run_seconds(status: dict[str, Any]) -> float:
    """From the run's start to its end, as its status says."""
    start, end = (datetime.fromisoformat(status[k].replace("Z", "+00:00")) for k in ("startTime", "completionTime"))
    return (end - start).total_seconds()


def fault_env(point: str) -> list[dict[str, str]]:
    """``spark.env`` that holds the job program at ``point`` while MARKER exists in its pod."""
    return [{"name": "DUCKLAKE_FAULT_PAUSE", "value": point}, {"name": "DUCKLAKE_FAULT_MARKER", "value": MARKER}]


def pods_of(
    kube: Kube, name: str, role: str | None = None, attempt: int | None = None, deleted: bool = False
) -> list[dict[str, Any]]:
    """The run's pods (``role``: driver or executor); ``deleted``: those being deleted too."""
    found = []
    for pod in kube.list("pods"):
        labels = pod["metadata"].get("labels") or {}
        if labels.get("ducklake.dev/job") != name or (pod["metadata"].get("deletionTimestamp") and not deleted):
            continue
        if attempt is not None and labels.get("ducklake.dev/attempt") != str(attempt):
            continue
        is_executor = labels.get("spark-role") == "executor"
        if role is None or (role == "executor") == is_executor:
            found.append(pod)
    return found


def held(kube: Kube, pod: str) -> bool:
    """Whether the job program in ``pod`` waits at its fault point."""
    return kube.cluster.kubectl_result("-n", kube.namespace, "exec", pod, "--", "test", "-e", MARKER).returncode == 0


def held_driver(kube: Kube, name: str, attempt: int, timeout: float = 300) -> str:
    """The attempt's driver pod, once its job program waits at its fault point."""

    def found() -> str | None:
        for pod in pods_of(kube, name, "driver", attempt):
            if pod["status"].get("phase") == "Running" and held(kube, pod["metadata"]["name"]):
                return str(pod["metadata"]["name"])
        # a run that ended first (its deadline passed on a loaded machine) will never be held
        status = (kube.get("dlj", name) or {}).get("status") or {}
        if status.get("state") in ENDED:
            raise AssertionError(f"ended before attempt {attempt} was held: {explain(kube, name, status)}")
        return None

    return str(wait_for(f"attempt {attempt} of {name} held at its fault point", found, timeout=timeout, interval=1))


def launches(kube: Kube, name: str) -> int:
    """How many attempts of the run were launched, by its events (a repeated event is counted)."""
    return sum(int(e.get("count") or 1) for e in kube.events(name) if e["reason"] == "Launched")


def release(kube: Kube, pod: str) -> None:
    kube.kubectl("exec", pod, "--", "rm", "-f", MARKER, check=False)


def files_as_said(pods: PodEnv, kube: Kube, uid: str, message: str, written: set[str]) -> None:
    """The run's words on the files an attempt ``written`` and did not commit are true of the
    bucket: deleted (by the operator or the job program) and gone, or kept, there, and
    marked as the run's for deleteOrphanFiles (their names carry its marker)."""
    there = files_of_run(pods, kube, uid) & written
    if "uncommitted files were kept" in message:
        assert there == written and "deleteOrphanFiles removes them" in message, (message, written - there)
        assert f"its {len(written)} uncommitted files were kept" in message, (message, written)
    else:
        assert there == set(), (message, there)
        said = [f"the operator deleted its {len(written)} uncommitted files", "the job program deleted the files"]
        assert any(s in message for s in said), (message, written)


# ---------------------------------------------------------------------- the faults


def test_an_executor_pod_lost_during_a_task_leaves_the_run_to_succeed_with_one_commit(pods: PodEnv, kube: Kube) -> None:
    """A task held in its executor (the fault point ``in_task``), whose pod is force-deleted:
    Spark runs the task again elsewhere; every other executor's task is let go."""
    location = many_files_lake(pods, kube, files=12)
    before = rows(pods, location)
    kube.apply(job("lost-executor", spark={**TWO_EXECUTORS, "env": fault_env("in_task")}, timeout="15m"))

    def holding() -> str | None:
        for pod in pods_of(kube, "lost-executor", "executor"):
            if pod["status"].get("phase") == "Running" and held(kube, pod["metadata"]["name"]):
                return str(pod["metadata"]["name"])
        return None

    victim = str(wait_for("a task held in an executor", holding, timeout=300, interval=1))
    kube.kubectl("delete", "pod", victim, "--grace-period=0", "--force")
    released: dict[str, float] = {}

    def let_go(pod: dict[str, Any]) -> None:  # every other executor's task goes on (a look every few seconds)
        name = pod["metadata"]["name"]
        if "-exec-" in name and name != victim and pod["status"].get("phase") == "Running":
            if time.monotonic() - released.get(name, 0.0) > 3:
                released[name] = time.monotonic()
                release(kube, name)

    status, seen = run_to_end(kube, "lost-executor", timeout=600, watch=let_go)
    assert status["state"] == "Succeeded", explain(kube, "lost-executor", status)
    uid = uid_of(kube, "lost-executor")
    assert commits_of(pods, location, uid) == [status["committedSnapshot"]] and status["attempts"] == 1
    assert victim not in released  # its task never went on there: it ran again on another executor
    assert uncommitted_files(pods, kube, location, uid) == set()
    assert rows(pods, location) == before
    print(f"executor {victim} lost during its task: {status['message']} ({len(seen)} pods)")


def test_the_driver_lost_before_its_commit_is_retried_and_commits_once(pods: PodEnv, kube: Kube) -> None:
    location = many_files_lake(pods, kube, files=6)
    before = rows(pods, location)
    spark = {**ONE_EXECUTOR, "env": fault_env("before_commit")}
    kube.apply(job("driver-lost", spark=spark, retries=1, timeout="15m"))
    first = held_driver(kube, "driver-lost", 1)
    uid = uid_of(kube, "driver-lost")
    written = files_of_run(pods, kube, uid)
    assert written and commits_of(pods, location, uid) == []  # its files are there, not committed
    kube.kubectl("delete", "pod", first, "--wait=false")
    release(kube, held_driver(kube, "driver-lost", 2))
    status, _ = run_to_end(kube, "driver-lost", timeout=600)
    assert status["state"] == "Succeeded" and status["attempts"] == 2, explain(kube, "driver-lost", status)
    assert commits_of(pods, location, uid) == [status["committedSnapshot"]]
    (failed,) = [e["message"] for e in kube.events("driver-lost") if e["reason"] == "AttemptFailed"]
    assert failed.startswith("attempt 1 failed") and "nothing was committed" in failed, failed
    files_as_said(pods, kube, uid, failed, written)
    assert uncommitted_files(pods, kube, location, uid) == set()
    assert rows(pods, location) == before
    print(f"driver lost before its commit: {failed}; then {status['message']}")


def test_the_driver_lost_right_after_its_commit_succeeds_and_is_not_run_again(pods: PodEnv, kube: Kube) -> None:
    location = many_files_lake(pods, kube, files=6)
    before = rows(pods, location)
    spark = {**ONE_EXECUTOR, "env": fault_env("after_commit")}
    kube.apply(job("driver-lost-late", spark=spark, retries=1, timeout="15m"))
    driver = held_driver(kube, "driver-lost-late", 1)
    uid = uid_of(kube, "driver-lost-late")
    (committed,) = commits_of(pods, location, uid)
    kube.kubectl("delete", "pod", driver, "--wait=false")
    status, seen = run_to_end(kube, "driver-lost-late", timeout=600)
    assert status["state"] == "Succeeded", explain(kube, "driver-lost-late", status)
    assert status["committedSnapshot"] == committed and commits_of(pods, location, uid) == [committed]
    assert status["attempts"] == 1 and launches(kube, "driver-lost-late") == 1, status  # launched once
    assert all(p["metadata"]["labels"]["ducklake.dev/attempt"] == "1" for p in pods_of(kube, "driver-lost-late"))
    assert uncommitted_files(pods, kube, location, uid) == set()
    assert rows(pods, location) == before
    print(f"driver lost right after its commit: {status['message']} (pods {sorted(seen)})")


def test_an_image_not_on_the_node_fails_the_run_at_once_with_the_reason(pods: PodEnv, kube: Kube) -> None:
    location = many_files_lake(pods, kube, files=4)
    before, snapshots = rows(pods, location), snapshot_count(pods, location)
    spark = {**TWO_EXECUTORS, "image": "ducklake.test/not-on-the-node:1", "imagePullPolicy": "Never"}
    kube.apply(job("no-image", spark=spark, timeout="10m", retries=1))
    status, _ = run_to_end(kube, "no-image")
    message = str(status.get("message"))
    assert status["state"] == "Failed" and "ErrImageNeverPull" in message, explain(kube, "no-image", status)
    assert "spark.image" in message and "not retried" in message and status["attempts"] == 1, message
    # at once, not at the deadline: a generous bound for a loaded 2-core machine
    assert run_seconds(status) < 600 / 4, (run_seconds(status), message)
    uid = uid_of(kube, "no-image")
    assert commits_of(pods, location, uid) == [] and snapshot_count(pods, location) == snapshots
    assert files_of_run(pods, kube, uid) == set()  # it never ran
    assert rows(pods, location) == before
    print(f"image not on the node: Failed after {run_seconds(status):.0f} s of its 600 s timeout: {message}")


def test_executors_killed_for_memory_fail_the_run_saying_what_to_raise(pods: PodEnv, kube: Kube) -> None:
    location = many_files_lake(pods, kube, files=6)
    before, snapshots = rows(pods, location), snapshot_count(pods, location)
    # the executors' JVMs take their whole 512 MiB heap at once (pre-touched), and their pods
    # get 1 MiB beside it: the kernel kills them at their memory limit, every time
    conf = {"spark.executor.memoryOverhead": "1m", "spark.executor.extraJavaOptions": "-Xms512m -XX:+AlwaysPreTouch"}
    kube.apply(job("oom", spark={**TWO_EXECUTORS, "conf": conf}, timeout="10m"))
    status, seen = run_to_end(kube, "oom", timeout=600)
    message = str(status.get("message"))
    assert status["state"] == "Failed", explain(kube, "oom", status)
    assert "the executors ran out of memory" in message, explain(kube, "oom", status)
    assert "raise spark.executor.memory" in message, message
    uid = uid_of(kube, "oom")
    assert commits_of(pods, location, uid) == [] and snapshot_count(pods, location) == snapshots
    assert uncommitted_files(pods, kube, location, uid) == set(), message
    assert rows(pods, location) == before
    print(f"executors out of memory ({len([p for p in seen if '-exec-' in p])} executor pods): {message}")


def test_a_run_whose_operator_pod_is_replaced_is_adopted_by_the_new_one(pods: PodEnv, kube: Kube) -> None:
    location = many_files_lake(pods, kube, files=6)
    before = rows(pods, location)
    kube.apply(job("adopted", spark={**ONE_EXECUTOR, "env": fault_env("before_commit")}, retries=1, timeout="15m"))
    driver = held_driver(kube, "adopted", 1)
    launched = (kube.get("dlj", "adopted") or {})["status"]["launched"]
    (old,) = [p["metadata"]["name"] for p in pods.operator_pods()]
    pods.cluster.kubectl("-n", pods.operator_pods()[0]["metadata"]["namespace"], "delete", "pod", old)
    new = pods.wait_operator_ready()["metadata"]["name"]
    assert new != old
    release(kube, driver)  # the job goes on, under the new operator
    status, _ = run_to_end(kube, "adopted", timeout=600)
    assert status["state"] == "Succeeded" and status["attempts"] == 1, explain(kube, "adopted", status)
    uid = uid_of(kube, "adopted")
    assert commits_of(pods, location, uid) == [status["committedSnapshot"]]
    assert status["launched"] == launched and launches(kube, "adopted") == 1  # the same attempt, launched once
    assert uncommitted_files(pods, kube, location, uid) == set()
    assert rows(pods, location) == before
    print(f"operator pod {old} replaced by {new} during the run: {status['message']}")


def test_a_run_on_a_node_whose_kubelet_stopped_ends_at_its_deadline_and_never_commits(pods: PodEnv, kube: Kube) -> None:
    """The job held before its commit, the kubelet stopped: its pods can neither be stopped
    nor seen. The deadline ends the run all the same; once the kubelet is back the job is
    let go, and its commit is refused (past the deadline) or it is stopped first."""
    location = many_files_lake(pods, kube, files=6)
    before, snapshots = rows(pods, location), snapshot_count(pods, location)
    timeout = 90  # room for a driver and an executor to start on a loaded node
    spark = {**ONE_EXECUTOR, "env": fault_env("before_commit")}
    kube.apply(job("kubelet-gone", spark=spark, retries=1, timeout=timeout))
    driver = held_driver(kube, "kubelet-gone", 1)
    uid = uid_of(kube, "kubelet-gone")
    written = files_of_run(pods, kube, uid)
    pods.node.stop_kubelet()
    try:
        status, _ = run_to_end(kube, "kubelet-gone", timeout=600)
        message = str(status.get("message"))
        assert status["state"] == "Failed" and f"timed out after {timeout} s" in message, message
        # at its deadline, not once its pods are gone: generous for a loaded 2-core machine
        assert run_seconds(status) < timeout + 60, (run_seconds(status), message)
        assert "nothing was committed" in message and commits_of(pods, location, uid) == [], message
        files_as_said(pods, kube, uid, message, written)
    finally:
        pods.node.start_kubelet()
    release(kube, driver)  # if the kubelet has not stopped it yet, the job goes on to its commit
    wait_for("the run's pods gone", lambda: not pods_of(kube, "kubelet-gone", deleted=True), timeout=180, interval=1)
    assert commits_of(pods, location, uid) == [] and snapshot_count(pods, location) == snapshots
    assert rows(pods, location) == before
    print(f"kubelet stopped: Failed after {run_seconds(status):.0f} s of its {timeout} s timeout: {message}")
