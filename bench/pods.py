"""DuckLakeJob runs on real pods: how long each launcher takes, what the operator's pod
holds in memory, and compaction throughput through executor pods against in-process.

Starts what the pod tests start (``support.pod_env.PodEnv.running()``: the test cluster with
its node, the operator's image built from the Dockerfile and installed with the chart,
PostgreSQL and S3 (moto) in the node's network), makes a PostgreSQL catalog with an S3 lake,
and measures:

1. **Launch and run times**: seconds from a DuckLakeJob's creation (the POST) to its
   ``Running`` state (the operator launched it), to the first pod of the run running (its
   driver), to the job program's first word (``status.progress``: planning), and to
   ``Succeeded``, seen on watches of the namespace's DuckLakeJobs and pods; for the Local
   launcher (Spark local mode in the operator's pod), the Job launcher with 0 executors
   (Spark inside the driver's pod) and with 2 executor pods, and the SparkApplication
   launcher (the Kubeflow Spark Operator, 2 executors); each a compaction of a small table
   (``--small-files`` files of 100 rows) and of a ~``--table-mb`` MB table (``--files`` files
   written by DuckDB; ``targetFileSize`` so that every file is merged). Every run works on a
   fresh table.
2. **The operator pod's memory** (its working set: ``memory.workingSetBytes`` in the kubelet's
   summary API, as ``kubectl top`` and evictions read it, and cAdvisor's formula on the pod's
   cgroup, read every 0.25 s) at rest, while ``--memory-runs`` small compactions run through
   the Local launcher in-process (``inProcessBelow``: the job program is a child process in the
   operator's pod, without Spark), all created at once, at most ``--memory-at-once`` of them
   running (a suspended policy's ``maxJobsPerCatalog``; 0: no limit), then at rest again.
3. **Throughput**: MB/s of compaction input through 2 executor pods (the Job launcher's run
   of the big table above) and in-process (the Job launcher, 0 executors, ``inProcessBelow``
   above the table's size: no Spark session), each on a fresh copy of the same data: end to
   end (from creation), over the job's own time (``jobReport.seconds``: from its plan to its
   commit; Spark's session and its executor pods start within it), and from the moment its
   file groups can run (both executor pods running; in-process, its first ``writing``
   progress) to ``Succeeded``.

Every run is checked: Succeeded, every file read, run where it was meant to (``ranOn``), and
DuckDB reads the same row count and sum afterwards; a run that is not right is reported as
failed and left out of the figures. The node's 2 cores are shared with the control plane
(etcd, the API server, the scheduler), containerd, PostgreSQL and moto.

    python bench/pods.py [--table-mb 1024] [--files 100] [--runs 3] [--big-runs 3] [--memory-runs 20]
    python bench/pods.py --table-mb 50 --files 20 --runs 1   # a quick try
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from ducklake_operator.catalog import CatalogLocation  # noqa: E402
from support.images import image_size  # noqa: E402
from support.kube_cluster import KubeCluster  # noqa: E402
from support.kube_namespace import Kube  # noqa: E402
from support.kube_node import NODE_NAME  # noqa: E402
from support.manifests import manifest  # noqa: E402
from support.operator_process import RELEASE_NS  # noqa: E402
from support.pod_env import PodEnv  # noqa: E402
from support.pod_runs import JOB_LABEL, SMALL, explain  # noqa: E402
from support.runs import ENDED, job  # noqa: E402

API = "/apis/ducklake.dev/v1alpha1"
MB = 1_000_000
BIG = {"cores": "100m", "memory": "1g"}  # requests small enough for a driver and 2 executors on 2 CPUs
CASES: dict[str, dict[str, Any]] = {
    "Local": {"launcher": "Local"},
    "Job, 0 executors": {"launcher": "Job", "driver": SMALL, "executor": {"instances": 0}},
    "Job, 2 executors": {"launcher": "Job", "driver": SMALL, "executor": {"instances": 2, **SMALL}},
    "SparkApplication, 2 executors": {"launcher": "SparkApplication", "driver": SMALL,
                                      "executor": {"instances": 2, **SMALL}},
}  # fmt: skip
IN_PROCESS = "Job, 0 executors, in-process"
MILESTONES = ("running", "pod", "program", "ended")


def case_id(case: str) -> str:
    """A case's name on the command line: local, job0, job2, sparkapplication."""
    return {"Local": "local", "Job, 0 executors": "job0", "Job, 2 executors": "job2"}.get(case, "sparkapplication")


# ---------------------------------------------------------------------- watching the runs


class Watch(threading.Thread):
    """A watch of ``path`` (a collection), re-opened where it left off when the server ends
    it; each object seen goes to ``seen`` with the monotonic time it arrived."""

    def __init__(self, cluster: KubeCluster, path: str, seen: Callable[[dict[str, Any], float], None]) -> None:
        super().__init__(daemon=True)  # a blocked read cannot be interrupted: it ends with the process
        self.cluster, self.path, self.seen = cluster, path, seen
        self.stopped = False

    def run(self) -> None:
        version = None
        while not self.stopped:
            try:
                if version is None:
                    listing = self.cluster.request("GET", self.path)
                    for item in listing["items"]:
                        self.seen(item, time.monotonic())
                    version = listing["metadata"]["resourceVersion"]
                url = f"{self.cluster.url}{self.path}?watch=1&resourceVersion={version}&timeoutSeconds=600"
                with urllib.request.urlopen(url, context=self.cluster.ssl_context(), timeout=700) as stream:
                    for line in stream:
                        event = json.loads(line)
                        if event["type"] == "ERROR":  # e.g. 410 Gone: list again
                            version = None
                            break
                        version = event["object"]["metadata"]["resourceVersion"]
                        if event["type"] != "DELETED":
                            self.seen(event["object"], time.monotonic())
            except (OSError, urllib.error.URLError, RuntimeError, ValueError):
                if not self.stopped:
                    time.sleep(0.2)


@dataclass
class Run:
    """One DuckLakeJob as the bench saw it: when (monotonic) it was created and reached each milestone."""

    name: str
    created: float
    at: dict[str, float] = field(default_factory=dict)  # milestone or progress phase -> first seen
    executors: set[str] = field(default_factory=set)  # executor pods seen running
    status: dict[str, Any] = field(default_factory=dict)
    failure: str = ""  # why the bench does not count it

    def after(self, milestone: str) -> float | None:
        return self.at[milestone] - self.created if milestone in self.at else None

    def mark(self, milestone: str, now: float) -> None:
        self.at.setdefault(milestone, now)


class Runs:
    """The namespace's DuckLakeJobs and pods, followed on two watches."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.runs: dict[str, Run] = {}
        self.changed = threading.Condition()
        ns = f"namespaces/{kube.namespace}"
        self.watches = [Watch(kube.cluster, f"{API}/{ns}/ducklakejobs", self._job),
                        Watch(kube.cluster, f"/api/v1/{ns}/pods", self._pod)]  # fmt: skip
        for w in self.watches:
            w.start()

    def stop(self) -> None:
        for w in self.watches:
            w.stopped = True

    def _job(self, obj: dict[str, Any], now: float) -> None:
        with self.changed:
            run = self.runs.get(obj["metadata"]["name"])
            if run is None:
                return
            status = obj.get("status") or {}
            if status.get("state") in ("Running", *ENDED):
                run.mark("running", now)
            phase = str(status.get("progress") or "").split(" ")[0]
            if phase in ("planning", "reading", "writing", "committing"):
                run.mark(phase, now)
                run.mark("program", now)
            if status.get("state") in ENDED:
                run.mark("ended", now)
                run.status = status
            self.changed.notify_all()

    def _pod(self, pod: dict[str, Any], now: float) -> None:
        with self.changed:
            run = self.runs.get(pod["metadata"].get("labels", {}).get(JOB_LABEL, ""))
            started = any("running" in (c.get("state") or {}) or "terminated" in (c.get("state") or {})
                          for c in pod.get("status", {}).get("containerStatuses") or [])  # fmt: skip
            if run is None or not started:
                return
            name = pod["metadata"]["name"]
            if "-exec-" in name:
                run.executors.add(name)
                if len(run.executors) == 2:
                    run.mark("executors", now)
            else:
                run.mark("pod", now)

    def create(self, doc: dict[str, Any]) -> Run:
        name = doc["metadata"]["name"]
        with self.changed:
            run = self.runs[name] = Run(name, time.monotonic())
        self.kube.cluster.request("POST", f"{API}/namespaces/{self.kube.namespace}/ducklakejobs", doc)
        return run

    def wait(self, runs: list[Run], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self.changed:
            while not all("ended" in r.at for r in runs):
                left = deadline - time.monotonic()
                if left <= 0:
                    for r in runs:
                        if "ended" not in r.at:
                            r.failure = f"not ended after {timeout:.0f} s"
                    return
                self.changed.wait(min(left, 1.0))


# ---------------------------------------------------------------------- tables


@dataclass
class Table:
    name: str  # in schema main
    files: int
    rows: int
    sum_id: int
    mb: float  # the size of its files
    written_in: float  # seconds DuckDB took to write it


def one_row(con: Any, sql: str) -> tuple[Any, ...]:
    row = con.execute(sql).fetchone()
    assert row is not None, sql
    return tuple(row)


def make_table(pods: PodEnv, location: CatalogLocation, name: str, files: int, rows_per_file: int, wide: bool) -> Table:
    """``files`` inserts by DuckDB, each one file of ``rows_per_file`` rows; ``wide``: the big
    table's columns (an md5 text makes its bytes), else (id, amount) as the tests' tables."""
    con = pods.duckdb(location)
    try:
        started = time.monotonic()
        if wide:
            con.execute(f"CREATE TABLE lk.{name} (id BIGINT, customer INTEGER, amount DOUBLE, ts TIMESTAMP, "
                        "note VARCHAR)")  # fmt: skip
            select = ("i, (i * 7919) % 100003, (hash(i) % 1000000) / 100.0, "
                      "TIMESTAMP '2026-01-01' + to_seconds(i % 31536000), md5(i::VARCHAR)")  # fmt: skip
        else:
            con.execute(f"CREATE TABLE lk.{name} (id BIGINT, amount INTEGER)")
            select = "i, i % 1000"
        for k in range(files):
            con.execute(f"INSERT INTO lk.{name} SELECT {select} FROM range({k * rows_per_file}, "
                        f"{(k + 1) * rows_per_file}) t(i)")  # fmt: skip
        written_in = time.monotonic() - started
        count, size = one_row(
            con, f"SELECT count(*), sum(data_file_size_bytes) FROM ducklake_list_files('lk', '{name}')"
        )
        rows, sum_id = one_row(con, f"SELECT count(*), sum(id) FROM lk.{name}")
    finally:
        con.close()
    if count != files:
        raise SystemExit(f"{name}: DuckDB wrote {count} files, not {files}")
    return Table(name, files, rows, int(sum_id), size / MB, written_in)


def read_back(pods: PodEnv, location: CatalogLocation, table: Table) -> tuple[int, int, int]:
    """Rows, sum of ids and files of ``table`` as DuckDB reads them now."""
    con = pods.duckdb(location)
    try:
        rows, sum_id = one_row(con, f"SELECT count(*), sum(id) FROM lk.{table.name}")
        (files,) = one_row(con, f"SELECT count(*) FROM ducklake_list_files('lk', '{table.name}')")
        return int(rows), int(sum_id or 0), int(files)
    finally:
        con.close()


def check(pods: PodEnv, location: CatalogLocation, table: Table, run: Run, ran_on: str) -> None:
    """Why ``run`` is not a good compaction of all of ``table``, in ``run.failure`` (empty: it is)."""
    status = run.status
    if run.failure:
        return
    if status.get("state") != "Succeeded":
        run.failure = f"{status.get('state')}: {status.get('message')}"
    elif status.get("filesRead") != table.files:
        run.failure = f"read {status.get('filesRead')} of {table.files} files"
    elif status.get("ranOn") != ran_on:
        run.failure = f"ran {status.get('ranOn')}, not {ran_on}"
    else:
        rows, sum_id, files = read_back(pods, location, table)
        if (rows, sum_id) != (table.rows, table.sum_id) or files >= table.files:
            run.failure = (f"DuckDB reads {rows} rows (sum of ids {sum_id}) in {files} files afterwards; "
                           f"before: {table.rows} rows (sum {table.sum_id}) in {table.files} files")  # fmt: skip


# ---------------------------------------------------------------------- memory


class MemorySampler(threading.Thread):
    """The working set of one pod two ways: as the kubelet's summary API says it
    (``memory.workingSetBytes``: what ``kubectl top`` shows and evictions go by), asked every
    second, though the kubelet refreshes it only every 10-15 s (cAdvisor's housekeeping: each
    of its samples, by its time, counts once); and by cAdvisor's formula (the cgroup's
    ``memory.usage_in_bytes`` less its ``total_inactive_file``) read from the pod's cgroup every
    0.25 s, which sees the peaks between the kubelet's samples."""

    def __init__(self, cluster: KubeCluster, namespace: str, name: str, cgroup: str) -> None:
        super().__init__(daemon=True)
        self.cluster, self.namespace, self.name, self.cgroup = cluster, namespace, name, cgroup
        self.kubelet: dict[float, int] = {}  # the kubelet's sample time (epoch) -> bytes
        self.cgroup_samples: list[tuple[float, int]] = []
        self.done = threading.Event()

    def run(self) -> None:
        ticks = 0
        while not self.done.is_set():
            self.cgroup_samples.append((time.time(), working_set(self.cgroup)))
            if ticks % 4 == 0:
                summary = self.cluster.request("GET", f"/api/v1/nodes/{NODE_NAME}/proxy/stats/summary") or {}
                for pod in summary.get("pods") or []:
                    ref, memory = pod["podRef"], pod.get("memory") or {}
                    if (ref["namespace"], ref["name"]) == (self.namespace, self.name) and memory:
                        when = datetime.strptime(memory["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
                        self.kubelet[when.timestamp()] = memory["workingSetBytes"]
            ticks += 1
            self.done.wait(0.25)

    def between(self, start: float, end: float = float("inf")) -> tuple[list[int], list[int]]:
        """The kubelet's samples and the cgroup's taken from ``start`` to ``end`` (epoch seconds)."""
        return ([v for t, v in sorted(self.kubelet.items()) if start <= t <= end],
                [v for t, v in self.cgroup_samples if start <= t <= end])  # fmt: skip


def working_set(cgroup: str) -> int:
    """cAdvisor's working set of a cgroup v1 memory cgroup: usage less the inactive file pages."""
    with open(os.path.join(cgroup, "memory.usage_in_bytes")) as fh:
        usage = int(fh.read())
    with open(os.path.join(cgroup, "memory.stat")) as fh:
        stat = dict(line.split() for line in fh)
    return max(usage - int(stat.get("total_inactive_file", 0)), 0)


def pod_cgroup(pods: PodEnv, uid: str) -> str:
    """The pod's memory cgroup (cgroup v1) on the test node."""
    root = os.path.join("/sys/fs/cgroup/memory", pods.node.cgroup.strip("/"))
    for path, _, _ in os.walk(root):
        if os.path.basename(path) == f"pod{uid}":
            return path
    raise SystemExit(f"no cgroup of pod {uid} under {root}")


# ---------------------------------------------------------------------- the bench


@dataclass
class Bench:
    pods: PodEnv
    kube: Kube
    location: CatalogLocation
    watch: Runs
    args: argparse.Namespace
    results: dict[tuple[str, str], list[Run]] = field(default_factory=dict)
    tables: dict[tuple[str, str], list[Table]] = field(default_factory=dict)
    count: int = 0

    def small_table(self) -> Table:
        self.count += 1
        return make_table(self.pods, self.location, f"small_{self.count}", self.args.small_files, 100, wide=False)

    def big_table(self, rows_per_file: int, files: int | None = None) -> Table:
        self.count += 1
        return make_table(self.pods, self.location, f"big_{self.count}", files or self.args.files, rows_per_file,
                          wide=True)  # fmt: skip

    def compact(self, case: str, size: str, table: Table, spark: dict[str, Any], ran_on: str) -> Run:
        self.count += 1
        name = f"c{self.count}-{case.split(',')[0].lower()}"
        params: dict[str, Any] = {"minInputFiles": 2}
        if size == "big":  # every file merged, in groups of about 128 MB: several tasks for the executors
            params["targetFileSize"] = "128MB"
        doc = job(name, table_name=f"main.{table.name}", spark=spark, params=params, timeout="1h")
        run = self.watch.create(doc)
        self.watch.wait([run], timeout=3600)
        check(self.pods, self.location, table, run, ran_on)
        if run.failure and run.status:
            run.failure += "\n" + explain(self.kube, name, run.status)[:4000]
        self.results.setdefault((case, size), []).append(run)
        self.tables.setdefault((case, size), []).append(table)
        state = "ok" if not run.failure else f"NOT COUNTED: {run.failure}"
        seconds = own_seconds(run)
        print(f"  {case:<32} {size:<5} {table.mb:8.1f} MB  " + "  ".join(
            f"{m} {run.after(m):6.1f}" for m in (*MILESTONES, "writing", "executors") if run.after(m) is not None)
              + f"  job's own {seconds} s  [{state}]", flush=True)  # fmt: skip
        return run

    def timings(self, cases: list[str]) -> None:
        for case in cases:
            if case.startswith("SparkApplication"):
                self.pods.install_spark_operator()
            for _ in range(self.args.runs):
                self.compact(case, "small", self.small_table(), CASES[case], "spark")

    def big(self, cases: list[str], rows_per_file: int) -> None:
        big_spark = {
            case: {**spark, "driver": BIG, **({"executor": {**spark["executor"], **BIG}}
                                             if spark.get("executor", {}).get("instances") else {})}
            for case, spark in CASES.items()
        }  # fmt: skip
        for case in cases:
            if case.startswith("SparkApplication"):
                self.pods.install_spark_operator()
            for _ in range(self.args.big_runs):
                table = self.big_table(rows_per_file)
                print(f"  (a fresh {table.mb:.0f} MB table in {table.files} files, {table.rows:,} rows: written by "
                      f"DuckDB in {table.written_in:.0f} s)", flush=True)  # fmt: skip
                self.compact(case, "big", table, big_spark[case], "spark")
        if self.args.in_process:
            spark = {**big_spark["Job, 0 executors"], "inProcessBelow": "100GB"}
            for _ in range(self.args.big_runs):
                self.compact(IN_PROCESS, "big", self.big_table(rows_per_file), spark, "in-process")

    def memory(self) -> dict[str, Any]:
        """The operator pod at rest, while ``--memory-runs`` small compactions run through the
        Local launcher in-process (all created at once), and at rest again."""
        pod = self.pods.operator_pods()[0]
        cgroup = pod_cgroup(self.pods, pod["metadata"]["uid"])
        sampler = MemorySampler(self.kube.cluster, RELEASE_NS, pod["metadata"]["name"], cgroup)
        sampler.start()
        rest_from = time.time()
        time.sleep(self.args.rest_seconds)
        tables = [self.small_table() for _ in range(self.args.memory_runs)]
        if self.args.memory_at_once:  # the catalog's limit of runs at once, from a policy that schedules nothing
            limit = {"suspend": True, "concurrency": {"maxJobsPerCatalog": self.args.memory_at_once}}
            self.kube.apply(manifest("DuckLakeMaintenancePolicy", "limit", {"catalogRef": {"name": "lake"}, **limit}))
            time.sleep(2)  # the operator's index of the catalog's policies has it
        with open(os.path.join(cgroup, "memory.max_usage_in_bytes"), "w") as fh:
            fh.write("0")  # the kernel's peak, from now (the pod's cgroup, under the test node's own)
        runs_from = time.time()
        runs = []
        for t in tables:
            self.count += 1
            doc = job(f"m{self.count}", table_name=f"main.{t.name}", spark={"launcher": "Local",
                      "inProcessBelow": "1GB"}, params={"minInputFiles": 2})  # fmt: skip
            runs.append(self.watch.create(doc))
        self.watch.wait(runs, timeout=1800)
        runs_to = time.time()
        with open(os.path.join(cgroup, "memory.max_usage_in_bytes")) as fh:
            kernel_peak = int(fh.read())
        if self.args.memory_at_once:
            self.kube.delete("ducklakemaintenancepolicy", "limit", wait=True)
        time.sleep(self.args.rest_seconds)
        sampler.done.set()
        sampler.join()
        for run, t in zip(runs, tables, strict=True):
            check(self.pods, self.location, t, run, "in-process")
        restarts = sum(c.get("restartCount", 0) for c in self.pods.operator_pods()[0]["status"]["containerStatuses"])
        ended = [r.at["ended"] for r in runs if "ended" in r.at]
        return {
            "rest": sampler.between(rest_from, runs_from), "during": sampler.between(runs_from, runs_to),
            "after": sampler.between(runs_to), "kernel_peak": kernel_peak, "runs": len(runs),
            "failed": [f"{r.name}: {r.failure}" for r in runs if r.failure], "restarts": restarts,
            "elapsed": max(ended) - min(r.created for r in runs) if ended else float("nan"),
            "at_once": f"at most {self.args.memory_at_once} at once (maxJobsPerCatalog)" if self.args.memory_at_once
            else "no limit of runs at once",
        }  # fmt: skip


# ---------------------------------------------------------------------- report


def own_seconds(run: Run) -> float | None:
    """The job program's own time, from its plan to its commit (its report's ``seconds``)."""
    return ((run.status.get("jobReport") or {}).get("report") or {}).get("seconds")


def spread(values: list[float]) -> str:
    if not values:
        return "–"
    if len(values) == 1:
        return f"{values[0]:.1f}"
    return f"{statistics.median(values):.1f} ({min(values):.1f}–{max(values):.1f})"


def timing_table(bench: Bench) -> list[str]:
    lines = ["| launcher | table | runs | → Running | → driver pod running | → job program started | → Succeeded |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for (case, size), runs in bench.results.items():
        good = [r for r in runs if not r.failure]
        mb = statistics.median(t.mb for t in bench.tables[(case, size)])
        counted = f"{len(good)}" + (f" ({len(runs) - len(good)} failed)" if len(good) < len(runs) else "")
        cells = [spread([v for r in good if (v := r.after(m)) is not None]) for m in MILESTONES]
        what = f"{bench.tables[(case, size)][0].files} files, {mb:.1f} MB" if size == "big" else \
            f"{bench.args.small_files} files of 100 rows"  # fmt: skip
        lines.append(f"| {case} | {what} | {counted} | " + " | ".join(cells) + " |")
    return lines


def throughput_table(bench: Bench) -> list[str]:
    lines = ["| compaction of the big table | runs | MB read | end to end (creation → Succeeded) | the job's own "
             "time (its plan → its commit) | once the file groups can run → Succeeded |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for case, start in (("Job, 2 executors", "executors"), (IN_PROCESS, "writing")):
        runs = [r for r in bench.results.get((case, "big"), []) if not r.failure]
        if not runs:
            continue
        mb = {r.name: r.status["bytesRead"] / MB for r in runs}
        whole = [mb[r.name] / (r.at["ended"] - r.created) for r in runs]
        own = [mb[r.name] / s for r in runs if (s := own_seconds(r))]
        work = [mb[r.name] / (r.at["ended"] - r.at[start]) for r in runs if start in r.at]
        lines.append(f"| {case} | {len(runs)} | {statistics.median(mb.values()):.0f} | {spread(whole)} MB/s | "
                     f"{spread(own)} MB/s | {spread(work)} MB/s |")  # fmt: skip
    return lines


def memory_lines(memory: dict[str, Any]) -> list[str]:
    def mib(values: list[int], how: Callable[[list[int]], float]) -> str:
        return f"{how(values) / 2**20:.0f} MiB" if values else "–"

    def both(samples: tuple[list[int], list[int]], how: Callable[[list[int]], float]) -> str:
        kubelet, cgroup = samples
        return f"{mib(kubelet, how)} / {mib(cgroup, how)}"

    return [
        f"{memory['runs']} small compactions, Local launcher in-process (job programs in the operator's pod), created "
        f"at once, {memory['at_once']}: all ended {memory['elapsed']:.0f} s after the first was created; "
        f"{len(memory['failed'])} failed{': ' + '; '.join(memory['failed']) if memory['failed'] else ''}; "
        f"operator container restarts: {memory['restarts']}",
        "",
        "| operator pod's working set (the kubelet's summary API / the pod's cgroup) | at rest, before | "
        "peak during the runs | at rest, after | the kernel's peak (`memory.max_usage_in_bytes`, page cache included) |",
        "|---|---|---|---|---|",
        f"| medians at rest, peak during | {both(memory['rest'], statistics.median)} | "
        f"{both(memory['during'], max)} ({len(memory['during'][0])} / {len(memory['during'][1])} samples) | "
        f"{both(memory['after'], statistics.median)} | {memory['kernel_peak'] / 2**20:.0f} MiB |",
    ]


def machine(pods: PodEnv) -> str:
    node = pods.cluster.request("GET", f"/api/v1/nodes/{NODE_NAME}")
    allocatable = node["status"]["allocatable"]
    load = os.getloadavg()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    commit = subprocess.run(["git", "-C", root, "describe", "--always", "--dirty"], capture_output=True, text=True)
    return (f"commit {commit.stdout.strip() or '?'}; "
            f"{os.cpu_count()} cores ({allocatable['cpu']} allocatable on the node, which shares them with the "
            f"control plane, containerd, PostgreSQL and moto), {os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30:.0f} GiB; "  # noqa: E501
            f"kubelet {node['status']['nodeInfo']['kubeletVersion']}; load average at the end "
            f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--table-mb", type=float, default=1024, help="the big table's size (MB of Parquet)")
    parser.add_argument("--files", type=int, default=100, help="the big table's files")
    parser.add_argument("--small-files", type=int, default=12, help="the small table's files (100 rows each)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each launcher on the small table")
    parser.add_argument("--big-runs", type=int, default=3, help="runs of each launcher on the big table")
    parser.add_argument("--memory-runs", type=int, default=20, help="runs while the operator's memory is sampled")
    parser.add_argument("--memory-at-once", type=int, default=4,
                        help="of those, at most this many at once (maxJobsPerCatalog); 0: all at once")  # fmt: skip
    parser.add_argument("--rest-seconds", type=float, default=30, help="sampling of the operator at rest")
    parser.add_argument("--cases", default=",".join(map(case_id, CASES)),
                        help="launchers, comma-separated: " + ", ".join(map(case_id, CASES)))  # fmt: skip
    parser.add_argument("--no-in-process", dest="in_process", action="store_false",
                        help="skip the in-process compaction of the big table")  # fmt: skip
    parser.add_argument("--skip", default="", help="parts to skip, comma-separated: memory, small, big")
    args = parser.parse_args()
    wanted = {x.strip().lower() for x in args.cases.split(",")}
    cases = [c for c in CASES if case_id(c) in wanted]
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    started = time.monotonic()
    with PodEnv.running() as pods:
        ready_in = time.monotonic() - started
        print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Environment ready in {ready_in:.0f} s (cluster, node, "
              f"images, PostgreSQL, S3, helm install, operator pod Ready); operator image "
              f"{image_size(pods.image) / 2**30:.2f} GiB", flush=True)  # fmt: skip
        kube = pods.namespace()
        location = pods.lake(kube, options={"dataInliningRowLimit": 0})
        watch = Runs(kube)
        bench = Bench(pods, kube, location, watch, args)
        memory = None
        try:
            if "memory" not in skip:
                print(f"operator pod memory: {args.rest_seconds:.0f} s at rest, {args.memory_runs} runs, at rest",
                      flush=True)  # fmt: skip
                memory = bench.memory()
            if "small" not in skip:
                print("small table:", flush=True)
                bench.timings(cases)
            if "big" not in skip:
                probe = bench.big_table(100_000, files=2)  # how many rows make a file of the size wanted
                rows_per_file = int(100_000 * args.table_mb / args.files / (probe.mb / probe.files))
                print(f"big table: {rows_per_file:,} rows per file", flush=True)
                bench.big(cases, rows_per_file)
        finally:
            watch.stop()
        print()
        print(machine(pods))
        print()
        print("\n".join(timing_table(bench)))
        print()
        print("\n".join(throughput_table(bench)))
        if memory is not None:
            print()
            print("\n".join(memory_lines(memory)))
        failed = [r for runs in bench.results.values() for r in runs if r.failure]
        for r in failed:
            print(f"\nNOT COUNTED {r.name}: {r.failure}")


if __name__ == "__main__":
    main()
