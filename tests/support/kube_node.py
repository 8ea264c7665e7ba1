"""A real node for the test cluster: kubelet and kube-proxy (built with the control plane
from the pinned Kubernetes modules, ``tests/kube/build.sh``), containerd, runc and the CNI
plugins from Debian's packages, running pods for real on this machine.

Everything of the node lives in namespaces the tests make and remove, so the machine is
left as it was found:

* **network**: a network namespace of its own. A veth pair whose both ends stay inside gives
  the node its address (``NODE_IP``), a blackhole default route keeps every packet inside,
  and pods get addresses on a CNI bridge there. kube-proxy's iptables rules are that
  namespace's. What must cross goes through ``support.netns_relay``: pods reach the API
  server (on the machine's 127.0.0.1) at the ``kubernetes`` Service, the API server reaches
  the kubelet, pods and webhooks through a CONNECT proxy on a unix socket (its egress
  selector), and the tests reach servers started inside the node (``forward``).
* **mounts**: a private mount namespace with its own ``/run`` (containerd's shim sockets,
  the pods' network namespaces) and ``/var`` as an overlay whose writes land in the node's
  directory; kubelet's volume mounts and containerd's snapshots are mounted there only, and
  go with the namespace when its last process ends.
* **sysctls**: kubelet sets ``vm.overcommit_memory``, ``kernel.panic`` and
  ``kernel.panic_on_oops`` (global) unless they already have its values: inside the mount
  namespace, files holding those values are bind-mounted over them, so kubelet reads what it
  wants and writes nothing (containers mount a /proc of their own). kube-proxy's conntrack
  limits are switched off in its configuration.
* **cgroups**: the pods' cgroups (kubelet's ``cgroupRoot``) and the daemons' live in one
  subtree made for the node under this process's own cgroup, removed at the end.

The machine withholds CAP_SYS_RESOURCE even from root, so nothing may lower an
``oom_score_adj`` below 0: containerd's CRI is told to raise its requests to at least the
current value (``restrict_oom_score_adj``), else runc fails with only "can't get final
child's PID from pipe: EOF". The cgroups are v1 hierarchies plus cgroup2 at
``/sys/fs/cgroup/unified``; kubelet 1.34 runs on them with ``failCgroupV1: false``.

Images come from archives (``support.images``) imported with ``ctr``: there is no registry,
so pods use ``imagePullPolicy: Never`` or ``IfNotPresent``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from support.kube_cluster import KubeCluster, NodeAddress

NODE_NAME = "node-1"
NODE_IP = "10.201.0.2"
CLUSTER_DNS = "10.96.0.10"  # the kube-dns Service's address, as kubeadm gives it
NODE_PREFIX = 24
POD_CIDR = "10.244.0.0/24"
SERVICE_CIDR = "10.96.0.0/16"
CNI_BIN = "/usr/lib/cni"
CGROUP_FS = "/sys/fs/cgroup"
RELAY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "netns_relay.py")
# What kubelet 1.34 makes the kernel's tunables (pkg/kubelet/cm/container_manager_linux.go,
# setupKernelTunables): read, and written only where they differ
KUBELET_SYSCTLS = {
    "vm/overcommit_memory": "1",
    "vm/panic_on_oom": "0",
    "kernel/panic": "10",
    "kernel/panic_on_oops": "1",
    "kernel/keys/root_maxkeys": "1000000",
    "kernel/keys/root_maxbytes": "25000000",
}


class NodeError(RuntimeError):
    pass


def node_directory() -> str:
    """A short path: unix sockets live under it (at most 107 bytes each)."""
    return tempfile.mkdtemp(prefix="dlnode-", dir="/tmp")


def node_address(directory: str) -> NodeAddress:
    return NodeAddress(NODE_NAME, NODE_IP, os.path.join(directory, "egress.sock"))


def start_cluster_with_node(images: Iterable[str] = (), pause_image: str | None = None) -> tuple[KubeCluster, KubeNode]:
    """A control plane ready for a node, and the node, Ready, with ``images`` (archive
    paths) imported; ``pause_image`` is the sandbox image's reference (imported among them)."""
    directory = node_directory()
    cluster = KubeCluster.start(node=node_address(directory))
    try:
        node = KubeNode(cluster, directory).start(images, pause_image)
    except BaseException:
        cluster.stop()
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return cluster, node


@dataclass
class KubeNode:
    cluster: KubeCluster
    directory: str
    holder: subprocess.Popen[bytes] | None = None
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    relays: list[subprocess.Popen[bytes]] = field(default_factory=list)
    cgroup: str = ""  # the node's cgroup path, the same in every hierarchy
    created_cgroups: list[str] = field(default_factory=list)  # absolute dirs we made, outermost first

    # ------------------------------------------------------------------ lifecycle

    def start(self, images: Iterable[str] = (), pause_image: str | None = None) -> KubeNode:
        try:
            self._make_cgroups()
            self._start_holder()
            api_port = int(self.cluster.url.rsplit(":", 1)[1])
            self.relay(
                [f"ns:{NODE_IP}:{api_port}=host:127.0.0.1:{api_port}"],
                connect_proxy=os.path.join(self.directory, "egress.sock"),
            )
            self._start_containerd(pause_image)
            for archive in images:
                self.import_image(archive)
            self._start_cluster_dns()
            self._start_kubelet()
            self._start_kube_proxy()
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop every process of the node (pods included), then remove its cgroups and files;
        its mounts and network go with its namespaces."""
        for name in ("kube-proxy", "kubelet"):
            proc = self.processes.get(name)
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                _wait(proc, 10)
        self._kill_cgroup_processes()
        self._kill_namespace_processes()
        for proc in [*self.processes.values(), *self.relays]:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            _wait(proc, 10)
        if self.holder is not None and self.holder.poll() is None:
            self.holder.kill()
            _wait(self.holder, 10)
        self._remove_cgroups()
        shutil.rmtree(self.directory, ignore_errors=True)

    def stop_kubelet(self) -> None:
        """Stop the kubelet alone, as a node whose kubelet died: the pods' containers go on
        running (containerd keeps them), nothing reports on them, and the node goes NotReady
        once the node controller's grace period has passed."""
        proc = self.processes["kubelet"]
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            _wait(proc, 30)

    def start_kubelet(self, timeout: float = 120) -> None:
        """The kubelet started again with the same command and configuration (its earlier log
        kept beside the new one), and the node Ready again by its word (a Ready condition it
        posted since: one from before it stopped may not have expired yet)."""
        proc = self.processes["kubelet"]
        if proc.poll() is None:
            return
        argv = [str(a) for a in proc.args]  # nsenter ... -- <the kubelet's command>
        log = os.path.join(self.directory, "kubelet.log")
        started = int(time.time())
        os.replace(log, os.path.join(self.directory, f"kubelet.{started}.log"))
        self._spawn("kubelet", argv[argv.index("--") + 1 :])
        deadline = time.time() + timeout
        while True:
            self.wait_ready(max(deadline - time.time(), 1))
            node = self.cluster.request("GET", f"/api/v1/nodes/{NODE_NAME}") or {}
            ready = [c for c in (node.get("status") or {}).get("conditions") or [] if c["type"] == "Ready"]
            beat = ready[0].get("lastHeartbeatTime") if ready else None
            if beat and datetime.fromisoformat(beat.replace("Z", "+00:00")).timestamp() >= started:
                return
            if time.time() > deadline:
                raise NodeError(f"the kubelet did not report node {NODE_NAME} Ready within {timeout} s of its start")
            time.sleep(0.5)

    # ------------------------------------------------------------------ access

    def nsenter(self, argv: list[str]) -> list[str]:
        """``argv`` run inside the node's network and mount namespaces."""
        assert self.holder is not None
        pid = self.holder.pid
        return ["nsenter", f"--net=/proc/{pid}/ns/net", f"--mount=/proc/{pid}/ns/mnt", "--", *argv]

    def run(self, *argv: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        out = subprocess.run(self.nsenter(list(argv)), capture_output=True, text=True, timeout=timeout)
        if check and out.returncode != 0:
            raise NodeError(f"{' '.join(argv)} failed ({out.returncode}): {out.stderr[-2000:]}")
        return out

    def ctr(self, *args: str, timeout: float = 600) -> str:
        sock = os.path.join(self.directory, "containerd.sock")
        return self.run("ctr", "--address", sock, "-n", "k8s.io", *args, timeout=timeout).stdout

    def import_image(self, archive: str) -> None:
        self.ctr("images", "import", "--no-unpack=false", archive)

    def relay(self, forwards: list[str], connect_proxy: str | None = None) -> list[tuple[str, str]]:
        """Start a relay (``support.netns_relay``); returns the (listen, connect) pairs with the
        ports it bound."""
        assert self.holder is not None
        argv = [sys.executable, RELAY, "--netns", f"/proc/{self.holder.pid}/ns/net"]
        for f in forwards:
            argv += ["--forward", f]
        if connect_proxy:
            argv += ["--connect-proxy", connect_proxy]
        log = open(os.path.join(self.directory, f"relay-{len(self.relays)}.log"), "wb")
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, start_new_session=True)
        self.relays.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise NodeError(f"the relay did not start: {self._log(log.name)}")
        return [(str(listen), str(connect)) for listen, connect in json.loads(line)["forwards"]]

    def forward(self, node_port: int, node_host: str = NODE_IP) -> int:
        """A port on the machine's 127.0.0.1 that reaches ``node_host:node_port`` in the node."""
        ((listen, _),) = self.relay([f"host:127.0.0.1:0=ns:{node_host}:{node_port}"])
        return int(listen.rsplit(":", 1)[1])

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.time() + timeout
        while True:
            for name, proc in self.processes.items():
                if proc.poll() is not None:
                    raise NodeError(f"{name} exited with {proc.returncode}:\n{self.log(name)[-4000:]}")
            node = self.cluster.request("GET", f"/api/v1/nodes/{NODE_NAME}")
            conditions = {c["type"]: c for c in ((node or {}).get("status") or {}).get("conditions") or []}
            if conditions.get("Ready", {}).get("status") == "True":
                return
            if time.time() > deadline:
                ready = conditions.get("Ready", {})
                raise NodeError(
                    f"node {NODE_NAME} not Ready after {timeout} s ({ready.get('reason')}: {ready.get('message')});"
                    f" kubelet:\n{self.log('kubelet')[-4000:]}"
                )
            time.sleep(0.5)

    def log(self, name: str) -> str:
        return self._log(os.path.join(self.directory, f"{name}.log"))

    @staticmethod
    def _log(path: str) -> str:
        try:
            with open(path, errors="replace") as fh:
                return fh.read()
        except FileNotFoundError:
            return ""

    # ------------------------------------------------------------------ namespaces

    def _start_holder(self) -> None:
        """The process that holds the node's network and mount namespaces, set up as the
        module's docstring says; every daemon of the node is started inside both."""
        d = self.directory
        sysctls = os.path.join(d, "sysctl")
        binds = []
        for name, wanted in KUBELET_SYSCTLS.items():
            with open(f"/proc/sys/{name}") as fh:
                if fh.read().strip() == wanted:
                    continue
            fake = os.path.join(sysctls, name.replace("/", "."))
            os.makedirs(sysctls, exist_ok=True)
            with open(fake, "w") as fh:
                fh.write(wanted + "\n")
            binds.append(f"mount --bind {fake} /proc/sys/{name}")
        script = "\n".join(
            [
                "set -eu",
                "mount -t tmpfs -o mode=755 tmpfs /run",
                f"mkdir -p {d}/var/upper {d}/var/work",
                f"mount -t overlay overlay -o lowerdir=/var,upperdir={d}/var/upper,workdir={d}/var/work /var",
                *binds,
                "ip link set lo up",
                "ip link add node0 type veth peer name node1",
                f"ip addr add {NODE_IP}/{NODE_PREFIX} dev node0",
                "ip link set node0 up",
                "ip link set node1 up",
                "ip route add blackhole default",
                f"ip route add {SERVICE_CIDR} dev node0",  # the node's own processes may dial ClusterIPs
                "echo ready",
                "exec sleep infinity",
            ]
        )
        self.holder = subprocess.Popen(
            ["unshare", "--net", "--mount", "--propagation", "private", "--", "sh", "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=self._join_cgroup,
        )
        assert self.holder.stdout is not None
        if self.holder.stdout.readline().strip() != b"ready":
            err = self.holder.stderr.read().decode(errors="replace") if self.holder.stderr else ""
            raise NodeError(f"setting up the node's namespaces failed: {err}")

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = open(os.path.join(self.directory, f"{name}.log"), "wb")
        proc = subprocess.Popen(
            self.nsenter(argv), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=self._join_cgroup,
        )  # fmt: skip
        self.processes[name] = proc
        return proc

    # ------------------------------------------------------------------ cgroups

    def _make_cgroups(self) -> None:
        """``<this process's memory cgroup>/dlnode-<pid>`` in every hierarchy (cpuset: with its
        parent's cpus and mems, which a new cpuset lacks), and ``daemons`` in it."""
        base = _own_cgroup("memory")
        self.cgroup = f"{base.rstrip('/')}/{os.path.basename(self.directory)}"
        for hierarchy in _hierarchies():
            for path in (self.cgroup, f"{self.cgroup}/daemons"):
                parts = path.strip("/").split("/")
                for i in range(1, len(parts) + 1):
                    target = os.path.join(CGROUP_FS, hierarchy, *parts[:i])
                    if os.path.isdir(target):
                        continue
                    os.mkdir(target)
                    self.created_cgroups.append(target)
                    if hierarchy == "cpuset":
                        for knob in ("cpuset.cpus", "cpuset.mems"):
                            with open(os.path.join(os.path.dirname(target), knob)) as fh:
                                value = fh.read().strip()
                            with open(os.path.join(target, knob), "w") as fh:
                                fh.write(value)

    def _join_cgroup(self) -> None:
        """In the child before exec: into the node's ``daemons`` cgroup of every hierarchy."""
        pid = str(os.getpid())
        for hierarchy in _hierarchies():
            with open(os.path.join(CGROUP_FS, hierarchy, self.cgroup.strip("/"), "daemons", "cgroup.procs"), "w") as fh:
                fh.write(pid)

    def _cgroup_pids(self) -> set[int]:
        pids: set[int] = set()
        if not self.cgroup:
            return pids
        for hierarchy in _hierarchies():
            root = os.path.join(CGROUP_FS, hierarchy, self.cgroup.strip("/"))
            for dirpath, _, files in os.walk(root):
                if "cgroup.procs" in files:
                    try:
                        with open(os.path.join(dirpath, "cgroup.procs")) as fh:
                            pids.update(int(p) for p in fh.read().split())
                    except OSError:
                        pass
        return pids

    def _kill_cgroup_processes(self) -> None:
        _kill_until_gone(lambda: self._cgroup_pids() - {self.holder.pid if self.holder else -1})

    def _kill_namespace_processes(self) -> None:
        """Processes that left the cgroup but share the node's namespaces (none expected),
        killed and waited for (a slow machine's clean-clone run saw four still there when the
        node's stop returned)."""
        if self.holder is None or self.holder.poll() is not None:
            return
        try:
            mnt = os.stat(f"/proc/{self.holder.pid}/ns/mnt").st_ino
            net = os.stat(f"/proc/{self.holder.pid}/ns/net").st_ino
        except FileNotFoundError:
            return
        holder = self.holder.pid
        _kill_until_gone(lambda: _namespace_members(mnt, net) - {holder})

    def _remove_cgroups(self) -> None:
        if not self.cgroup:
            return
        for hierarchy in _hierarchies():
            root = os.path.join(CGROUP_FS, hierarchy, self.cgroup.strip("/"))
            for dirpath, _, _ in sorted(os.walk(root), key=lambda w: -w[0].count("/")):
                _rmdir(dirpath)
        for target in reversed(self.created_cgroups):
            _rmdir(target)

    # ------------------------------------------------------------------ daemons

    def _start_containerd(self, pause_image: str | None) -> None:
        d = self.directory
        net_d = os.path.join(d, "cni", "net.d")
        os.makedirs(net_d)
        with open(os.path.join(net_d, "10-bridge.conflist"), "w") as fh:
            json.dump(_cni_config(os.path.join(d, "cni", "ipam")), fh)
        sock = os.path.join(d, "containerd.sock")
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        lines = [
            "version = 2",
            f'root = "{d}/containerd/root"',
            f'state = "{d}/containerd/state"',
            'disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", '
            '"io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", '
            '"io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]',
            "[grpc]",
            f'  address = "{sock}"',
            "[ttrpc]",
            f'  address = "{sock}.ttrpc"',
            '[plugins."io.containerd.internal.v1.opt"]',
            f'  path = "{d}/containerd/opt"',
            f"[{cri}]",
            "  restrict_oom_score_adj = true",
            "  enable_cdi = false",
            *([f'  sandbox_image = "{pause_image}"'] if pause_image else []),
            f"[{cri}.containerd]",
            '  snapshotter = "overlayfs"',
            '  default_runtime_name = "runc"',
            f"[{cri}.containerd.runtimes.runc]",
            '  runtime_type = "io.containerd.runc.v2"',
            f"[{cri}.containerd.runtimes.runc.options]",
            "  SystemdCgroup = false",
            f"[{cri}.cni]",
            f'  bin_dir = "{CNI_BIN}"',
            f'  conf_dir = "{net_d}"',
        ]
        config = os.path.join(d, "containerd.toml")
        with open(config, "w") as fh:
            fh.write("\n".join(lines) + "\n")
        proc = self._spawn("containerd", ["containerd", "--config", config])
        deadline = time.time() + 30
        while not os.path.exists(sock):
            if proc.poll() is not None or time.time() > deadline:
                raise NodeError(f"containerd did not start:\n{self.log('containerd')[-4000:]}")
            time.sleep(0.1)

    def _start_kubelet(self) -> None:
        d, pki = self.directory, os.path.join(self.cluster.directory, "pki")
        api_port = self.cluster.url.rsplit(":", 1)[1]
        kubeconfig = self.cluster.kubeconfig_for("kubelet", f"https://{NODE_IP}:{api_port}")
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "address": NODE_IP,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": f"{pki}/ca.crt"},
            },
            "authorization": {"mode": "Webhook"},
            "tlsCertFile": f"{pki}/kubelet-serving.crt",
            "tlsPrivateKeyFile": f"{pki}/kubelet-serving.key",
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": self.cgroup,
            "failCgroupV1": False,
            "failSwapOn": False,
            "containerRuntimeEndpoint": f"unix://{d}/containerd.sock",
            "podLogsDir": f"{d}/pod-logs",
            "resolvConf": "",  # no DNS server outside the cluster is reachable from the node
            "clusterDomain": "cluster.local",
            "clusterDNS": [CLUSTER_DNS],
            # no image is ever collected (there is no registry to pull it again from), nothing
            # evicted for the disk the machine's other work uses
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "evictionHard": {
                "memory.available": "100Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
                "nodefs.inodesFree": "1%",
            },  # fmt: skip
            "serializeImagePulls": False,
            "protectKernelDefaults": False,
        }
        path = os.path.join(d, "kubelet.json")
        with open(path, "w") as fh:
            json.dump(config, fh)
        self._spawn(
            "kubelet",
            [
                f"{self.cluster.bin_dir}/kubelet",
                f"--config={path}",
                f"--kubeconfig={kubeconfig}",
                f"--hostname-override={NODE_NAME}",
                f"--node-ip={NODE_IP}",
                f"--root-dir={d}/kubelet",
                "--v=1",
            ],
        )

    def _start_cluster_dns(self) -> None:
        """CoreDNS (built with the cluster, ``tests/kube/build.sh``) for the cluster's names, in
        the node's network, behind the ``kube-dns`` Service as in a kubeadm cluster (kube-proxy
        carries the Service's address to it). It answers for ``cluster.local`` only: nothing
        outside the node is reachable."""
        d = self.directory
        api_port = self.cluster.url.rsplit(":", 1)[1]
        kubeconfig = self.cluster.kubeconfig_for("admin", f"https://{NODE_IP}:{api_port}")
        corefile = os.path.join(d, "Corefile")
        with open(corefile, "w") as fh:
            fh.write(
                f".:53 {{\n  bind {NODE_IP}\n  errors\n"
                f"  kubernetes cluster.local in-addr.arpa ip6.arpa {{\n    kubeconfig {kubeconfig} test\n"
                "    pods insecure\n    fallthrough in-addr.arpa ip6.arpa\n  }\n  cache 30\n}\n"
            )
        self._spawn("coredns", [f"{self.cluster.bin_dir}/coredns", "-conf", corefile])
        ports = [{"name": "dns", "port": 53, "protocol": "UDP"}, {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]
        service = {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": {"k8s-app": "kube-dns"}},
            "spec": {"clusterIP": CLUSTER_DNS, "ports": [{**p, "targetPort": 53} for p in ports]},
        }  # fmt: skip
        endpoints = {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "kube-dns-node", "namespace": "kube-system",
                         "labels": {"kubernetes.io/service-name": "kube-dns"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [NODE_IP], "conditions": {"ready": True}}],
            "ports": ports,
        }  # fmt: skip
        self.cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                                    "items": [service, endpoints]}))  # fmt: skip

    def _start_kube_proxy(self) -> None:
        d = self.directory
        api_port = self.cluster.url.rsplit(":", 1)[1]
        kubeconfig = self.cluster.kubeconfig_for("kube-proxy", f"https://{NODE_IP}:{api_port}")
        config = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": kubeconfig},
            "hostnameOverride": NODE_NAME,
            "bindAddress": NODE_IP,
            "healthzBindAddress": "127.0.0.1:10256",
            "metricsBindAddress": "127.0.0.1:10249",
            "mode": "iptables",
            "clusterCIDR": POD_CIDR,
            # 0: leave the kernel's conntrack limits and timeouts (global) alone
            "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
            # a pod reaching a Service whose endpoint is on the same bridge gets its replies
            # back through the node (no br_netfilter needed)
            "iptables": {"masqueradeAll": True},
        }
        path = os.path.join(d, "kube-proxy.json")
        with open(path, "w") as fh:
            json.dump(config, fh)
        self._spawn("kube-proxy", [f"{self.cluster.bin_dir}/kube-proxy", f"--config={path}", "--v=1"])


def _cni_config(ipam_dir: str) -> dict[str, Any]:
    return {
        "cniVersion": "0.4.0",
        "name": "ducklake-test",
        "plugins": [
            {
                "type": "bridge",
                "bridge": "cni0",
                "isGateway": True,
                "ipMasq": True,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_CIDR}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": ipam_dir,
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def _hierarchies() -> list[str]:
    """The cgroup hierarchies mounted under /sys/fs/cgroup (v1 controllers and the unified one)."""
    return sorted(
        name for name in os.listdir(CGROUP_FS) if os.path.isfile(os.path.join(CGROUP_FS, name, "cgroup.procs"))
    )


def _own_cgroup(controller: str) -> str:
    with open("/proc/self/cgroup") as fh:
        for line in fh:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if controller in controllers.split(","):
                return path
    return "/"


def _kill_until_gone(members: Callable[[], set[int]], timeout: float = 20) -> None:
    """SIGKILL every process ``members`` names, and again, until it names none (a SIGKILL
    takes a moment to end a process) or ``timeout`` seconds have passed."""
    deadline = time.time() + timeout
    while (pids := members()) and time.time() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)


def _namespace_members(mnt: int, net: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}/ns/mnt").st_ino == mnt or os.stat(f"/proc/{entry}/ns/net").st_ino == net:
                found.add(int(entry))
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return found


def _rmdir(path: str) -> None:
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError:
        time.sleep(0.2)  # a cgroup whose last task just exited may still be busy for a moment
        try:
            os.rmdir(path)
        except OSError:
            pass


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> None:
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(5)
