"""Maintenance scheduling at scale on a real API server: N tables under one policy, all due
at once, ``maxJobsPerCatalog: 4``.

Starts the test control plane (``tests/support/kube_cluster.py``), installs the chart, runs
the operator process as the chart's service account against a PostgreSQL catalog (its
credentials in a Secret), creates N tables with a few small files each (DuckDB 1.5.5), then:

1. a policy whose compaction trigger (``whenSmallFilesAbove: 1``) makes every table due at
   once, ``dryRun: true``: N real ``compact`` dry runs through the Local launcher (the job
   program as a child process; a dry run plans and starts no Spark);
2. a second policy on ``--real`` of the tables, not a dry run: real compactions (Spark
   local mode in each job program, unless ``--in-process``).

For each it prints the seconds from the policy's apply until every run has ended, the runs
per second, the most runs ever Running at once in the catalog and on one table (sampled
from the API server every 0.2 s, and from the runs' own start and completion times), and
the operator's peak RSS.

``--single N``: instead, N DuckLakeJobs one after the other, each a compaction of a table
under ``inProcessBelow`` (Local launcher): the seconds from the job's creation on the API
server to its Succeeded there (watched every 20 ms), split into the operator's hops (to the
run's start, from the program's end), the job program's process (its imports before the
job), and the job's own phases (its report's timings); the median and the extremes. With
``--spark`` the jobs run on Spark local mode (from the second on in the Local launcher's warm
spare; ``--no-warm-spare``: each program starts its own).

    python bench/scheduling.py [--tables 200] [--real 20] [--in-process] [--profile DIR]
    python bench/scheduling.py --single 10 [--tables 10] [--code DIR] [--spark [--no-warm-spare]] [--gap S]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import yaml  # noqa: E402

from ducklake_operator.catalog import CatalogLocation  # noqa: E402
from support import duck  # noqa: E402
from support.kube_cluster import KubeCluster  # noqa: E402
from support.operator_process import Operator, grant_secrets, install_chart, service_account_kubeconfig  # noqa: E402
from support.pgserver import PgServer  # noqa: E402

API = "ducklake.dev/v1alpha1"
NAMESPACE = "bench"
SLOTS = 4
ENDED = ("Succeeded", "Failed", "Cancelled")


def runs(cluster: KubeCluster, policy: str) -> list[dict[str, Any]]:
    items = cluster.request("GET", f"/apis/{API}/namespaces/{NAMESPACE}/ducklakejobs")["items"]
    return [r for r in items if r["metadata"].get("labels", {}).get("ducklake.dev/policy") == policy]


class Sampler(threading.Thread):
    """The most runs Running at once, in the catalog and on one table, as the API server says."""

    def __init__(self, cluster: KubeCluster, policy: str) -> None:
        super().__init__(daemon=True)
        self.cluster, self.policy = cluster, policy
        self.most, self.most_per_table = 0, 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            running = [r for r in runs(self.cluster, self.policy) if (r.get("status") or {}).get("state") == "Running"]
            self.most = max(self.most, len(running))
            per_table = Counter(r["spec"].get("table") for r in running)
            self.most_per_table = max([self.most_per_table, *per_table.values()])
            time.sleep(0.2)


def overlap(items: list[dict[str, Any]]) -> int:
    """The most runs whose [startTime, completionTime] overlap, in whole seconds (a run ending
    in the second another starts counts as gone first)."""
    events = []
    for r in items:
        s = r.get("status") or {}
        if s.get("startTime") and s.get("completionTime"):
            events += [(s["startTime"], 1), (s["completionTime"], -1)]
    most = current = 0
    for _, step in sorted(events):
        current += step
        most = max(most, current)
    return most


def phase(
    cluster: KubeCluster, op: Operator, name: str, spec: dict[str, Any], expected: int, profile: str | None
) -> None:
    policy = {"apiVersion": API, "kind": "DuckLakeMaintenancePolicy", "metadata": {"name": name},
              "spec": {"catalogRef": {"name": "lake"}, "concurrency": {"maxJobsPerCatalog": SLOTS}, **spec}}  # fmt: skip
    sampler = Sampler(cluster, name)
    sampler.start()
    spy = op.profile(profile, name)
    t0 = time.time()
    cluster.kubectl("apply", "-n", NAMESPACE, "-f", "-", input=yaml.safe_dump(policy))
    deadline = t0 + 3600
    while True:
        items = runs(cluster, name)
        if len(items) >= expected and all((r.get("status") or {}).get("state") in ENDED for r in items):
            break
        if time.time() > deadline:
            raise SystemExit(f"{name}: not every run ended after an hour; see {op.log_path}")
        time.sleep(0.5)
    elapsed = time.time() - t0
    spy.stop()
    sampler.done.set()
    sampler.join()
    states = Counter(r["status"]["state"] for r in items)
    ran_on = Counter(r["status"].get("ranOn", "-") for r in items)
    print(f"{name:>9}: {len(items)} runs ended in {elapsed:7.1f} s ({len(items) / elapsed:5.2f} runs/s)  "
          f"states {dict(states)}  ran on {dict(ran_on)}  most Running at once: {sampler.most} in the catalog "
          f"(limit {SLOTS}; by start/completion times {overlap(items)}), {sampler.most_per_table} on one table  "
          f"operator peak RSS {op.peak_rss_mb():.0f} MB", flush=True)  # fmt: skip


def single_jobs(
    cluster: KubeCluster, op: Operator, tables: int, count: int, on_spark: bool = False, gap: float = 0.0
) -> None:
    """``count`` DuckLakeJobs, one at a time, each compacting the next table in this process
    (``on_spark``: on Spark local mode, from the second on in the Local launcher's warm spare
    unless the operator was told not to keep one); ``gap``: seconds between one's end and the
    next one's creation (a spare started after a run is ready a few seconds later)."""
    rows = []
    for k in range(count):
        if k:
            time.sleep(gap)
        name = f"single-{k:03}"
        job = {"apiVersion": API, "kind": "DuckLakeJob", "metadata": {"name": name, "namespace": NAMESPACE},
               "spec": {"catalogRef": {"name": "lake"}, "table": f"main.t{k % tables:04}", "operation": "compact",
                        "spark": {"launcher": "Local", **({} if on_spark else {"inProcessBelow": "1GB"})}}}  # fmt: skip
        t0 = time.time()
        cluster.request("POST", f"/apis/{API}/namespaces/{NAMESPACE}/ducklakejobs", job)
        while True:
            status = (
                cluster.request("GET", f"/apis/{API}/namespaces/{NAMESPACE}/ducklakejobs/{name}").get("status") or {}
            )
            if status.get("state") in ENDED:
                break
            if time.time() - t0 > 120:
                raise SystemExit(f"{name}: not ended after 120 s; see {op.log_path}")
            time.sleep(0.02)
        elapsed = time.time() - t0
        report = (status.get("jobReport") or {}).get("report") or {}
        timings = report.get("timings", {})
        # the launch wrote the run document, the program's last line is its result (files' times)
        detail = (status.get("launched") or {}).get("detail") or {}
        launched, result = os.stat(detail["runFile"]).st_mtime, os.stat(detail["log"]).st_mtime
        hops = {"toLaunch": launched - t0, "program": result - launched, "afterResult": t0 + elapsed - result}
        rows.append({"state": status["state"], "seconds": elapsed, "job": report.get("seconds"), **hops, **timings})
        session = f", {report.get('sparkSession', 'its own')} Spark session" if status.get("ranOn") == "spark" else ""
        print(f"{name}: {status['state']}{session} {elapsed:5.2f} s after its creation (creation to launch "
              f"{hops['toLaunch']:.2f} s, program to its result {hops['program']:.2f} s, of which the job "
              f"{report.get('seconds')} s {timings}; result to Succeeded {hops['afterResult']:.2f} s)",
              flush=True)  # fmt: skip
    took = [r["seconds"] for r in rows]
    what = "on Spark local mode" if on_spark else "under inProcessBelow"
    print(f"single jobs: {count} compactions {what}, creation to Succeeded: median "
          f"{statistics.median(took):.2f} s (min {min(took):.2f}, max {max(took):.2f}); the job itself: median "
          f"{statistics.median(r['job'] or 0 for r in rows):.2f} s; medians: creation to launch "
          f"{statistics.median(r['toLaunch'] for r in rows):.2f} s, program {statistics.median(r['program'] for r in rows):.2f}"
          f" s, result to Succeeded {statistics.median(r['afterResult'] for r in rows):.2f} s", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--real", type=int, default=20, help="tables compacted for real after the dry runs")
    parser.add_argument("--in-process", action="store_true", help="the real runs skip Spark (inProcessBelow)")
    parser.add_argument("--code", help="run the operator and its job programs on the tree DIR (operator/, jobs/)")
    parser.add_argument("--single", type=int, default=0, help="N single DuckLakeJobs, creation to Succeeded")
    parser.add_argument("--spark", action="store_true", help="the single jobs on Spark local mode")
    parser.add_argument("--gap", type=float, default=0.0, help="seconds between single jobs")
    parser.add_argument("--no-warm-spare", action="store_true", help="the Local launcher keeps no warm spare")
    parser.add_argument("--profile", help="directory for py-spy profiles of the operator (bench/speedscope_summary.py)")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-scheduling-")
    tree = os.path.abspath(args.code) if args.code else None
    code = {"PYTHONPATH": f"{tree}/operator:{tree}/jobs"} if tree else {}
    server = PgServer.start()
    cluster = KubeCluster.start()
    op: Operator | None = None
    try:
        install_chart(cluster)
        kubeconfig = service_account_kubeconfig(cluster, os.path.join(tmp, "kubeconfig"))
        db = f"scheduling_{int(time.time())}"
        server.create_database(db)
        cluster.kubectl("create", "namespace", NAMESPACE)
        grant_secrets(cluster, NAMESPACE, "pg")  # the catalog's Secret: the chart lets the operator read it
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pg"},
                  "data": {"username": base64.b64encode(server.user.encode()).decode(),
                           "password": base64.b64encode(b"unused").decode()}}  # fmt: skip
        catalog = {"apiVersion": API, "kind": "DuckLakeCatalog", "metadata": {"name": "lake"},
                   "spec": {"metadata": {"postgres": {"host": server.host, "port": server.port, "database": db,
                                                      "credentialsSecretRef": {"name": "pg"}}},
                            "dataPath": os.path.join(tmp, "data") + "/", "options": {"dataInliningRowLimit": 0}}}  # fmt: skip
        tables = [{"apiVersion": API, "kind": "DuckLakeTable", "metadata": {"name": f"t{i:04}"},
                   "spec": {"catalogRef": {"name": "lake"}, "name": f"t{i:04}",
                            "columns": [{"name": "id", "type": "int64"}, {"name": "v", "type": "varchar"}]}}
                  for i in range(args.tables)]  # fmt: skip
        op = Operator(kubeconfig, os.path.join(tmp, "operator.log"), DUCKLAKE_DRIFT_INTERVAL="3600",
                      DUCKLAKE_POLICY_INTERVAL="1", DUCKLAKE_LOCAL_MAX_RUNS=str(SLOTS),  # the catalog's limit decides
                      DUCKLAKE_STATE_DIR=os.path.join(tmp, "runs"),
                      DUCKLAKE_LOCAL_WARM_SPARE=str(not args.no_warm_spare).lower(), **code).start(
                          "--log-level=WARNING")  # fmt: skip
        cluster.kubectl("apply", "-n", NAMESPACE, "-f", "-", input=yaml.safe_dump_all([secret, catalog, *tables]))
        while True:
            items = cluster.request("GET", f"/apis/{API}/namespaces/{NAMESPACE}/ducklaketables")["items"]
            if sum(any(c["type"] == "Ready" and c["status"] == "True" for c in (o.get("status") or {})
                       .get("conditions", [])) for o in items) == args.tables:  # fmt: skip
                break
            time.sleep(0.5)
        location = CatalogLocation(kind="postgres", host=server.host, port=server.port, database=db, user=server.user)
        duck.run_workload(location, [f"INSERT INTO lk.t{i:04} SELECT range, 'v' || range FROM range({k * 100}, "
                                     f"{k * 100 + 100})" for i in range(args.tables) for k in range(3)])  # fmt: skip
        print(f"kube-apiserver {cluster.version()['gitVersion']}, PostgreSQL catalog, {args.tables} tables of 3 "
              f"small files, operator as the chart's service account, Local launcher", flush=True)  # fmt: skip
        if args.single:
            single_jobs(cluster, op, args.tables, args.single, args.spark, args.gap)
            return
        trigger = {"schedule": "0 3 * * *", "whenSmallFilesAbove": 1}
        phase(cluster, op, "dry-runs", {"dryRun": True, "spark": {"launcher": "Local"}, "compaction": trigger},
              args.tables, args.profile)  # fmt: skip
        cluster.kubectl("delete", "-n", NAMESPACE, "ducklakemaintenancepolicy", "dry-runs", "--wait=false")
        if not args.real:
            return
        spark = {"launcher": "Local", **({"inProcessBelow": "1GB"} if args.in_process else {})}
        real = [f"main.t{i:04}" for i in range(args.real)]
        phase(
            cluster, op, "real-runs", {"spark": spark, "tables": real, "compaction": trigger}, args.real, args.profile
        )
    finally:
        if op is not None:
            op.stop()
        cluster.stop()
        server.stop()
        print(json.dumps({"logs": tmp}))


if __name__ == "__main__":
    main()
