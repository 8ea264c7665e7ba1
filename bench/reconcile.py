"""Reconcile at scale on a real API server: N DuckLakeTables in one ``kubectl apply`` -> all Ready.

Starts the test control plane (``tests/support/kube_cluster.py``: etcd, kube-apiserver and
kube-controller-manager built from Go modules), installs the chart, runs the operator
process as the chart's service account against a PostgreSQL catalog with its credentials in
a Secret, and prints for each N: seconds from the apply to all Ready (seen on a watch), how
long after ``kubectl apply`` returned the last table was Ready, tables/s, the operator's peak
RSS, catalog statements per table (the operator's Prometheus counter) and the CPU seconds of
the operator, etcd, the API server and ``kubectl apply`` during the storm;
then restarts the operator ``--restarts`` times (3) and prints each resync (every table
resumed, nothing to apply): seconds from the process start to the last table reconciled,
and to the first (what the start itself costs: imports, peering, listing, indexing);
then restarts it with the catalog's drift timer at ``--drift-interval`` s (30) and prints the
time of its first two drift passes over the whole catalog (the operator's
``ducklake_drift_pass_seconds``) and the catalog statements of the second.

    python bench/reconcile.py [--sizes 1,100,1000] [--restarts 3] [--profile DIR]

``--profile DIR`` samples the operator with py-spy (``pip install py-spy``; all threads,
native frames off, not pausing the process; ``BENCH_PYSPY_ARGS=--gil`` samples only the
thread holding the GIL, i.e. where the CPU goes) during the creation storm and each resync, and
writes speedscope profiles there (open them at https://www.speedscope.app, or summarise one
with ``bench/speedscope_summary.py --thread`` on the event loop's thread), and kubectl's own
CPU profile of each storm (``go tool pprof -top DIR/kubectl-storm-N.pprof``). The operator logs
at ``BENCH_LOG_LEVEL`` (WARNING)."""

from __future__ import annotations

import argparse
import base64
import json
import os
import resource
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
        self._cluster, self._path = cluster, f"/apis/{API}/namespaces/{namespace}/ducklaketables"
        self._ready: set[str] = set()
        self._changed = threading.Condition()
        version = cluster.request("GET", self._path)["metadata"]["resourceVersion"]
        # a daemon: closing the stream under a blocked read would wait for it; it ends with the cluster
        threading.Thread(target=self._follow, args=(version,), daemon=True).start()

    def _follow(self, version: str) -> None:
        """Follow the watch; when it ends or fails (a long storm outlives a watch: an ERROR
        event, a closed stream), list once and watch again from there."""
        while True:
            try:
                request = urllib.request.Request(f"{self._cluster.url}{self._path}?watch=1&resourceVersion={version}")
                stream = urllib.request.urlopen(request, context=self._cluster.ssl_context(), timeout=900)
                for line in stream:
                    event = json.loads(line)
                    if event["type"] in ("ERROR", "BOOKMARK"):
                        break
                    self._see(event["object"], event["type"] != "DELETED")
            except (OSError, ValueError, KeyError):
                pass
            try:
                listed = self._cluster.request("GET", self._path)
            except OSError:  # the cluster stopped
                return
            with self._changed:
                self._ready = {o["metadata"]["name"] for o in listed["items"] if is_ready(o)}
                self._changed.notify_all()
            version = listed["metadata"]["resourceVersion"]

    def _see(self, obj: dict[str, Any], present: bool) -> None:
        with self._changed:
            if present and is_ready(obj):
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


def children_cpu_seconds() -> float:
    """User + system CPU of this process's children that ended (and were waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_by_process(cluster: KubeCluster, op: Operator) -> dict[str, float]:
    assert op.proc is not None
    return {"operator": cpu_seconds(op.proc.pid), **{k: cpu_seconds(p.pid) for k, p in cluster.processes.items()}}


def print_allocations(op: Operator) -> None:
    """The operator's largest allocation sites now (DUCKLAKE_TRACEMALLOC: it logs them on SIGUSR2)."""
    if op.proc is None:
        return
    before = op.log().count("largest allocations")
    op.proc.send_signal(signal.SIGUSR2)
    deadline = time.time() + 120  # a snapshot of a busy operator's allocations takes a while
    while op.log().count("largest allocations") == before and time.time() < deadline:
        time.sleep(0.5)
    time.sleep(0.5)  # the rest of the report's lines
    print(op.log()[op.log().rfind("largest allocations") :][:6000], flush=True)


def run(
    n: int,
    cluster: KubeCluster,
    server: PgServer,
    kubeconfig: str,
    tmp: str,
    profile: str | None,
    memory: bool,
    restarts: int,
    drift_interval: float,
    apply: str = "client-side",
    validate: str = "strict",
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
        **({"DUCKLAKE_TRACEMALLOC": os.environ.get("BENCH_TRACE_FRAMES", "8")} if memory else {}),
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
        kubectl0 = children_cpu_seconds()
        t0 = time.time()
        side = ["--server-side", "--field-manager=bench"] if apply == "server-side" else []
        side.append(f"--validate={validate}")
        if profile:  # kubectl's own CPU profile beside the operator's (``go tool pprof -top`` reads it)
            side += [
                "--profile=cpu",
                f"--profile-output={os.path.abspath(os.path.join(profile, f'kubectl-storm-{n}.pprof'))}",
            ]
        cluster.kubectl("apply", *side, "-n", namespace, "-f", "-", input=yaml.safe_dump_all(tables), timeout=3600)
        applied = time.time() - t0
        kubectl = children_cpu_seconds() - kubectl0  # the one child that ended meanwhile
        if memory:  # the backlog is longest now: every object created, most not yet Ready
            print_allocations(op)
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
              "the storm: " + ", ".join(f"{k} {v:.1f}" for k, v in {**cpu, "kubectl apply": kubectl}.items()),
              flush=True)  # fmt: skip
        if memory:
            print_allocations(op)
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
            if memory:
                print_allocations(op)
            assert op.proc is not None
            print(f"N={n:>5}  restart resync      {resync:7.2f} s  (first reconcile after {first or 0:4.2f} s)  "
                  "nothing applied; catalog statements/table "
                  f"{op.metric('ducklake_catalog_queries_total') / n:5.1f}  peak RSS {op.peak_rss_mb():6.1f} MB  "
                  f"operator CPU {cpu_seconds(op.proc.pid):5.1f} s", flush=True)  # fmt: skip
        if drift_interval:
            drift(op, args, n, drift_interval, profile)
    finally:
        op.stop()


def drift(op: Operator, args: list[str], n: int, interval: float, profile: str | None) -> None:
    """Two drift passes of the whole catalog on its timer (nothing drifted: the steady state),
    after a restart with the timer at ``interval`` s: each pass's time from the operator's
    histogram; the second pass's catalog statements and the operator's CPU seconds until it
    ended from the end of the first (nothing else runs between the two)."""
    op.stop()
    op.env["DUCKLAKE_DRIFT_INTERVAL"] = str(interval)
    op.start(*args)
    spy = op.profile(profile, f"drift-{n}")
    seen: list[tuple[float, float, float]] = []  # (histogram sum, statements, operator CPU) after each pass
    deadline = time.time() + 3 * interval + 600
    while len(seen) < 2 and time.time() < deadline:
        if op.metric_or_zero("ducklake_drift_pass_seconds_count") > len(seen):
            seen.append((op.metric("ducklake_drift_pass_seconds_sum"), op.metric("ducklake_catalog_queries_total"),
                         cpu_seconds(op.proc.pid) if op.proc is not None else 0.0))  # fmt: skip
        time.sleep(0.05)
    spy.stop()
    if len(seen) < 2:
        raise SystemExit(f"{len(seen)} drift passes seen; see {op.log_path}")
    print(f"N={n:>5}  drift pass of the whole catalog: first after the restart {seen[0][0]:6.2f} s (manifests "
          f"parsed), next {seen[1][0] - seen[0][0]:6.2f} s with {seen[1][1] - seen[0][1]:.0f} catalog statements "
          f"(operator CPU from the end of the first to the end of the next {seen[1][2] - seen[0][2]:5.2f} s); peak RSS {op.peak_rss_mb():6.1f} MB", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,100,1000")
    parser.add_argument("--profile", help="directory for py-spy profiles of the operator (and kubectl's CPU profile)")
    parser.add_argument("--memory", action="store_true", help="trace allocations; print the largest sites at the end")
    parser.add_argument("--restarts", type=int, default=3, help="restarts measured after each creation storm")
    parser.add_argument(
        "--apply",
        choices=("client-side", "server-side"),
        default="client-side",
        help="kubectl apply's kind: client-side (a GET and a create per object) or --server-side (one apply "
        "request per object, as Flux and Argo CD's server-side sync send)",
    )
    parser.add_argument(
        "--validate",
        choices=("strict", "false"),
        default="strict",
        help="kubectl apply's --validate: strict (its default) checks that the server validates each "
        "object's fields, from the API's OpenAPI v3 document (parsed again for every object before kubectl "
        "1.34, kubernetes/kubernetes#127095; the tests' kubectl is the cluster's 1.34); false skips that (the "
        "API server still checks each object against the CRD's schema, but drops unknown fields silently)",
    )
    parser.add_argument(
        "--drift-interval",
        type=float,
        default=30,
        help="the catalog's drift timer in the drift measurement (a restart, then two passes); 0: none",
    )
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
            run(
                n,
                cluster,
                server,
                kubeconfig,
                tmp,
                args.profile,
                args.memory,
                args.restarts,
                args.drift_interval,
                args.apply,
                args.validate,
            )
    finally:
        cluster.stop()
        server.stop()
        print(json.dumps({"logs": tmp}))


if __name__ == "__main__":
    main()
