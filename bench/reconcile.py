"""Reconcile at scale: N DuckLakeTable objects created on the API emulator -> all Ready.

Runs the real operator process (kopf) against the in-process API emulator and a
PostgreSQL catalog; prints, for N = 1, 100, 500: seconds from the first create to all
Ready, the operator's peak RSS, and catalog queries per reconciled table (from the
operator's Prometheus counter). A second line per N restarts the operator and measures
the resync (every table resumed, nothing to apply).

    python bench/reconcile.py [--sizes 1,100,500]
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import subprocess
import sys
import tempfile
import time

import requests

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from support.kube_api import KubeApi  # noqa: E402
from support.pgserver import PgServer, free_port  # noqa: E402

NS = "bench"


def metric(port: int, name: str) -> float:
    text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return sum(float(m) for m in re.findall(rf"^{name}(?:{{[^}}]*}})? ([0-9.e+]+)$", text, re.M))


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        return int(re.search(r"VmHWM:\s+(\d+)", fh.read()).group(1)) / 1024  # type: ignore[union-attr]


def start_operator(kubeconfig: str, metrics_port: int, log) -> subprocess.Popen:  # type: ignore[no-untyped-def,type-arg]
    env = {
        **os.environ,
        "KUBECONFIG": kubeconfig,
        "DUCKLAKE_RETRY_SCALE": "0.05",
        "DUCKLAKE_DRIFT_INTERVAL": "3600",
        "DUCKLAKE_METRICS_PORT": str(metrics_port),
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ducklake_operator.controller.main",
            "--standalone",
            "--log-level",
            "WARNING",
            "--liveness",
            f"http://127.0.0.1:{free_port()}/healthz",
        ],
        env=env,
        stdout=log,
        stderr=log,
    )
    for _ in range(100):
        try:
            requests.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=1)
            return proc
        except requests.ConnectionError:
            time.sleep(0.1)
    return proc


def ready_count(api: KubeApi) -> int:
    return sum(
        1
        for (p, _, _), o in list(api.objects.items())
        if p == "ducklaketables"
        and any(c["type"] == "Ready" and c["status"] == "True" for c in (o.get("status") or {}).get("conditions", []))
    )


def run(n: int, server: PgServer, tmp: str) -> None:
    db = f"reconcile_{n}"
    server.create_database(db)
    api = KubeApi().start()
    kubeconfig = api.kubeconfig(os.path.join(tmp, f"kc{n}"))
    metrics_port = free_port()
    log = open(os.path.join(tmp, f"operator{n}.log"), "w")
    op = start_operator(kubeconfig, metrics_port, log)
    base = f"{api.url}/apis/ducklake.dev/v1alpha1/namespaces/{NS}"
    try:
        requests.post(
            f"{api.url}/api/v1/namespaces/{NS}/secrets",
            timeout=10,
            json={
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "pg"},
                "data": {"username": base64.b64encode(server.user.encode()).decode()},
            },
        )
        requests.post(
            f"{base}/ducklakecatalogs",
            timeout=10,
            json={
                "apiVersion": "ducklake.dev/v1alpha1",
                "kind": "DuckLakeCatalog",
                "metadata": {"name": "lake"},
                "spec": {
                    "metadata": {
                        "postgres": {
                            "host": server.host,
                            "port": server.port,
                            "database": db,
                            "credentialsSecretRef": {"name": "pg"},
                        }
                    },
                    "dataPath": os.path.join(tmp, f"data{n}") + "/",
                },
            },
        )
        while metric(metrics_port, "ducklake_reconciles_total") < 1:
            time.sleep(0.05)
        start_queries = metric(metrics_port, "ducklake_catalog_queries_total")
        t0 = time.time()
        for i in range(n):
            requests.post(
                f"{base}/ducklaketables",
                timeout=10,
                json={
                    "apiVersion": "ducklake.dev/v1alpha1",
                    "kind": "DuckLakeTable",
                    "metadata": {"name": f"t{i}"},
                    "spec": {
                        "catalogRef": {"name": "lake"},
                        "name": f"t{i}",
                        "columns": [{"name": "id", "type": "int64"}, {"name": "v", "type": "varchar"}],
                    },
                },
            )
        deadline = time.time() + 600
        while ready_count(api) < n:
            if time.time() > deadline:
                raise SystemExit(f"only {ready_count(api)}/{n} Ready after 600 s; see {log.name}")
            time.sleep(0.05)
        elapsed = time.time() - t0
        queries = metric(metrics_port, "ducklake_catalog_queries_total") - start_queries
        print(
            f"N={n:>4}  create->all Ready {elapsed:7.2f} s  ({n / elapsed:6.1f} tables/s)  peak RSS {peak_rss_mb(op.pid):6.1f} MB  "
            f"catalog queries/table {queries / n:5.1f}"
        )
        op.terminate()
        op.wait(30)
        op = start_operator(kubeconfig, metrics_port, log)  # restart: every table is resumed
        t0 = time.time()
        while metric(metrics_port, "ducklake_reconciles_total") < n + 1:
            time.sleep(0.05)
        queries = metric(metrics_port, "ducklake_catalog_queries_total")
        print(
            f"N={n:>4}  restart resync      {time.time() - t0:7.2f} s  nothing applied; catalog queries/table {queries / n:5.1f}"
        )
    finally:
        op.terminate()
        op.wait(30)
        api.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,100,500")
    args = parser.parse_args()
    server = PgServer.start()
    tmp = tempfile.mkdtemp(prefix="bench-reconcile-")
    try:
        for n in (int(x) for x in args.sizes.split(",")):
            run(n, server, tmp)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
