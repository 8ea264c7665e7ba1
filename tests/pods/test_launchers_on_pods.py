"""Every launcher for real: DuckLakeJob runs whose Spark driver and executors are pods on the
test node, on a PostgreSQL catalog and an S3 lake, checked through DuckDB, ``kubectl logs``
and ``kubectl get``."""

from __future__ import annotations

import time

from ducklake_operator.controller.launchers.local_spare import memory_room
from support.kube_namespace import Kube
from support.manifests import table
from support.operator_process import is_ready, wait_for
from support.pod_env import PodEnv
from support.pod_runs import SMALL, explain, last_result, many_files_lake, rows, run_to_end
from support.runs import ENDED, cancel, job, state

QUANTITY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "k": 10**3, "M": 10**6, "G": 10**9}


def quantity_bytes(quantity: str) -> int:
    """A pod's memory quantity (``1Gi``, ``900M``, ``2147483648``) in bytes."""
    for unit, factor in QUANTITY.items():
        if quantity.endswith(unit):
            return int(quantity[: -len(unit)]) * factor
    return int(quantity)


def test_a_compaction_as_a_batch_job_with_two_executor_pods(pods: PodEnv, kube: Kube) -> None:
    location = many_files_lake(pods, kube)
    before = rows(pods, location)
    spark = {"launcher": "Job", "driver": SMALL, "executor": {"instances": 2, **SMALL}}
    kube.apply(job("compact-1", spark=spark, params={"minInputFiles": 2}))
    started = time.monotonic()
    status, seen = run_to_end(kube, "compact-1")
    assert status["state"] == "Succeeded", explain(kube, "compact-1", status)
    assert status["filesRead"] == 12 and status["filesWritten"] >= 1 and status["committedSnapshot"]
    executors = {p for p in seen if "-exec-" in p}
    assert len(executors) >= 2, seen
    assert rows(pods, location) == before

    # the executors are gone afterwards; the driver's pod stays (the Job's TTL) with its log
    wait_for("executors gone", lambda: not [p for p in kube.list("pods") if p["metadata"]["name"] in executors],
             timeout=60)  # fmt: skip
    log = kube.kubectl("logs", f"job/{status['launched']['name']}")
    result = last_result(log)
    assert result["state"] == "Succeeded" and result["report"]["filesRead"] == 12, log[-3000:]
    table_view = kube.kubectl("get", "ducklakejobs", "compact-1")
    assert "Succeeded" in table_view and "compact" in table_view
    print(f"compaction through 2 executor pods: {time.monotonic() - started:.1f} s")


def test_a_compaction_as_a_spark_application_through_the_spark_operator(pods: PodEnv, kube: Kube) -> None:
    """The real Kubeflow Spark Operator (v2.5.0 from its Go module, no mutating webhook) runs the
    SparkApplication: its driver and an executor are pods of it."""
    pods.install_spark_operator()
    location = many_files_lake(pods, kube, files=6)
    before = rows(pods, location)
    spark = {"launcher": "SparkApplication", "driver": SMALL, "executor": {"instances": 1, **SMALL}}
    kube.apply(job("compact-sa", spark=spark))
    status, seen = run_to_end(kube, "compact-sa")
    assert status["state"] == "Succeeded", explain(kube, "compact-sa", status)
    assert status["filesRead"] == 6 and status["committedSnapshot"]
    assert any(p.endswith("-driver") for p in seen) and any("-exec-" in p for p in seen), seen
    app = kube.get("sparkapplication", status["launched"]["name"]) or {}
    assert app["status"]["applicationState"]["state"] == "COMPLETED"
    assert rows(pods, location) == before


def test_a_compaction_with_the_local_launcher_runs_in_the_operator_pod(pods: PodEnv, kube: Kube) -> None:
    location = many_files_lake(pods, kube, files=4)
    before = rows(pods, location)
    kube.apply(job("compact-local", spark={"launcher": "Local"}))
    status, seen = run_to_end(kube, "compact-local")
    assert status["state"] == "Succeeded", explain(kube, "compact-local", status)
    assert status["filesRead"] == 4 and not seen  # no pod of its own: a process of the operator's pod
    assert rows(pods, location) == before


def test_the_next_local_run_on_spark_is_handed_to_a_warm_spare_in_the_operator_pod(pods: PodEnv, kube: Kube) -> None:
    """After a Local run on Spark the operator keeps a program ready with its Spark settings
    (``jobs.local.warmSpare``): the next such run is that process, its session already up."""
    location = many_files_lake(pods, kube, files=4)
    on_spark = {"launcher": "Local", "inProcessBelow": 0}
    kube.apply(job("compact-first", spark=on_spark))  # in a spare of an earlier test's run, or a program of its own
    status, _ = run_to_end(kube, "compact-first")
    assert status["state"] == "Succeeded" and status["ranOn"] == "spark", explain(kube, "compact-first", status)

    def spares() -> list[str]:
        return [p for p in pods.operator_tmp() if p.startswith("ducklake-runs/spare-") and p.endswith(".scratch")]

    wait_for("a warm spare in the operator pod", lambda: len(spares()) == 1, timeout=120, interval=1)
    spare = spares()[0]
    # the room the launcher weighed before it started the spare is read from the container's
    # own memory cgroup (None there, as where no limit is found, would start a spare anywhere)
    room = pods.operator_exec("python", "-c", f"from {memory_room.__module__} import memory_room; print(memory_room())")
    limit = pods.wait_operator_ready()["spec"]["containers"][0]["resources"]["limits"]["memory"]
    assert room.strip().isdigit() and 0 < int(room) < quantity_bytes(limit), (room, limit)
    con = pods.duckdb(location)
    try:
        for k in range(2):
            con.execute(f"INSERT INTO lk.orders SELECT i, {k} FROM range(1000, 1100) t(i)")
    finally:
        con.close()
    before = rows(pods, location)
    kube.apply(job("compact-warm", spark=on_spark))
    status, seen = run_to_end(kube, "compact-warm")
    assert status["state"] == "Succeeded" and status["ranOn"] == "spark", explain(kube, "compact-warm", status)
    report = status["jobReport"]["report"]
    assert report["sparkSession"] == "warm" and report["timings"]["sparkStart"] == 0 and not seen, report
    assert rows(pods, location) == before
    # its scratch was the spare's, gone with it; a new spare waits for the next run
    wait_for("the next spare", lambda: spares() not in ([], [spare]), timeout=120, interval=1)
    assert spare not in pods.operator_tmp()


def test_a_cancelled_local_run_leaves_only_its_logs_in_the_operator_pod(pods: PodEnv, kube: Kube) -> None:
    """A Local program the operator cancels dies with its Spark JVM before it can clean up
    (SIGTERM, then SIGKILL): the launcher removes its scratch directory (its TMPDIR: spill,
    staged files, Spark's local directories) and its Spark sockets' directory once nothing of
    it runs; its run document and logs stay. Read on the node, in the operator pod's emptyDir."""
    location = many_files_lake(pods, kube, files=4)
    before = rows(pods, location)
    pause = [{"name": "DUCKLAKE_FAULT_PAUSE", "value": "before_commit"},
             {"name": "DUCKLAKE_FAULT_MARKER", "value": "/tmp/compact-cancelled.paused"}]  # fmt: skip
    kube.apply(job("compact-cancelled", spark={"launcher": "Local", "env": pause}))

    def held_before_its_commit() -> bool:
        return "compact-cancelled.paused" in pods.operator_tmp()

    wait_for("the program held before its commit", held_before_its_commit, timeout=300, interval=1)
    held = pods.operator_tmp()
    scratch = [p for p in held if p.startswith("ducklake-runs/compact-cancelled-") and p.endswith(".scratch")]
    assert len(scratch) == 1 and [p for p in held if p.startswith("ducklake-sockets-")], held
    cancel(kube, "compact-cancelled")
    wait_for("the run ended", lambda: state(kube, "compact-cancelled") in ENDED, timeout=120)
    assert state(kube, "compact-cancelled") == "Cancelled"
    left = pods.operator_tmp()
    assert not [p for p in left if p.endswith(".scratch") or p.startswith(("ducklake-sockets-", "ducklake-spark-"))]
    assert scratch[0].replace(".scratch", ".out.log") in left, left  # its logs stay (a day)
    assert rows(pods, location) == before


def test_local_runs_beyond_the_charts_limit_wait_for_a_place_in_the_operator_pod(pods: PodEnv, kube: Kube) -> None:
    """The Local launcher's programs share the operator pod's memory: 20 of them at once got it
    OOM-killed (and every run with it). At most jobs.local.maxRuns (2) run; the others wait."""
    location = pods.lake(kube, options={"dataInliningRowLimit": 0})
    names = [f"t{i}" for i in range(6)]
    kube.apply(*(table(n, "lake") for n in names))
    wait_for("tables Ready", lambda: all(is_ready(kube.get("dlt", n)) for n in names), timeout=120)
    con = pods.duckdb(location)
    try:
        for n in names:
            for k in range(3):
                con.execute(f"INSERT INTO lk.{n} SELECT i, {k} FROM range(10) t(i)")
    finally:
        con.close()
    restarts = pods.wait_operator_ready()["status"]["containerStatuses"][0]["restartCount"]
    in_process = {"launcher": "Local", "inProcessBelow": "1GB"}
    kube.apply(*(job(f"local-{n}", table_name=f"main.{n}", spark=in_process) for n in names))
    most, waited = 0, set[str]()

    def ended() -> bool:
        nonlocal most
        states = {r["metadata"]["name"]: r.get("status") or {} for r in kube.list("dlj")}
        most = max(most, sum(1 for s in states.values() if s.get("state") == "Running"))
        waited.update(n for n, s in states.items() if "Local launcher" in str(s.get("waitingFor") or ""))
        return len(states) == len(names) and all(s.get("state") in ENDED for s in states.values())

    wait_for("the Local runs ended", ended, timeout=300, interval=0.2)
    for n in names:
        status = (kube.get("dlj", f"local-{n}") or {}).get("status") or {}
        assert status.get("state") == "Succeeded", explain(kube, f"local-{n}", status)
    assert most <= 2 and waited, (most, waited)
    assert pods.wait_operator_ready()["status"]["containerStatuses"][0]["restartCount"] == restarts
