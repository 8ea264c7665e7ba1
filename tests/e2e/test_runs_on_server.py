"""DuckLakeJob runs driven by the operator process on the real API server: the Local launcher
running the real job program (in-process and on Spark local mode) against real catalogs
read back with DuckDB 1.5.5; the Job and SparkApplication launchers checked by the objects
the server accepted and by driving their status with ``kubectl patch --subresource=status``
(there is no kubelet: their pods never run); bad input; cancellation; restarts.
"""

from __future__ import annotations

import threading
from contextlib import closing
from typing import Any

import psycopg2
from kubernetes import client, config, watch

from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.model.changes import CreateSchema
from ducklake_operator.model.job_marker import session_name
from support import duck
from support.manifests import manifest, table
from support.operator_process import condition, is_ready, wait_for
from support.runs import (
    ENDED,
    IN_PROCESS,
    commit_report,
    data_files,
    ended,
    insert,
    job,
    paused_programs,
    pg_lake,
    small_files_lake,
)

RETRIES, CONFLICTS = "ducklake_catalog_commit_retries_total", "ducklake_catalog_commit_conflicts_total"


def test_a_compaction_run_reads_like_show_alter_and_matches_the_catalog(kube, operator, tmp_path) -> None:
    location = small_files_lake(kube, tmp_path)
    before = duck.observe_table(location, "orders")
    ended_before = operator.metric_or_zero("ducklake_jobs_total")
    kube.apply(job("compact-1", spark=IN_PROCESS))
    kube.kubectl("wait", "--for=condition=Complete", "ducklakejob/compact-1", "--timeout=90s")
    run = kube.get("dlj", "compact-1")
    status = run["status"]
    assert status["state"] == "Succeeded" and status["attempts"] == 1 and status["ranOn"] == "in-process"
    assert (
        status["filesRead"] == 6 and status["filesWritten"] == 1 and status["rowsRead"] == status["rowsWritten"] == 300
    )
    assert status["before"]["files"] == 6 and status["after"]["files"] == 1
    assert status["launched"]["kind"] == "Local" and status["progress"] == "done"
    assert condition(run, "Complete")["status"] == "True" and condition(run, "Failed")["status"] == "False"
    assert status["message"].startswith(f"committed snapshot {status['committedSnapshot']}")
    # the catalog's word: the snapshot names the run and carries the figures the status shows
    con = duck.attach(location, con=duck.connect())
    extra = commit_report(con, status["committedSnapshot"])
    con.close()
    assert extra["ducklakeJob"]["uid"] == run["metadata"]["uid"]
    figures = ("filesRead", "filesWritten", "bytesRead", "bytesWritten", "rowsRead", "rowsWritten")
    assert {k: extra["report"][k] for k in figures} == {k: status[k] for k in figures}
    assert data_files(location) == 1 and duck.same_as_before(duck.observe_table(location, "orders"), before)
    header, row = kube.kubectl("get", "ducklakejobs").splitlines()[:2]
    assert header.split() == ["NAME", "TABLE", "OPERATION", "STATE", "PROGRESS", "STARTED", "DURATION", "MESSAGE"]
    assert row.split()[:5] == ["compact-1", "main.orders", "compact", "Succeeded", "done"]
    wait_for("its events", lambda: {"Launched", "Succeeded"} <= {e["reason"] for e in kube.events("compact-1")})
    # an ended run holds nothing up: kopf drops its finalizer in the patch after the status that ended it
    wait_for("its finalizer gone", lambda: not kube.get("dlj", "compact-1")["metadata"].get("finalizers"))
    assert operator.metric("ducklake_jobs_total") == ended_before + 1  # counted once, by operation and state
    assert operator.metric("ducklake_job_duration_seconds_count") >= 1
    assert kube.list("leases") == []  # its locks are given back


def test_a_new_run_reads_pending_before_anything_else(kube, operator, tmp_path) -> None:
    """The operator's first word on a new DuckLakeJob is ``state: Pending``, published before it
    takes a lock or launches anything, so that no reader (a policy's test, ``kubectl get``)
    meets a run the operator has seen without a state. Every version of the run the server
    held, in order, replayed by a watch from before its creation."""
    small_files_lake(kube, tmp_path, inserts=2)
    api = client.CustomObjectsApi(config.new_client_from_config(config_file=kube.cluster.kubeconfig))
    jobs = ("ducklake.dev", "v1alpha1", kube.namespace, "ducklakejobs")
    listed: Any = api.list_namespaced_custom_object(*jobs)
    since = listed["metadata"]["resourceVersion"]
    kube.apply(job("first-word", spark=IN_PROCESS))
    states: list[str | None] = []
    for event in watch.Watch().stream(
        api.list_namespaced_custom_object, *jobs, resource_version=since, timeout_seconds=90
    ):
        state = (event["object"].get("status") or {}).get("state")
        if not states or states[-1] != state:
            states.append(state)
        if state in ENDED:
            break
    assert states == [None, "Pending", "Running", "Succeeded"]


def test_every_ended_run_is_published_whole(kube, operator, tmp_path) -> None:
    """A run's terminal status stops its daemon (kopf's ``when`` filter no longer matches once
    the watch brings the status back): the tick that wrote it still posts its events, counts
    the run and takes it off the Running gauge. Without a grace period kopf cancelled the
    daemon mid-tick, about one run in three (a ``Succeeded`` run without its event or count)."""
    small_files_lake(kube, tmp_path, inserts=2)
    names = [f"whole-{i}" for i in range(6)]  # one table: they run one after another
    ended_before = operator.metric_or_zero("ducklake_jobs_total", operation="compact")
    running_before = operator.metric_or_zero("ducklake_jobs_running", operation="compact")
    kube.apply(*(job(name, spark=IN_PROCESS) for name in names))
    assert [ended(kube, name)["status"]["state"] for name in names] == ["Succeeded"] * len(names)
    wait_for(
        "every run's events",
        lambda: all({"Launched", "Succeeded"} <= {e["reason"] for e in kube.events(name)} for name in names),
        timeout=20,
    )
    assert operator.metric("ducklake_jobs_total", operation="compact") == ended_before + len(names)
    assert operator.metric("ducklake_jobs_running", operation="compact") == running_before


def test_bad_requests_fail_at_once_and_launch_nothing(kube, operator, tmp_path) -> None:
    small_files_lake(kube, tmp_path, inserts=1)
    kube.apply(
        job("bad-param", params={"targetFileSze": "1MB"}, spark=IN_PROCESS),
        job("no-table", table_name="main.nothing", spark=IN_PROCESS),
        job("no-catalog", catalogRef={"name": "elsewhere"}, spark=IN_PROCESS),
        job("wide-with-table", operation="expireSnapshots", spark=IN_PROCESS),
        job("no-image", spark={"launcher": "Job"}),  # the test operator has no DUCKLAKE_JOB_IMAGE
    )
    expected = {
        "bad-param": "spec.params.targetFileSze: not a parameter of compact (did you mean targetFileSize?)",
        "no-table": "table main.nothing does not exist in catalog lake",
        "no-catalog": "DuckLakeCatalog 'elsewhere' does not exist in namespace",
        "wide-with-table": "spec.table: expireSnapshots works on the whole catalog; remove the table",
        "no-image": "could not launch: no image to run the job in: set spark.image, or DUCKLAKE_JOB_IMAGE",
    }
    for name, message in expected.items():
        run = ended(kube, name, timeout=30)
        assert run["status"]["state"] == "Failed", name
        assert message in run["status"]["message"], (name, run["status"]["message"])
        assert condition(run, "Failed")["status"] == "True"
        assert "launched" not in run["status"], name
    assert kube.list("jobs") == []
    assert [c["metadata"]["name"] for c in kube.list("configmaps")] in ([], ["kube-root-ca.crt"])
    assert kube.list("leases") == []  # no-image took its table's Lease before its launch failed


def test_a_catalog_that_is_not_ready_fails_the_run(kube, operator, tmp_path) -> None:
    kube.apply(manifest("DuckLakeCatalog", "lake", {"metadata": {"postgres": {
        "host": "127.0.0.1", "port": 1, "database": "none", "credentialsSecretRef": {"name": "absent"}}},
        "dataPath": f"{tmp_path}/data/"}))  # fmt: skip
    kube.apply(job("early", spark=IN_PROCESS))
    run = ended(kube, "early", timeout=30)
    assert run["status"]["state"] == "Failed"
    assert "DuckLakeCatalog 'lake' is not Ready; nothing was launched" in run["status"]["message"]


def test_one_run_per_table_and_max_jobs_per_catalog(kube, operator, tmp_path) -> None:
    """Runs on one table wait for each other, whatever their operation; a policy's
    maxJobsPerCatalog bounds the catalog (here 1: every run waits for the one before)."""
    small_files_lake(kube, tmp_path, inserts=2)
    kube.apply(table("items", "lake"), table("users", "lake"))
    wait_for("tables Ready", lambda: all(is_ready(kube.get("dlt", n)) for n in ("items", "users")), timeout=30)
    kube.apply(manifest("DuckLakeMaintenancePolicy", "limits", {"catalogRef": {"name": "lake"}, "tables": ["none.x"],
                                                                "concurrency": {"maxJobsPerCatalog": 1}}))  # fmt: skip
    wait_for(  # the operator has seen the policy (a fixed second was not always enough under load)
        "the policy looked at",
        lambda: ((kube.get("dlmp", "limits") or {}).get("status") or {}).get("observedGeneration"),
    )
    names = ["a1", "a2", "b1", "c1"]
    kube.apply(job("a1", spark=IN_PROCESS), job("a2", operation="rewriteDeletes", spark=IN_PROCESS),
               job("b1", table_name="main.items", spark=IN_PROCESS),
               job("c1", table_name="main.users", spark=IN_PROCESS))  # fmt: skip
    spans = []
    for name in names:
        status = ended(kube, name)["status"]
        assert status["state"] == "Succeeded", status
        spans.append((status["startTime"], status["completionTime"]))
    spans.sort()
    assert all(earlier[1] <= later[0] for earlier, later in zip(spans, spans[1:], strict=False)), spans
    said = [e["message"] for n in names for e in kube.events(n) if e["reason"] == "Waiting"]
    assert any("a slot in catalog lake" in m for m in said), said


def test_heavy_operations_run_as_ducklakejobs_too(kube, operator, tmp_path) -> None:
    """ingest (with its schema evolution) and repartition, as DuckLakeJobs through the Local
    launcher: the same program, the same guarantees. An ingest adds columns only to a table
    whose DuckLakeTable has evolution.mode auto."""
    location = small_files_lake(kube, tmp_path, inserts=3)
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "a.jsonl").write_text("".join(f'{{"id": {i}, "amount": {i}, "note": "n{i}"}}\n' for i in range(20)))
    kube.apply(job("ingest-0", operation="ingest", params={"path": str(landing) + "/"}, spark=IN_PROCESS))
    refused = ended(kube, "ingest-0")["status"]
    assert refused["state"] == "Failed" and "values of note fit none of the table's columns" in refused["message"]
    assert "Set spec.evolution.mode: auto on that DuckLakeTable" in refused["message"]
    kube.apply(table("orders", "lake", evolution={"mode": "auto"}))
    wait_for("mode auto applied", lambda: kube.get("dlt", "orders")["status"].get("observedGeneration") == 2)
    kube.apply(job("ingest-1", operation="ingest", params={"path": str(landing) + "/"}, spark=IN_PROCESS))
    status = ended(kube, "ingest-1")["status"]
    assert status["state"] == "Succeeded", status
    con = duck.attach(location, con=duck.connect())
    assert (
        duck.scalar(con, "SELECT count(*) FROM lk.orders WHERE note IS NOT NULL") == 20
    )  # a new column, in one snapshot
    con.close()
    kube.apply(job("ingest-2", operation="ingest", params={"path": str(landing) + "/"}, spark=IN_PROCESS))
    again = ended(kube, "ingest-2")["status"]
    assert again["state"] == "Failed" and "a.jsonl" in again["message"]  # the same file twice is refused

    duck.run_workload(location, ["ALTER TABLE lk.orders SET PARTITIONED BY (amount)"])
    before = duck.observe_table(location, "orders")
    kube.apply(job("repartition-1", operation="repartition", spark=IN_PROCESS))
    status = ended(kube, "repartition-1")["status"]
    assert status["state"] == "Succeeded" and status["filesRead"] == 4, status
    assert duck.same_as_before(duck.observe_table(location, "orders"), before)


def waits_for_a_lock(location: CatalogLocation, application_name: str) -> bool:
    """Whether a session of the catalog database named so waits for a lock another holds."""
    with closing(psycopg2.connect(host=location.host, port=location.port, dbname=location.database,
                                  user=location.user, password=location.password)) as conn:  # fmt: skip
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND wait_event_type = 'Lock'",
                        (application_name,))  # fmt: skip
            row = cur.fetchone()
    return bool(row and row[0])


def test_a_jobs_own_commit_retries_and_conflicts_are_counted(kube, operator, pg_server, tmp_path) -> None:
    """A maintenance job commits in the job program, not in the operator: its commit's
    retries and conflicts travel in its report and the operator counts them under the job's
    operation. DuckDB deletes from the compaction's inputs while it is held before its
    commit (refused: it plans again); then the library holds the next snapshot reserved
    while the compaction commits (a collision: retried)."""
    location = pg_lake(kube, pg_server, tmp_path, options={"dataInliningRowLimit": 0})
    insert(location, 4)
    writer_catalog = Catalog.open(location)
    marker = tmp_path / "paused"
    try:
        with paused_programs(operator, "before_commit", marker):  # (a restart: the counters start again)
            before = {m: operator.metric_or_zero(m, operation="compact") for m in (RETRIES, CONFLICTS)}
            kube.apply(job("contended", spark=IN_PROCESS))
            wait_for("planned, written, held before its commit", marker.exists, timeout=60)
            duck.run_workload(location, ["DELETE FROM lk.orders WHERE id = 0"])  # a row of every input
            marker.unlink()
            wait_for("planned again, held before its second commit", marker.exists, timeout=60)
            reserved, release = threading.Event(), threading.Event()

            def hold() -> None:  # inside the writer's commit transaction, right before its COMMIT
                reserved.set()
                release.wait(60)

            writer = threading.Thread(target=writer_catalog.commit, args=([CreateSchema("elsewhere")],),
                                      kwargs={"before_commit": hold})  # fmt: skip
            writer.start()
            assert reserved.wait(30)  # its snapshot row is written, its transaction open
            marker.unlink()
            session = session_name(kube.get("dlj", "contended")["metadata"]["uid"])
            wait_for("the job's commit waiting for the reserved snapshot", lambda: waits_for_a_lock(location, session))
            release.set()
            writer.join(30)
            status = ended(kube, "contended")["status"]
            wait_for("counted", lambda: operator.metric(CONFLICTS, operation="compact") == before[CONFLICTS] + 1)
            assert operator.metric(RETRIES, operation="compact") == before[RETRIES] + 1
    finally:
        writer_catalog.close()
    assert status["state"] == "Succeeded" and status["attempts"] == 1, status
    report = status["jobReport"]["report"]
    assert (report["commitConflicts"], report["commitRetries"], report["replanned"]) == (1, 1, 1)
    con = duck.attach(location, con=duck.connect())
    try:  # the delete DuckDB made while the compaction ran is kept
        assert con.execute("SELECT count(*), count(*) FILTER (WHERE id = 0) FROM lk.orders").fetchone() == (196, 0)
    finally:
        con.close()
    assert data_files(location) == 1
