"""DuckLakeMaintenancePolicies driven by the operator process on the real API server: health
triggers compacting a table that a DuckDB client keeps inserting into (real Spark jobs
through the Local launcher, a PostgreSQL catalog whose credentials come from a Secret), a
missed schedule run once, catalog-wide ownership, suspend, history, two policies due at
once on one table. The test operator evaluates policies every second and lets a trigger
fire again after 2 s (``DUCKLAKE_POLICY_INTERVAL``, ``DUCKLAKE_TRIGGER_INTERVAL``)."""

from __future__ import annotations

import functools
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from ducklake_operator.catalog import CatalogLocation
from support import duck, duck_inserter
from support.manifests import manifest, table
from support.operator_process import condition, is_ready, wait_for
from support.runs import (
    ENDED,
    IN_PROCESS,
    LOCAL,
    commit_report,
    data_files,
    ended,
    ended_going_on,
    insert,
    job,
    paused_programs,
    policy,
    secret,
    small_files_lake,
    state,
)


def evaluated(kube, name: str) -> bool:
    """The policy has been evaluated: it published its compaction's status."""
    return "compact" in ((kube.get("dlmp", name) or {}).get("status") or {}).get("operations", {})


def ended_or_gone(kube, run: dict[str, Any]) -> bool:
    name = run["metadata"]["name"]
    return kube.get("dlj", name) is None or state(kube, name) in ENDED


def runs_of(kube, policy_name: str) -> list[dict[str, Any]]:
    return [r for r in kube.list("dlj") if r["metadata"].get("labels", {}).get("ducklake.dev/policy") == policy_name]


def test_a_policy_compacts_a_table_that_duckdb_keeps_inserting_into(kube, operator, pg_server, tmp_path) -> None:
    role = f"ins{int(time.time() * 1000) % 10**8}"
    pg_server.create_password_role(role, "Pa55-word-ins")
    pg_server.create_database(role, owner=role)
    kube.grant_secrets("lake-pg")
    kube.apply(secret("lake-pg", username=role, password="Pa55-word-ins"))
    backend = {"host": pg_server.host, "port": pg_server.port, "database": role,
               "credentialsSecretRef": {"name": "lake-pg"}}  # fmt: skip
    kube.apply(manifest("DuckLakeCatalog", "lake", {"metadata": {"postgres": backend}, "dataPath": f"{tmp_path}/data/",
                                                    "options": {"dataInliningRowLimit": 0}}))  # fmt: skip
    columns = [{"name": "worker", "type": "int64"}, {"name": "i", "type": "int64"}, {"name": "r", "type": "int64"}]
    kube.apply(table("events", "lake", columns=columns))
    wait_for("table Ready", lambda: is_ready(kube.get("dlt", "events")), timeout=30)
    location = CatalogLocation(kind="postgres", host=pg_server.host, port=pg_server.port, database=role, user=role,
                               password="Pa55-word-ins")  # fmt: skip
    stop = tmp_path / "stop"  # the inserts go on until a compaction has succeeded
    inserter = duck_inserter.start(location.duckdb_attach_target(), "events", 100_000, 1, stop_file=str(stop))
    try:
        kube.apply(policy("compaction", spark=LOCAL, compaction={"schedule": "0 3 * * *", "whenSmallFilesAbove": 4}))
        wait_for("a compaction ran", lambda: any(r.get("status", {}).get("state") == "Succeeded"
                                                 for r in runs_of(kube, "compaction")), timeout=120)  # fmt: skip
        assert inserter.poll() is None  # it ran beside the inserts
        stop.touch()
        out, _ = inserter.communicate(timeout=300)
    finally:
        inserter.kill()
    inserted = json.loads(out)
    assert inserted["errors"] == []
    # The policy may create more runs as long as it schedules (its trigger fires again after
    # 2 s): suspended, and the operator has said so, it creates no more; then every run it
    # created (read afresh at each look, whatever was created meanwhile) ends.
    kube.kubectl("patch", "dlmp", "compaction", "--type=merge", "-p", json.dumps({"spec": {"suspend": True}}))
    wait_for("Suspended", lambda: condition(kube.get("dlmp", "compaction"), "Ready").get("reason") == "Suspended")
    wait_for("every run ended", lambda: all((r.get("status") or {}).get("state") in ENDED
                                            for r in runs_of(kube, "compaction")), timeout=120)  # fmt: skip
    runs = runs_of(kube, "compaction")
    succeeded = [r for r in runs if r["status"]["state"] == "Succeeded"]
    assert succeeded and all(r["status"]["state"] == "Succeeded" for r in runs), [r["status"] for r in runs]
    con = duck.attach(location, con=duck.connect())
    try:
        rows = con.execute("SELECT count(*), count(DISTINCT (i, r)) FROM lk.events").fetchone()
        assert rows == (inserted["committed"], inserted["committed"])  # no row lost, none doubled
        for run in succeeded:
            status = run["status"]
            assert status["ranOn"] == "spark" and status["launched"]["kind"] == "Local"
            report = commit_report(con, status["committedSnapshot"])["report"]
            assert {k: report[k] for k in ("filesRead", "filesWritten", "bytesRead", "bytesWritten")} == {
                k: status[k] for k in ("filesRead", "filesWritten", "bytesRead", "bytesWritten")
            }
            assert "small files > 4" in run["metadata"]["annotations"]["ducklake.dev/reason"]
    finally:
        con.close()
    said = json.dumps(runs) + operator.log() + kube.kubectl("get", "events", "-o", "json")
    assert "Pa55-word-ins" not in said


def test_a_missed_schedule_runs_once(kube, operator, tmp_path) -> None:
    small_files_lake(kube, tmp_path, inserts=3)
    kube.apply(policy("nightly", spark=IN_PROCESS, compaction={"schedule": "0 3 * * *"}))
    wait_for("published", lambda: evaluated(kube, "nightly"))
    assert runs_of(kube, "nightly") == []  # created now: 03:00 has not come yet
    # the operator was down for two days: the latest owed cron time runs, once
    long_ago = (datetime.now(UTC) - timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    missed = {"operations": {"compact": {"tables": {"main.orders": {"lastScheduleTime": long_ago}}}}}
    kube.kubectl(
        "patch", "dlmp", "nightly", "--subresource=status", "--type=merge", "-p", json.dumps({"status": missed})
    )
    run = wait_for("a run", lambda: runs_of(kube, "nightly"))[0]
    assert run["metadata"]["annotations"]["ducklake.dev/reason"].startswith("missed schedule at ")
    assert ended(kube, run["metadata"]["name"])["status"]["state"] == "Succeeded"
    # a status that forgot the payment does not pay the same cron time again
    kube.kubectl(
        "patch", "dlmp", "nightly", "--subresource=status", "--type=merge", "-p", json.dumps({"status": missed})
    )
    # evaluated since: the policy published the cron time its run paid (from the run's annotation)
    paid = run["metadata"]["annotations"]["ducklake.dev/schedule-time"]

    def published() -> str | None:
        operations = (kube.get("dlmp", "nightly") or {}).get("status", {}).get("operations", {})
        return operations.get("compact", {}).get("tables", {}).get("main.orders", {}).get("lastScheduleTime")

    wait_for("the paid cron time published", lambda: published() == paid)
    assert len(runs_of(kube, "nightly")) == 1
    status = kube.get("dlmp", "nightly")["status"]
    compact = status["operations"]["compact"]
    assert compact["lastRun"]["name"] == run["metadata"]["name"] and compact["lastRun"]["state"] == "Succeeded"
    assert compact["nextRun"] and compact["tables"]["main.orders"]["params"]["targetFileSize"]
    assert condition(kube.get("dlmp", "nightly"), "Ready")["status"] == "True"


def test_catalog_wide_operations_have_one_owner(kube, operator, tmp_path) -> None:
    small_files_lake(kube, tmp_path, inserts=1)
    kube.apply(policy("first", spark=IN_PROCESS, snapshotExpiry={"schedule": "0 4 * * *", "olderThan": "7d"}))
    wait_for("first Ready", lambda: is_ready(kube.get("dlmp", "first")))
    # creation timestamps have whole seconds: the second policy is younger once a second has begun
    first = datetime.fromisoformat(kube.get("dlmp", "first")["metadata"]["creationTimestamp"])
    wait_for("a later second", lambda: datetime.now(UTC) >= first + timedelta(seconds=1), timeout=5)
    kube.apply(policy("second", spark=IN_PROCESS, fileCleanup={"schedule": "0 5 * * *"}))
    conflict = wait_for("Conflict", lambda: condition(kube.get("dlmp", "second"), "Conflict").get("status") == "True"
                        and condition(kube.get("dlmp", "second"), "Conflict"))  # fmt: skip
    assert "first" in conflict["message"]
    assert condition(kube.get("dlmp", "first"), "Conflict")["status"] == "False"
    cleanup = kube.get("dlmp", "second")["status"]["operations"]["cleanupFiles"]
    assert cleanup["runBy"] == "first" and cleanup.get("nextRun") is None  # a null is no field in a merge patch


def test_suspend_and_history(kube, operator, tmp_path) -> None:
    """A trigger runs a table's compaction whenever it has more than 1 small file; runs beyond
    historyLimit are deleted, oldest first; a suspended policy creates no run."""
    location = small_files_lake(kube, tmp_path, inserts=3)
    kube.apply(policy("often", spark=IN_PROCESS, historyLimit=1,
                      compaction={"schedule": "0 3 * * *", "whenSmallFilesAbove": 1}))  # fmt: skip
    names: set[str] = set()
    for _ in range(3):
        run = wait_for("a new run", lambda: [r for r in runs_of(kube, "often") if r["metadata"]["name"] not in names])
        names.add(run[0]["metadata"]["name"])
        assert ended(kube, run[0]["metadata"]["name"])["status"]["state"] == "Succeeded"
        insert(location, 3)
    wait_for("history trimmed", lambda: len([r for r in runs_of(kube, "often")
                                             if r.get("status", {}).get("state") in ENDED]) == 1)  # fmt: skip
    suspended = policy("often", spark=IN_PROCESS, historyLimit=1, suspend=True,
                       compaction={"schedule": "0 3 * * *", "whenSmallFilesAbove": 1})  # fmt: skip
    kube.apply(suspended)
    wait_for("Suspended", lambda: condition(kube.get("dlmp", "often"), "Ready").get("reason") == "Suspended")
    for run in runs_of(kube, "often"):  # history trims an ended run while the test waits on another: gone is ended
        wait_for(f"{run['metadata']['name']} ended or trimmed", functools.partial(ended_or_gone, kube, run), timeout=90)
    before = {r["metadata"]["name"] for r in runs_of(kube, "often")}
    insert(location, 3)
    time.sleep(3)  # the point: a few evaluations (every second) of a due trigger create no run
    assert {r["metadata"]["name"] for r in runs_of(kube, "often")} <= before  # none new (history may trim)
    assert data_files(location) >= 3


def test_a_policys_run_starts_only_inside_its_window(kube, operator, tmp_path) -> None:
    """A run its policy created inside the window that has not started when the window
    closes (it waited for its table, a slot or a retry) takes nothing and launches nothing
    until the window opens; it is still owed, so the policy creates no second one."""
    small_files_lake(kube, tmp_path, inserts=3)
    now = datetime.now(UTC)
    closed = {
        "start": f"{now + timedelta(hours=2):%H:%M}",
        "end": f"{now + timedelta(hours=3):%H:%M}",
        "timezone": "UTC",
    }
    compaction = {"schedule": "0 3 * * *", "whenSmallFilesAbove": 1}
    kube.apply(policy("nightly", spark=IN_PROCESS, window=closed, compaction=compaction))
    wait_for("published", lambda: evaluated(kube, "nightly"))
    assert runs_of(kube, "nightly") == []  # the trigger is due, but the window is closed
    # the run as the policy created it before the window closed: owned by the policy, no spark of its own
    meta = kube.get("dlmp", "nightly")["metadata"]
    owner = {"apiVersion": "ducklake.dev/v1alpha1", "kind": "DuckLakeMaintenancePolicy", "name": "nightly",
             "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    run = job("nightly-compact-1")
    run["metadata"].update(ownerReferences=[owner], labels={"ducklake.dev/policy": "nightly"})
    kube.apply(run)
    status = wait_for("waiting for the window", lambda: (kube.get("dlj", "nightly-compact-1") or {}).get("status", {})
                      .get("waitingFor") and kube.get("dlj", "nightly-compact-1")["status"])  # fmt: skip
    opens = f"{now + timedelta(hours=2):%Y-%m-%d %H:%M} UTC"
    assert status["waitingFor"] == (
        f"the maintenance window {closed['start']}-{closed['end']} UTC of DuckLakeMaintenancePolicy nightly, "
        f"closed until {opens}"
    )
    assert status["message"] == f"waiting for {status['waitingFor']}" and status["state"] == "Pending"
    time.sleep(3)  # the point: a few more looks (the policy evaluates every second) launch nothing
    status = kube.get("dlj", "nightly-compact-1")["status"]
    assert status["state"] == "Pending" and not status.get("launched") and not status.get("locks")
    assert kube.list("leases") == [] and len(runs_of(kube, "nightly")) == 1
    assert "Launched" not in {e["reason"] for e in kube.events("nightly-compact-1")}
    # the window opens (edited to hold now): the owed run starts, and stays the only one
    opened = {
        "start": f"{now - timedelta(hours=1):%H:%M}",
        "end": f"{now + timedelta(hours=1):%H:%M}",
        "timezone": "UTC",
    }
    kube.apply(policy("nightly", spark=IN_PROCESS, window=opened, compaction=compaction))
    status = ended(kube, "nightly-compact-1")["status"]
    assert status["state"] == "Succeeded" and status["ranOn"] == "in-process" and status["filesRead"] == 3
    assert [r["metadata"]["name"] for r in runs_of(kube, "nightly")] == ["nightly-compact-1"]


def test_two_policies_due_at_once_on_one_table_run_one_after_the_other(kube, operator, tmp_path) -> None:
    """Both policies' triggers become due at the same instant (the insert that puts the
    table's small files over their threshold); the run that takes the table first is held
    before its commit, so the other has to wait for the table, and says so."""
    location = small_files_lake(kube, tmp_path, inserts=2)
    trigger = {"schedule": "0 3 * * *", "whenSmallFilesAbove": 2}
    marker = tmp_path / "paused"
    with paused_programs(operator, "before_commit", marker):
        kube.apply(
            policy("one", spark=IN_PROCESS, compaction=trigger), policy("two", spark=IN_PROCESS, compaction=trigger)
        )
        for name in ("one", "two"):  # evaluated with 2 small files: nothing due
            wait_for(f"{name} published", functools.partial(evaluated, kube, name))
        assert runs_of(kube, "one") == runs_of(kube, "two") == []
        insert(location, 1)  # 3 small files: both due from this instant
        wait_for("the first run held before its commit", marker.exists, timeout=60)
        runs = wait_for("both runs", lambda: [r["metadata"]["name"] for p in ("one", "two") for r in runs_of(kube, p)]
                        if len(runs_of(kube, "one")) == len(runs_of(kube, "two")) == 1 else None)  # fmt: skip
        (holder,) = [n for n in runs if state(kube, n) == "Running"]
        (waiter,) = [n for n in runs if n != holder]
        waiting = wait_for(f"{waiter} waiting", lambda: kube.get("dlj", waiter).get("status", {}).get("waitingFor"))
        assert waiting == f"DuckLakeJob {holder}, which holds table main.orders"
        assert state(kube, waiter) == "Pending"
        first = ended_going_on(kube, holder, marker)["status"]
        second = ended_going_on(kube, waiter, marker)["status"]
    assert first["state"] == second["state"] == "Succeeded", (first, second)
    assert first["startTime"] <= first["completionTime"] <= second["startTime"] <= second["completionTime"]
    kube.event(waiter, "Waiting", containing=waiting)
