"""A real Kubernetes control plane for the tests: etcd, kube-apiserver and
kube-controller-manager, built from Go modules by ``tests/kube/build.sh`` (cached under
``~/.cache`` by version) and started on free loopback ports.

Everything a cluster does without nodes is real: admission, structural-schema pruning and
defaulting, CEL validation, RBAC, the status subresource, finalizers, garbage collection of
owned objects, service-account tokens. Started plain, there is no kubelet and no scheduler,
so pods are never scheduled or run: a test that launches one can check the object, not its
effect. Started ``with_node`` (``NodeAddress``), it is ready for a node
(``support.kube_node``): a kube-scheduler, the controllers that pods, Deployments, Services
and nodes need, node authorization, certificates for the node's kubelet and kube-proxy, the
``kubernetes`` Service's endpoint at the node's address, and the API server's traffic to the
node (logs, exec, webhooks) sent through a proxy into the node's network namespace.

The CA, the serving certificate, the admin's client certificate (group
``system:masters``) and the service-account key are generated with ``openssl`` for each
cluster; ``kubeconfig`` is an ordinary kubeconfig file that kubectl, kopf and the
kubernetes client read.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from support.pgserver import free_port

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "tests", "kube", "build.sh")
SERVICE_CIDR = "10.96.0.0/16"


def binaries() -> str:
    """Directory holding etcd, kube-apiserver, kube-controller-manager, the node's binaries
    and kubectl (built once)."""
    out = subprocess.run(["bash", BUILD], capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(f"building the test cluster failed:\n{out.stderr[-4000:]}")
    return out.stdout.strip().splitlines()[-1]


def _openssl(*args: str, cwd: str) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _certificates(pki: str, node: NodeAddress | None = None) -> None:
    """CA; apiserver serving cert for 127.0.0.1/localhost and the in-cluster names; admin
    client cert in system:masters; controller-manager client cert; service-account keys.
    With a node: client certs for the scheduler, the kubelet (system:node:<name>), kube-proxy
    and the API server's calls to the kubelet; the kubelet's serving cert."""
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "30",
        "-subj",
        "/CN=ducklake-test-ca",
        cwd=pki,
    )
    node_ip = f",IP:{node.ip}" if node else ""
    sans = f"subjectAltName=IP:127.0.0.1,IP:10.96.0.1{node_ip},DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
    client = "extendedKeyUsage=clientAuth\n"
    leaves = {
        "apiserver": ("/CN=kube-apiserver", ["-addext", sans], sans + "\n"),
        "admin": ("/O=system:masters/CN=test-admin", [], client),
        "controller-manager": ("/CN=system:kube-controller-manager", [], client),
    }
    if node is not None:
        leaves |= {
            "scheduler": ("/CN=system:kube-scheduler", [], client),
            "kubelet": (f"/O=system:nodes/CN=system:node:{node.name}", [], client),
            "kubelet-serving": (
                f"/O=system:nodes/CN=system:node:{node.name}",
                [],
                f"subjectAltName=IP:{node.ip},DNS:{node.name}\nextendedKeyUsage=serverAuth\n",
            ),
            "kube-proxy": ("/CN=system:kube-proxy", [], client),
            "apiserver-kubelet-client": ("/O=system:masters/CN=kube-apiserver-kubelet-client", [], client),
        }
    for name, (subject, extra, extensions) in leaves.items():
        _openssl(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            "-subj",
            subject,
            *extra,
            cwd=pki,
        )
        ext = os.path.join(pki, f"{name}.ext")
        with open(ext, "w") as fh:
            fh.write(extensions)
        _openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.crt",
            "-days",
            "30",
            "-extfile",
            ext,
            cwd=pki,
        )
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=pki)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


def _kubeconfig(path: str, server: str, pki: str, user: str) -> str:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "test", "cluster": {"server": server, "certificate-authority": f"{pki}/ca.crt"}}],
        "users": [
            {"name": user, "user": {"client-certificate": f"{pki}/{user}.crt", "client-key": f"{pki}/{user}.key"}}
        ],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": user}}],
        "current-context": "test",
    }
    with open(path, "w") as fh:
        json.dump(config, fh)
    return path


@dataclass(frozen=True)
class NodeAddress:
    """Where the cluster's one node will be: its name, its address inside its network
    namespace (where the ``kubernetes`` Service's endpoint is published, the API server
    relayed there on its own port), and the unix socket of the proxy through which the API
    server reaches that network (``support.netns_relay``)."""

    name: str
    ip: str
    egress_socket: str


# The controllers a node's pods need beside those of a cluster without nodes: Deployments
# (the chart's operator), Services' endpoints (kube-proxy reads EndpointSlices), a Job's TTL,
# the node's health (NotReady when its kubelet stops) and the namespaces' root CA ConfigMap
# (every service-account token volume mounts it).
CONTROLLERS = "garbagecollector,namespace,serviceaccount,serviceaccount-token,job"
NODE_CONTROLLERS = (
    "deployment,replicaset,endpoint,endpointslice,ttl-after-finished,nodelifecycle,taint-eviction-controller,"
    "podgc,root-ca-cert-publisher"
)


@dataclass
class KubeCluster:
    directory: str
    url: str
    kubeconfig: str
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    # ------------------------------------------------------------------ lifecycle

    bin_dir: str = ""
    node: NodeAddress | None = None
    # kubectl's names of resources (plural, singular, kind, short names; also "<plural>.<group>"):
    # (API path of the group version, plural, namespaced), from discovery (``resource``)
    resources: dict[str, tuple[str, str, bool]] = field(default_factory=dict)

    @classmethod
    def start(cls, node: NodeAddress | None = None) -> KubeCluster:
        bin_dir = binaries()
        directory = tempfile.mkdtemp(prefix="ducklake-kube-")
        pki = os.path.join(directory, "pki")
        os.makedirs(pki)
        _certificates(pki, node)
        etcd_port, etcd_peer, api_port = free_port(), free_port(), free_port()
        url = f"https://127.0.0.1:{api_port}"
        cluster = cls(directory, url, _kubeconfig(os.path.join(directory, "kubeconfig"), url, pki, "admin"))
        cluster.bin_dir, cluster.node = bin_dir, node
        cm_config = _kubeconfig(os.path.join(directory, "cm.kubeconfig"), url, pki, "controller-manager")
        try:
            cluster._spawn(
                "etcd",
                [
                    f"{bin_dir}/etcd",
                    "--data-dir",
                    os.path.join(directory, "etcd"),
                    "--listen-client-url",
                    f"http://127.0.0.1:{etcd_port}",
                    "--listen-peer-url",
                    f"http://127.0.0.1:{etcd_peer}",
                ],
            )
            cluster._spawn(
                "kube-apiserver",
                [
                    f"{bin_dir}/kube-apiserver",
                    f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                    "--bind-address=127.0.0.1",
                    f"--advertise-address={node.ip if node else '127.0.0.1'}",
                    f"--secure-port={api_port}",
                    f"--tls-cert-file={pki}/apiserver.crt",
                    f"--tls-private-key-file={pki}/apiserver.key",
                    f"--client-ca-file={pki}/ca.crt",
                    f"--authorization-mode={'Node,RBAC' if node else 'RBAC'}",
                    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                    f"--service-account-key-file={pki}/sa.pub",
                    f"--service-account-signing-key-file={pki}/sa.key",
                    f"--service-cluster-ip-range={SERVICE_CIDR}",
                    f"--cert-dir={pki}",
                    *(
                        cluster._node_apiserver_flags() if node else ["--endpoint-reconciler-type=none"]
                    ),  # no node network: 127.0.0.1 is not a valid endpoint
                ],
            )
            cluster.wait_ready()
            cluster._spawn(
                "kube-controller-manager",
                [
                    f"{bin_dir}/kube-controller-manager",
                    f"--kubeconfig={cm_config}",
                    f"--authentication-kubeconfig={cm_config}",
                    f"--authorization-kubeconfig={cm_config}",
                    f"--controllers={CONTROLLERS}" + (f",{NODE_CONTROLLERS}" if node else ""),
                    f"--service-account-private-key-file={pki}/sa.key",
                    f"--root-ca-file={pki}/ca.crt",
                    "--use-service-account-credentials=true",  # each controller with its own role (the GC may delete anything)
                    "--leader-elect=false",
                    "--bind-address=127.0.0.1",
                    f"--secure-port={free_port()}",
                    "--concurrent-gc-syncs=5",
                ],
            )
            if node is not None:
                sched_config = _kubeconfig(os.path.join(directory, "scheduler.kubeconfig"), url, pki, "scheduler")
                cluster._spawn(
                    "kube-scheduler",
                    [
                        f"{bin_dir}/kube-scheduler",
                        f"--kubeconfig={sched_config}",
                        f"--authentication-kubeconfig={sched_config}",
                        f"--authorization-kubeconfig={sched_config}",
                        "--leader-elect=false",
                        "--bind-address=127.0.0.1",
                        f"--secure-port={free_port()}",
                    ],
                )
            cluster.wait_for_namespace("default")
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _node_apiserver_flags(self) -> list[str]:
        """The ``kubernetes`` Service's endpoint at the node's address (the node relays that
        port to this server), the kubelet reached with a client cert through the node's
        egress proxy, node authorization's admission."""
        assert self.node is not None
        pki = os.path.join(self.directory, "pki")
        egress = os.path.join(self.directory, "egress.yaml")
        with open(egress, "w") as fh:
            json.dump(
                {
                    "apiVersion": "apiserver.k8s.io/v1beta1",
                    "kind": "EgressSelectorConfiguration",
                    "egressSelections": [
                        {
                            "name": "cluster",
                            "connection": {
                                "proxyProtocol": "HTTPConnect",
                                "transport": {"uds": {"udsName": self.node.egress_socket}},
                            },
                        }
                    ],
                },
                fh,
            )
        return [
            f"--egress-selector-config-file={egress}",
            f"--kubelet-client-certificate={pki}/apiserver-kubelet-client.crt",
            f"--kubelet-client-key={pki}/apiserver-kubelet-client.key",
            f"--kubelet-certificate-authority={pki}/ca.crt",
            "--kubelet-preferred-address-types=InternalIP",
            "--enable-admission-plugins=NodeRestriction",
        ]

    def kubeconfig_for(self, user: str, server: str | None = None) -> str:
        """A kubeconfig with ``user``'s client certificate (one of the leaves made at start),
        for ``server`` (default: this server's loopback URL)."""
        path = os.path.join(self.directory, f"{user}.kubeconfig")
        return _kubeconfig(path, server or self.url, os.path.join(self.directory, "pki"), user)

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(os.path.join(self.directory, f"{name}.log"), "wb")
        self.processes[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self) -> None:
        for proc in reversed(list(self.processes.values())):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.processes.values():
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(self.directory, ignore_errors=True)

    def log(self, name: str) -> str:
        with open(os.path.join(self.directory, f"{name}.log"), errors="replace") as fh:
            return fh.read()

    # ------------------------------------------------------------------ access

    def ssl_context(self) -> ssl.SSLContext:
        """TLS as the admin: the cluster's CA and the admin's client certificate."""
        pki = os.path.join(self.directory, "pki")
        context = ssl.create_default_context(cafile=f"{pki}/ca.crt")
        context.load_cert_chain(f"{pki}/admin.crt", f"{pki}/admin.key")
        return context

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        """One API call as the admin; returns the decoded JSON (None for 404)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={"Content-Type": content_type})
        try:
            with urllib.request.urlopen(req, context=self.ssl_context(), timeout=30) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise RuntimeError(f"{method} {path}: {exc.code} {exc.read().decode(errors='replace')}") from None

    def resource(self, name: str) -> tuple[str, str, bool] | None:
        """A resource as kubectl names it (``dlj``, ``pods``, ``job``, ``deployment.apps``):
        (API path of its group version, plural, namespaced); None: the API server has none.
        Discovered once, and again for a name not seen yet (a CRD installed since)."""
        if name.lower() not in self.resources:
            self.resources = self._discover()
        return self.resources.get(name.lower())

    def _discover(self) -> dict[str, tuple[str, str, bool]]:
        found: dict[str, tuple[str, str, bool]] = {}
        versions = [("/api/v1", "")] + [
            (f"/apis/{g['preferredVersion']['groupVersion']}", g["name"])
            for g in self.request("GET", "/apis")["groups"]
        ]
        for path, group in versions:  # the core group first: its names win, as in kubectl
            for r in (self.request("GET", path) or {}).get("resources", []):
                if "/" in r["name"]:  # a subresource
                    continue
                entry = (path, r["name"], bool(r["namespaced"]))
                names = [r["name"], r.get("singularName", ""), r["kind"], *r.get("shortNames", [])]
                for alias in names + ([f"{n}.{group}" for n in names if n] if group else []):
                    if alias:
                        found.setdefault(alias.lower(), entry)
        return found

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.time() + timeout
        while True:
            for name, proc in self.processes.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode}:\n{self.log(name)[-4000:]}")
            try:
                req = urllib.request.Request(self.url + "/readyz")
                with urllib.request.urlopen(req, context=self.ssl_context(), timeout=5) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.time() > deadline:
                raise RuntimeError(f"kube-apiserver not ready after {timeout} s:\n{self.log('kube-apiserver')[-4000:]}")
            time.sleep(0.2)

    def wait_for_namespace(self, name: str, timeout: float = 60) -> None:
        deadline = time.time() + timeout
        while self.request("GET", f"/api/v1/namespaces/{name}") is None:
            if time.time() > deadline:
                raise RuntimeError(f"namespace {name} did not appear")
            time.sleep(0.2)

    def install_crds(self, paths: list[str], timeout: float = 60) -> list[str]:
        """The CRDs of ``paths`` applied (server-side: some are too large for the last-applied
        annotation), once Established; their names. Polled: ``kubectl wait`` fails rather than
        waits while a new CRD has no status conditions yet."""
        names = [
            json.loads(self.kubectl("apply", "--server-side", "-f", path, "-o", "json"))["metadata"]["name"]
            for path in paths
        ]
        deadline = time.time() + timeout
        for name in names:
            while not self._established(name):
                if time.time() > deadline:
                    raise RuntimeError(f"CRD {name} not Established after {timeout} s")
                time.sleep(0.2)
        return names

    def _established(self, name: str) -> bool:
        crd = self.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}") or {}
        conditions = (crd.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    def kubectl(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120) -> str:
        """kubectl (the cluster's own release's) against this cluster; returns stdout (raises
        with stderr when check)."""
        out = subprocess.run(
            [f"{self.bin_dir}/kubectl", "--kubeconfig", self.kubeconfig, *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and out.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({out.returncode}):\n{out.stderr}")
        return out.stdout if check else out.stdout + out.stderr

    def kubectl_result(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [f"{self.bin_dir}/kubectl", "--kubeconfig", self.kubeconfig, *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def version(self) -> dict[str, Any]:
        return self.request("GET", "/version")
