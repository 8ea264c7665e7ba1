"""The test node leaves the machine as it found it: after a node has run a pod and stopped,
no process, mount, network interface, iptables rule, cgroup, file or sysctl change of it is
left. (A node of its own: the session's node is still running while tests run.)"""

from __future__ import annotations

import json
import os
import subprocess

from support.images import pause_image
from support.kube_node import start_cluster_with_node

# sysctls the kernel changes by itself: counters, clocks, random numbers
_VOLATILE = (
    "kernel/random/",
    "kernel/ns_last_pid",
    "fs/dentry-state",
    "fs/inode-nr",
    "fs/inode-state",
    "fs/file-nr",
    "fs/quota/",
    "kernel/pty/nr",
    "net/netfilter/nf_conntrack_count",
    "kernel/sched_domain/",
    "kernel/tainted",
    "vm/stat_refresh",
)


def sysctls() -> dict[str, str]:
    values = {}
    for directory, _, files in os.walk("/proc/sys"):
        for name in files:
            path = os.path.join(directory, name)
            key = path[len("/proc/sys/") :]
            if key.startswith(_VOLATILE):
                continue
            try:
                with open(path) as fh:
                    values[key] = fh.read()
            except OSError:
                continue  # write-only or refused
    return values


def machine() -> dict[str, object]:
    """What a node could change on the machine, as seen from the machine's own namespaces."""

    def out(*argv: str) -> str:
        return subprocess.run(argv, capture_output=True, text=True, check=False).stdout

    with open("/proc/self/mountinfo") as fh:
        mounts = sorted(line.split()[4] for line in fh)
    return {
        "mounts": mounts,
        "links": sorted(link["ifname"] for link in json.loads(out("ip", "-j", "link"))),
        "routes": out("ip", "route"),
        "iptables": out("iptables-save"),
        "ip6tables": out("ip6tables-save"),
        "run": sorted(os.listdir("/run")),
    }


def test_a_node_that_ran_a_pod_leaves_nothing_behind() -> None:
    before, before_sysctls = machine(), sysctls()
    pause = pause_image()
    cluster, node = start_cluster_with_node([str(pause.archive)], pause.ref)
    directory, cgroup, holder = node.directory, node.cgroup, node.holder
    assert holder is not None
    # A namespace's inode number is free for the next namespace once its last member has
    # gone, and the kernel hands out the lowest free one: pods of the tests running beside
    # this one took the node's numbers for theirs. Held open, the node's network namespace
    # keeps its number, so a process in it after the stop is one of the node's.
    network = os.open(f"/proc/{holder.pid}/ns/net", os.O_RDONLY)
    try:
        try:
            cluster.kubectl("run", "sleeper", f"--image={pause.ref}", "--image-pull-policy=Never", "--restart=Never")
            cluster.kubectl("wait", "--for=condition=Ready", "pod/sleeper", "--timeout=60s")
            inside = machine()
        finally:
            node.stop()
            cluster.stop()
        left = members(os.fstat(network).st_ino)
    finally:
        os.close(network)
    assert not left, f"processes in the node's network namespace: {left}"
    assert inside["mounts"] == before["mounts"], "the node's mounts are its own namespace's"
    assert inside["iptables"] == before["iptables"] and inside["links"] == before["links"]

    after, after_sysctls = machine(), sysctls()
    changed = {k: (before_sysctls.get(k), v) for k, v in after_sysctls.items() if before_sysctls.get(k) != v}
    assert not changed, f"sysctls changed: {changed}"
    for key, value in after.items():
        assert value == before[key], key
    assert not os.path.exists(directory)
    assert not any(os.path.exists(f"/sys/fs/cgroup/{h}{cgroup}") for h in os.listdir("/sys/fs/cgroup"))


def members(network: int) -> dict[str, str]:
    """The processes in the network namespace of inode ``network``, with their command lines."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}/ns/net").st_ino == network:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    found[pid] = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
    return found
