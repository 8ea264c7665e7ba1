"""Reconcile at scale on a real API server: N DuckLakeTables in one ``kubectl apply`` -> all Ready.

Starts the test control plane (``tests/support/kube_cluster.py``: etcd, kube-apiserver and
kube-controller-manager built from Go modules), installs the chart, runs the operator
process as the chart's service account against a PostgreSQL catalog with its credentials in
a Secret, and prints for each N: seconds from the apply to all Ready (seen on a watch), how
long after ``kubectl apply`` returned the last table was Ready, tables/s, the operator's peak
RSS, catalog statements per table (the operator's Prometheus counter) and the CPU seconds of
the operator, etcd and the API server during the storm;
then restarts the operator ``--restarts`` times (3) and prints each resync (every table
resumed, nothing to apply): seconds from the process start to the last table reconciled,
and to the first (what the start itself costs: imports, peering, listing, indexing).

    python bench/reconcile.py [--sizes 1,100,1000] [--restarts 3] [--profile DIR]

``--profile DIR`` samples the operator with py-spy (``pip install py-spy``; all threads,
native frames off, not pausing the process; ``BENCH_PYSPY_ARGS=--gil`` samples only the
thread holding the GIL, i.e. where the CPU goes) during the creation storm and each resync, and
writes speedscope profiles there (open them at https://www.speedscope.app, or summarise one
with ``bench/speedscope_summary.py --thread`` on the event loop's thread). The operator logs
at ``BENCH_LOG_LEVEL`` (WARNING)."""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import sys
import tempfile
import threading
import time
import urllib.request
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import yaml  # noqa: E402

from support.kube_cluster import KubeCluster  # noqa: E402
from support.operator_process import Operator, grant_secrets, install_chart, service_account_kubeconfig  # noqa: E402
from support.pgserver import PgServer  # noqa: E402

API = "ducklake.dev/v1alpha1"


def is_ready(obj: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in (obj.get("status") or {}).get("conditions", []))


class ReadyWatch:
    """The namespace's DuckLakeTables becoming Ready, from a watch: the observer costs the API
    server one event per change, where listing 1,000 tables every 0.25 s competed with the
    operator it measures."""

    def __init__(self, cluster: KubeCluster, namespace: str) -> None:
        path = f"/apis/{API}/namespaces/{namespace}/ducklaketables"
        version = cluster.request("GET", path)["metadata"]["resourceVersion"]
        request = urllib.request.Request(f"{cluster.url}{path}?watch=1&resourceVersion={version}")
        self._stream = urllib.request.urlopen(request, context=cluster.ssl_context(), timeout=900)
        self._ready: set[str] = set()
        self._changed = threading.Condition()
        # a daemon: closing the stream under a blocked read would wait for it; it ends with the cluster
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self) -> None:
        for line in self._stream:
            event = json.loads(line)
            obj = event["object"]
            with self._changed:
                if event["type"] != "DELETED" and is_ready(obj):
                    self._ready.add(obj["metadata"]["name"])
                else:
                    self._ready.discard(obj["metadata"]["name"])
                self._changed.notify_all()

    def wait(self, n: int, timeout: float) -> int:
        """Until ``n`` tables are Ready (or ``timeout``); how many are."""
        with self._changed:
            self._changed.wait_for(lambda: len(self._ready) >= n, timeout)
            return len(self._ready)


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (``/proc/<pid>/stat``)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_by_process(cluster: KubeCluster, op: Operator) -> dict[str, float]:
    assert op.proc is not None
    return {"operator": cpu_seconds(op.proc.pid), **{k: cpu_seconds(p.pid) for k, p in cluster.processes.items()}}


def run(
    n: int,
    cluster: KubeCluster,
    server: PgServer,
    kubeconfig: str,
    tmp: str,
    profile: str | None,
    memory: bool,
    restarts: int,
) -> None:
    namespace, db = f"bench-{n}", f"reconcile_{n}_{int(time.time())}"
    server.create_database(db)
    cluster.kubectl("create", "namespace", namespace)
    grant_secrets(cluster, namespace, "pg")  # the catalog's Secret: the chart lets the operator read it
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pg"},
              "data": {"username": base64.b64encode(server.user.encode()).decode(),
                       "password": base64.b64encode(b"unused").decode()}}  # fmt: skip
    catalog = {"apiVersion": API, "kind": "DuckLakeCatalog", "metadata": {"name": "lake"},
               "spec": {"metadata": {"postgres": {"host": server.host, "port": server.port, "database": db,
                                                  "credentialsSecretRef": {"name": "pg"}}},
                        "dataPath": os.path.join(tmp, f"data{n}") + "/"}}  # fmt: skip
    tables = [
        {"apiVersion": API, "kind": "DuckLakeTable", "metadata": {"name": f"t{i}"},
         "spec": {"catalogRef": {"name": "lake"}, "name": f"t{i}",
                  "columns": [{"name": "id", "type": "int64"}, {"name": "v", "type": "varchar"}]}}
        for i in range(n)
    ]  # fmt: skip
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump_all([secret, catalog]))
    env = {
        "DUCKLAKE_DRIFT_INTERVAL": "3600",
        **({"DUCKLAKE_WORKERS": os.environ["DUCKLAKE_WORKERS"]} if "DUCKLAKE_WORKERS" in os.environ else {}),
        **({"DUCKLAKE_TRACEMALLOC": "1"} if memory else {}),
    }
    args = ["--log-level=" + os.environ.get("BENCH_LOG_LEVEL", "WARNING")]
    op = Operator(kubeconfig, os.path.join(tmp, f"operator{n}.log"), **env).start(*args)
    try:
        while True:
            obj = cluster.request("GET", f"/apis/ducklake.dev/v1alpha1/namespaces/{namespace}/ducklakecatalogs/lake")
            if any(
                c["type"] == "Ready" and c["status"] == "True" for c in (obj.get("status") or {}).get("conditions", [])
            ):
                break
            time.sleep(0.1)
        queries0 = op.metric("ducklake_catalog_queries_total")
        spy = op.profile(profile, f"storm-{n}")
        watch = ReadyWatch(cluster, namespace)
        cpu0 = cpu_by_process(cluster, op)
        t0 = time.time()
        cluster.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump_all(tables), timeout=600)
        applied = time.time() - t0
        if (count := watch.wait(n, timeout=900)) < n:
            raise SystemExit(f"only {count}/{n} Ready after 900 s; see {op.log_path}")
        elapsed = time.time() - t0
        spy.stop()
        cpu = {k: v - cpu0[k] for k, v in cpu_by_process(cluster, op).items()}
        queries = op.metric("ducklake_catalog_queries_total") - queries0
        print(f"N={n:>5}  apply->all Ready {elapsed:7.2f} s (kubectl apply itself {applied:5.2f} s, {n / elapsed:6.1f} "
              f"tables/s)  peak RSS {op.peak_rss_mb():6.1f} MB  catalog statements/table {queries / n:5.1f}",
              flush=True)  # fmt: skip
        print(f"N={n:>5}  last table Ready {elapsed - applied:5.2f} s after kubectl apply returned; CPU seconds in "
              "the storm: " + ", ".join(f"{k} {v:.1f}" for k, v in cpu.items()), flush=True)  # fmt: skip
        if memory and op.proc is not None:
            op.proc.send_signal(signal.SIGUSR2)
            time.sleep(3)
            print(op.log()[op.log().rfind("largest allocations") :][:6000])
        for attempt in range(restarts):
            op.stop()
            op.start(*args)  # restart: every table is resumed
            spy = op.profile(profile, f"resync-{n}-{attempt}")
            t0 = time.time()
            first = None  # the process started and the first object reconciled: the rest is the resync's own work
            while (done := op.metric_or_zero("ducklake_reconciles_total")) < n + 1:
                if first is None and done >= 1:
                    first = time.time() - t0
                time.sleep(0.05)
            resync = time.time() - t0
            spy.stop()
            if memory and op.proc is not None:
                op.proc.send_signal(signal.SIGUSR2)
                time.sleep(3)
                print(op.log()[op.log().rfind("largest allocations") :][:6000])
            print(f"N={n:>5}  restart resync      {resync:7.2f} s  (first reconcile after {first or 0:4.2f} s)  "
                  "nothing applied; catalog statements/table "
                  f"{op.metric('ducklake_catalog_queries_total') / n:5.1f}  peak RSS {op.peak_rss_mb():6.1f} MB",
                  flush=True)  # fmt: skip
    finally:
        op.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,100,1000")
    parser.add_argument("--profile", help="directory for py-spy profiles of the operator")
    parser.add_argument("--memory", action="store_true", help="trace allocations; print the largest sites at the end")
    parser.add_argument("--restarts", type=int, default=3, help="restarts measured after each creation storm")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-reconcile-")
    server = PgServer.start()
    cluster = KubeCluster.start()
    try:
        install_chart(cluster)
        kubeconfig = service_account_kubeconfig(cluster, os.path.join(tmp, "kubeconfig"))
        print(f"kube-apiserver {cluster.version()['gitVersion']}, PostgreSQL catalog, operator as the chart's "
              "service account", flush=True)  # fmt: skip
        for n in (int(x) for x in args.sizes.split(",")):
            run(n, cluster, server, kubeconfig, tmp, args.profile, args.memory, args.restarts)
    finally:
        cluster.stop()
        server.stop()
        print(json.dumps({"logs": tmp}))


if __name__ == "__main__":
    main()
