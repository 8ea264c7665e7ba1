"""The operator as users run it: the ``ducklake-operator`` process (kopf), talking to a real
API server with the credentials of the chart's service account, so the chart's RBAC is what
it gets. Also the chart installed on that server and a few kubectl-level helpers.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

import yaml

from support.helm import ROOT, helm_binary
from support.kube_cluster import KubeCluster
from support.pgserver import free_port

CHART = os.path.join(ROOT, "charts", "ducklake-operator")
RELEASE, RELEASE_NS = "dl", "ducklake-system"
SERVICE_ACCOUNT = "dl-ducklake-operator"  # the chart's fullname for release "dl"


CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "ClusterKopfPeering", "CustomResourceDefinition", "Namespace"}


def render_chart(*args: str, release: str = RELEASE, namespace: str = RELEASE_NS) -> list[dict[str, Any]]:
    """``helm template`` output, each namespaced object placed in the release namespace
    unless the chart names one (as ``helm install`` does)."""
    out = subprocess.run(
        [helm_binary(), "template", release, CHART, "--namespace", namespace, "--include-crds", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if out.returncode != 0:
        raise AssertionError(out.stderr)
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    for doc in docs:
        if doc["kind"] not in CLUSTER_SCOPED:
            doc["metadata"].setdefault("namespace", namespace)
    return docs


def dump(docs: Iterable[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(list(docs), sort_keys=False)


def helm(cluster: KubeCluster, *args: str) -> str:
    """The real helm against the test cluster; its stdout."""
    out = subprocess.run(
        [helm_binary(), "--kubeconfig", cluster.kubeconfig, *args], capture_output=True, text=True, timeout=300
    )
    if out.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{out.stderr}")
    return out.stdout


def install_chart(cluster: KubeCluster, *args: str) -> list[dict[str, Any]]:
    """``helm install`` of the chart as release ``dl`` in ``ducklake-system`` (the chart's crds/
    first, as helm does); what it rendered."""
    helm(cluster, "install", RELEASE, CHART, "--namespace", RELEASE_NS, "--create-namespace", *args)
    docs = render_chart(*args)
    for crd in (d for d in docs if d["kind"] == "CustomResourceDefinition"):
        cluster.kubectl("wait", "--for=condition=Established", f"crd/{crd['metadata']['name']}", "--timeout=60s")
    return docs


def grant_secrets(cluster: KubeCluster, namespace: str, *names: str) -> None:
    """What a platform team does when a catalog names a Secret: ``helm upgrade`` of the
    installed release adding it to ``rbac.catalogSecrets.<namespace>`` (its other values kept)."""
    values = json.loads(helm(cluster, "get", "values", RELEASE, "--namespace", RELEASE_NS, "--output", "json"))
    granted = ((values or {}).get("rbac") or {}).get("catalogSecrets") or {}
    wanted = sorted({*granted.get(namespace, []), *names})
    helm(cluster, "upgrade", RELEASE, CHART, "--namespace", RELEASE_NS, "--reuse-values", "--history-max=3",
         "--set-json", f"rbac.catalogSecrets.{namespace}={json.dumps(wanted)}")  # fmt: skip


def service_account_kubeconfig(cluster: KubeCluster, path: str, account: str = SERVICE_ACCOUNT) -> str:
    """A kubeconfig holding a token of the chart's service account (TokenRequest API)."""
    token = cluster.kubectl("create", "token", account, "-n", RELEASE_NS, "--duration=24h").strip()
    with open(cluster.kubeconfig) as fh:
        config = json.load(fh)
    config["users"] = [{"name": "operator", "user": {"token": token}}]
    config["contexts"][0]["context"]["user"] = "operator"
    with open(path, "w") as fh:
        json.dump(config, fh)
    return path


class Operator:
    """``ducklake-operator`` as a child process, with peering as the chart configures it."""

    def __init__(self, kubeconfig: str, log_path: str, **env: str) -> None:
        self.kubeconfig = kubeconfig
        self.log_path = log_path
        self.env = env
        self.metrics_port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, *args: str) -> Operator:
        env = {
            **os.environ,
            "KUBECONFIG": self.kubeconfig,
            "DUCKLAKE_PEERING": SERVICE_ACCOUNT,  # the chart's ClusterKopfPeering
            **self.env,
        }
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ducklake_operator.controller.main",
                f"--metrics-port={self.metrics_port}",
                f"--liveness=http://127.0.0.1:{free_port()}/healthz",
                *args,
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def restart(self, *args: str) -> None:
        self.stop()
        self.start(*args)

    def peak_rss_mb(self) -> float:
        """The operator process's peak resident memory (VmHWM), in MB."""
        assert self.proc is not None, "the operator is not running"
        with open(f"/proc/{self.proc.pid}/status") as fh:
            peak = re.search(r"VmHWM:\s+(\d+)", fh.read())
        assert peak is not None, "no VmHWM in /proc/<pid>/status"
        return int(peak.group(1)) / 1024

    def profile(self, directory: str | None, name: str) -> Profile:
        """py-spy sampling the operator (all threads) into DIRECTORY/NAME.speedscope.json
        until the profile is stopped; nothing when ``directory`` is None."""
        return Profile(self, directory, name)

    def log(self) -> str:
        with open(self.log_path, errors="replace") as fh:
            return fh.read()

    def metric_or_zero(self, name: str, **labels: str) -> float:
        """``metric``, or 0 while the process is not serving metrics yet."""
        try:
            return self.metric(name, **labels)
        except OSError:
            return 0.0

    def metric(self, name: str, **labels: str) -> float:
        """The sum of the series of ``name`` that have ``labels``."""
        import urllib.request

        # only that metric's series (the client's name[] filter): the whole exposition holds a
        # few series per table, and a bench polling it 20 times a second was most of the
        # operator's CPU at 2,000 tables
        url = f"http://127.0.0.1:{self.metrics_port}/metrics?name[]={name}"
        text = urllib.request.urlopen(url, timeout=5).read().decode()
        series = re.findall(rf"^{name}(?:{{([^}}]*)}})? ([0-9.e+]+)$", text, re.M)
        wanted = [f'{key}="{value}"' for key, value in labels.items()]
        return sum(float(value) for found, value in series if all(w in found.split(",") for w in wanted))


class Profile:
    def __init__(self, op: Operator, directory: str | None, name: str) -> None:
        self.spy: subprocess.Popen[bytes] | None = None
        if directory and op.proc is not None:
            os.makedirs(directory, exist_ok=True)
            out = os.path.join(directory, f"{name}.speedscope.json")
            # the venv's py-spy: the bench runs as .venv/bin/python, with the venv not activated
            spy = os.path.join(os.path.dirname(sys.executable), "py-spy")
            self.spy = subprocess.Popen([spy if os.path.exists(spy) else "py-spy", "record", "--pid", str(op.proc.pid), "--format", "speedscope",
                                         "--rate", "200", "--nonblocking", *os.environ.get("BENCH_PYSPY_ARGS", "").split(), "--output", out],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip

    def stop(self) -> None:
        if self.spy is not None:
            self.spy.send_signal(signal.SIGINT)
            self.spy.wait(60)


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60, interval: float = 0.1) -> Any:
    deadline = time.time() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def condition(obj: dict[str, Any] | None, type_: str) -> dict[str, Any]:
    conditions = ((obj or {}).get("status") or {}).get("conditions", [])
    return next((c for c in conditions if c["type"] == type_), {})


def is_ready(obj: dict[str, Any] | None) -> bool:
    return condition(obj, "Ready").get("status") == "True"
