"""Security on real pods: the operator's pod, the pods of a Job launcher's run (its driver and
executor), of a SparkApplication's (driver and executor, through the real Kubeflow Spark
Operator) and the Local launcher's (a process of the operator's pod) run as the image's
non-root user with a read-only root filesystem (Spark, PySpark and DuckDB write only to the
mounted /tmp, and the runs succeed that way), may not gain privileges and hold no
capability: checked on the pods as the API server has them and on their processes as the
node's kernel runs them. No credential (the catalog's PostgreSQL password, the S3 secret
key, a wrong password a catalog was given) appears in any object of the cluster but its
Secret, in any pod's log or in any event, after runs with every launcher and failed runs.

The runs go side by side: the module's fixture starts them all at once and watches the
cluster until they have ended (every pod as created, its processes while they run, the runs'
pods' logs while they exist: Spark deletes its executors at the end); the tests check what
it saw and what the cluster holds afterwards."""

from __future__ import annotations

import base64
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from support.kube_namespace import Kube
from support.kube_node import KubeNode, NodeError
from support.operator_process import RELEASE_NS, condition, wait_for
from support.pod_env import PG_PASSWORD, S3_KEYS, PodEnv
from support.pod_runs import JOB_LABEL, SMALL, explain, many_files_lake, s3_url
from support.runs import ENDED, job

RUN_AS = 10001  # the image's user (Dockerfile)
WRONG_PASSWORD = "Wr0ng-Pa55word"
CREDENTIALS = {"the PostgreSQL password": PG_PASSWORD, "the S3 secret key": S3_KEYS["password"],
               "the wrong password": WRONG_PASSWORD}  # fmt: skip
IN_DRIVER = {"launcher": "Job", "driver": {"cores": "100m", "memory": "768m"}, "executor": {"instances": 0}}
LOG_EVERY = 2.0  # seconds between two reads of a run pod's log


@dataclass(frozen=True)
class Process:
    """A process of a container, as the node's kernel has it."""

    pod: str
    container: str
    pid: int
    command: str
    uids: tuple[int, ...]  # real, effective, saved, filesystem
    no_new_privs: bool
    capabilities: dict[str, int]  # CapInh, CapPrm, CapEff, CapBnd, CapAmb
    mounts: dict[str, str]  # mount point -> its options (ro/rw first)

    def locked_down(self) -> list[str]:
        """What is wrong with it (nothing: an empty list)."""
        wrong = [f"uids {self.uids}"] if set(self.uids) != {RUN_AS} else []
        wrong += [] if self.no_new_privs else ["may gain privileges (NoNewPrivs: 0)"]
        wrong += [f"{k} {v:x}" for k, v in self.capabilities.items() if v]
        wrong += [] if self.mounts.get("/", "").startswith("ro") else [f"/ mounted {self.mounts.get('/')}"]
        wrong += [] if self.mounts.get("/tmp", "").startswith("rw") else [f"/tmp mounted {self.mounts.get('/tmp')}"]
        return wrong


def container_processes(node: KubeNode, pod: dict[str, Any]) -> list[Process]:
    """The processes of the pod's running containers (none of a container that ended meanwhile)."""
    found = []
    for status in pod["status"].get("containerStatuses") or []:
        if "running" not in (status.get("state") or {}) or not status.get("containerID"):
            continue
        try:
            listing = node.ctr("task", "ps", status["containerID"].split("://", 1)[1])
        except NodeError:
            continue  # ended since the API server said it ran
        for pid in (int(line.split()[0]) for line in listing.splitlines()[1:] if line.strip()):
            process = read_process(pod["metadata"]["name"], status["name"], pid)
            if process is not None:
                found.append(process)
    return found


def read_process(pod: str, container: str, pid: int) -> Process | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            status = fh.read()
        with open(f"/proc/{pid}/mountinfo") as fh:
            mountinfo = fh.read()
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            command = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:  # ended meanwhile (gone, or a zombie: its mounts are EINVAL)
        return None
    if not command:  # exiting meanwhile: its memory, and with it its command line, already released
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    mounts = {}
    for line in mountinfo.splitlines():  # id parent dev root mount-point options ...
        parts = line.split()
        mounts[parts[4]] = parts[5]
    return Process(
        pod=pod,
        container=container,
        pid=pid,
        command=command[:200],
        uids=tuple(int(u) for u in fields["Uid"].split()),
        no_new_privs=fields["NoNewPrivs"].strip() == "1",
        capabilities={k: int(fields[k], 16) for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")},
        mounts=mounts,
    )


def all_pods(pods: PodEnv) -> list[dict[str, Any]]:
    return list(json.loads(pods.cluster.kubectl("get", "pods", "-A", "-o", "json"))["items"])


@dataclass
class Watched:
    """What the fixture saw while the runs went on."""

    pods: PodEnv
    kubes: dict[str, Kube] = field(default_factory=dict)  # launcher (or failure) -> its namespace
    runs: dict[str, str] = field(default_factory=dict)  # launcher (or failure) -> its DuckLakeJob's name
    ended: dict[str, dict[str, Any]] = field(default_factory=dict)  # launcher (or failure) -> its last status
    created: dict[str, dict[str, Any]] = field(default_factory=dict)  # pod uid -> the pod as first read
    # (pod, pid, command) -> the process (a pid may exec another program: spark-class's bash becomes the JVM)
    processes: dict[tuple[str, int, str], Process] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)  # "namespace/pod" -> its log as last read
    logs_read: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0

    def run_pods(self, what: str) -> list[dict[str, Any]]:
        """The pods of a run, as created."""
        name, namespace = self.runs[what], self.kubes[what].namespace
        return [p for p in self.created.values() if p["metadata"]["namespace"] == namespace
                and p["metadata"].get("labels", {}).get(JOB_LABEL) == name]  # fmt: skip

    def look(self) -> None:
        now = time.monotonic()
        ours = {k.namespace for k in self.kubes.values()} | {RELEASE_NS}
        for pod in all_pods(self.pods):
            meta = pod["metadata"]
            self.created.setdefault(meta["uid"], pod)
            if meta["namespace"] not in ours:
                continue
            for process in container_processes(self.pods.node, pod):
                self.processes.setdefault((process.pod, process.pid, process.command), process)
            where = f"{meta['namespace']}/{meta['name']}"
            if JOB_LABEL in meta.get("labels", {}) and now - self.logs_read.get(where, 0) >= LOG_EVERY:
                self.logs_read[where] = now
                log = self.pods.cluster.kubectl("-n", meta["namespace"], "logs", meta["name"], "--all-containers",
                                                check=False)  # fmt: skip
                if log:
                    self.logs[where] = log

    def all_ended(self) -> bool:
        self.look()
        for what, name in self.runs.items():
            status = (self.kubes[what].get("dlj", name) or {}).get("status") or {}
            if status.get("state") in ENDED:
                self.ended[what] = status
        return len(self.ended) == len(self.runs)


def wrong_password_catalog(pods: PodEnv, kube: Kube) -> None:
    """A catalog that was Ready, whose Secret then got a wrong password: it says so."""
    pods.lake(kube)
    kube.kubectl("patch", "secret", "lake-pg", "--type=merge", "-p",
                 json.dumps({"stringData": {"password": WRONG_PASSWORD}}))  # fmt: skip
    wait_for("the catalog not Ready", lambda: condition(kube.get("ducklakecatalog", "lake"), "Ready").get("status")
             == "False", timeout=120)  # fmt: skip


@pytest.fixture(scope="module")
def watched(pods: PodEnv) -> Watched:
    pods.install_spark_operator()
    seen = Watched(pods, {what: pods.namespace() for what in ("Job", "SparkApplication", "Local", "bad input",
                                                                  "wrong password")})  # fmt: skip
    k = seen.kubes
    for what in ("Job", "SparkApplication", "Local"):
        many_files_lake(pods, k[what], files=4)
    many_files_lake(pods, k["bad input"], files=1)
    bad = f"{k['bad input'].namespace}/in/bad.jsonl"
    with pods.s3fs().open_output_stream(f"lake/{bad}") as out:
        out.write(b'{"id": 1, "amount": 1}\n{"id": 2, "amount": 2}\nnot json\n')
    wrong_password_catalog(pods, k["wrong password"])

    runs = {
        "Job": job("compact-job", spark={"launcher": "Job", "driver": SMALL, "executor": {"instances": 1, **SMALL}}),
        "SparkApplication": job(
            "compact-sa", spark={"launcher": "SparkApplication", "driver": SMALL, "executor": {"instances": 1, **SMALL}}
        ),  # fmt: skip
        "Local": job("compact-local", spark={"launcher": "Local"}),
        "bad input": job("ingest-bad", operation="ingest", params={"path": s3_url(bad)}, spark=IN_DRIVER),
        "wrong password": job("compact-wrong", spark=IN_DRIVER),
    }
    started = time.monotonic()
    for what, manifest in runs.items():
        k[what].apply(manifest)
        seen.runs[what] = manifest["metadata"]["name"]
    wait_for("every run ended", seen.all_ended, timeout=600, interval=0.5)
    seen.look()  # the pods as they ended
    seen.seconds = time.monotonic() - started
    print(f"{len(runs)} runs side by side: {seen.seconds:.1f} s; {len(seen.created)} pods, "
          f"{len(seen.processes)} processes of ours seen")  # fmt: skip
    return seen


def test_the_runs_of_every_launcher_succeed_and_the_failed_ones_say_why(watched: Watched) -> None:
    for what in ("Job", "SparkApplication", "Local"):
        status = watched.ended[what]
        assert status["state"] == "Succeeded", explain(watched.kubes[what], watched.runs[what], status)
        assert status["launched"]["kind"] == what and status["filesRead"] == 4
    bad = watched.ended["bad input"]
    assert bad["state"] == "Failed" and "bad.jsonl:3" in bad["message"], bad
    assert watched.run_pods("bad input"), "the failed ingest ran in a pod"
    wrong = watched.ended["wrong password"]
    assert wrong["state"] == "Failed" and "is not Ready" in wrong["message"], wrong


def locked_down_spec(pod: dict[str, Any]) -> list[str]:
    """What is wrong with a pod's security settings as the API server has them."""
    spec, name = pod["spec"], pod["metadata"]["name"]
    context = spec.get("securityContext") or {}
    wrong = [] if context.get("runAsNonRoot") is True else [f"{name}: runAsNonRoot {context.get('runAsNonRoot')}"]
    for container in [*spec.get("initContainers", []), *spec["containers"]]:
        c = container.get("securityContext") or {}
        where = f"{name}/{container['name']}"
        if c.get("runAsUser", context.get("runAsUser")) != RUN_AS:
            wrong.append(f"{where}: runs as {c.get('runAsUser', context.get('runAsUser'))}")
        if c.get("readOnlyRootFilesystem") is not True:
            wrong.append(f"{where}: root filesystem writable")
        if c.get("allowPrivilegeEscalation") is not False:
            wrong.append(f"{where}: allowPrivilegeEscalation {c.get('allowPrivilegeEscalation')}")
        if (c.get("capabilities") or {}).get("drop") != ["ALL"] or (c.get("capabilities") or {}).get("add"):
            wrong.append(f"{where}: capabilities {c.get('capabilities')}")
        if "/tmp" not in {m["mountPath"] for m in container.get("volumeMounts") or []}:
            wrong.append(f"{where}: no /tmp mounted")
    return wrong


def test_every_pod_runs_as_the_non_root_user_with_a_read_only_root(watched: Watched) -> None:
    """The pods as created: the operator's (where the Local launcher runs), and every pod of
    the Job and SparkApplication runs, executors included."""
    operators = watched.pods.operator_pods()
    assert operators
    kinds = {"the operator's": operators}
    for what in ("Job", "SparkApplication", "bad input"):
        run_pods = watched.run_pods(what)
        kinds[f"{what} drivers"] = [p for p in run_pods if "-exec-" not in p["metadata"]["name"]]
        kinds[f"{what} executors"] = [p for p in run_pods if "-exec-" in p["metadata"]["name"]]
    del kinds["bad input executors"]  # Spark inside the driver
    assert all(kinds.values()), {k: len(v) for k, v in kinds.items()}
    wrong = [w for found in kinds.values() for p in found for w in locked_down_spec(p)]
    assert not wrong, wrong


def test_every_process_runs_locked_down_on_the_node(watched: Watched) -> None:
    """The processes of those pods' containers, as the node runs them: uid 10001, no
    capability (not even in the bounding set), no new privileges, / read-only and /tmp
    writable; Spark's JVMs and Python workers among them, the Local run's in the operator's pod."""
    wrong = {f"{p.pod}/{p.container} {p.pid} {p.command[:80]}": p.locked_down() for p in watched.processes.values()}
    assert not {k: v for k, v in wrong.items() if v}, {k: v for k, v in wrong.items() if v}

    def commands(pod_names: set[str]) -> set[str]:
        return {p.command.split()[0].rsplit("/", 1)[-1] for p in watched.processes.values() if p.pod in pod_names}

    operator = {p["metadata"]["name"] for p in watched.pods.operator_pods()}
    for what in ("Job", "SparkApplication"):
        names = {p["metadata"]["name"] for p in watched.run_pods(what)}
        drivers = {n for n in names if "-exec-" not in n}
        assert "java" in commands(drivers) and "java" in commands(names - drivers), (what, commands(names))
    assert "java" in commands(operator), commands(operator)  # the Local run's Spark, in the operator's pod


def secrets_encoded() -> dict[str, str]:
    """The credentials and their base64 forms (as a Secret's data holds them)."""
    found = dict(CREDENTIALS)
    found.update({f"{k} (base64)": base64.b64encode(v.encode()).decode() for k, v in CREDENTIALS.items()})
    return found


def leaks(text: str) -> list[str]:
    return [name for name, value in secrets_encoded().items() if value in text]


def test_no_credential_in_any_object_log_or_event_of_the_cluster(watched: Watched) -> None:
    """Every object of every kind the API server lists, in every namespace, but Secrets; the
    logs of every pod (and of the runs' pods while they existed); the pods as created."""
    cluster = watched.pods.cluster
    kinds = [k for k in cluster.kubectl("api-resources", "--verbs=list", "-o", "name").split()
             if k.split(".", 1)[0] != "secrets"]  # fmt: skip
    objects: dict[str, int] = {}
    wrong: dict[str, list[str]] = {}
    for kind in kinds:
        items = json.loads(cluster.kubectl("get", kind, "-A", "-o", "json"))["items"]
        objects[kind] = len(items)
        for item in items:
            if found := leaks(json.dumps(item)):
                wrong[f"{kind} {item['metadata'].get('namespace', '')}/{item['metadata']['name']}"] = found
    for kind in ("pods", "configmaps", "events", "events.events.k8s.io", "jobs.batch", "ducklakejobs.ducklake.dev",
                 "sparkapplications.sparkoperator.k8s.io"):  # fmt: skip
        assert objects.get(kind), (kind, objects)
    logs = dict(watched.logs)
    for pod in all_pods(watched.pods):
        meta = pod["metadata"]
        logs[f"{meta['namespace']}/{meta['name']}"] = cluster.kubectl(
            "-n", meta["namespace"], "logs", meta["name"], "--all-containers", check=False
        )
    for where, log in logs.items():
        if found := leaks(log):
            wrong[f"log of {where}"] = found
    for pod in watched.created.values():
        if found := leaks(json.dumps(pod)):
            wrong[f"pod {pod['metadata']['name']} as created"] = found
    assert not wrong, wrong
    spark_operator = [w for w in logs if w.startswith("spark-operator/")]
    assert spark_operator and any(re.search(r"-exec-\d+$", w) for w in logs), sorted(logs)
    print(f"no credential in {sum(objects.values())} objects of {len(objects)} kinds and {len(logs)} pod logs")
