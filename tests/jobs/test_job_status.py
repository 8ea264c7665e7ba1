"""The job program's two status fields on its DuckLakeJob: ``status.progress`` merge-patched
at most once per interval (the latest text held back goes out when the interval has passed),
``status.jobReport`` at the end; on a real API server, next to fields the controller owns."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import yaml

from ducklake_jobs.job_status import JobStatus, without_nulls
from support.job_lakes import Lake
from support.job_program import run_document, run_program
from support.kube_cluster import KubeCluster

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class FakeTimer:
    def __init__(self, delay: float, fn: Callable[[], None]) -> None:
        self.delay, self.fn, self.cancelled = delay, fn, False

    def cancel(self) -> None:
        self.cancelled = True


def test_patches_sent_from_another_thread_keep_their_order_and_the_result_waits() -> None:
    """Progress is sent without waiting, in order; the result returns once everything is sent
    (the program ends right after it)."""
    sent: list[dict[str, Any]] = []
    gate = threading.Event()

    def patch(body: dict[str, Any]) -> None:
        gate.wait(5)  # the client is still being made: nothing goes yet
        sent.append(body)

    sending = ThreadPoolExecutor(1)
    status = JobStatus(patch, min_interval=0, sender=sending.submit)
    status.progress("planning")
    status.progress("writing 0/1 file groups")
    assert sent == []  # the caller did not wait
    threading.Timer(0.2, gate.set).start()
    status.result({"state": "Succeeded"})
    assert sent == [
        {"status": {"progress": "planning"}},
        {"status": {"progress": "writing 0/1 file groups"}},
        {"status": {"jobReport": {"state": "Succeeded"}}},
    ]
    sending.shutdown()


def test_progress_is_patched_at_most_once_per_interval() -> None:
    now = [0.0]
    sent: list[dict[str, Any]] = []
    timers: list[FakeTimer] = []

    def later(delay: float, fn: Callable[[], None]) -> FakeTimer:
        timers.append(FakeTimer(delay, fn))
        return timers[-1]

    status = JobStatus(sent.append, clock=lambda: now[0], min_interval=0.5, later=later)
    status.progress("planning")
    now[0] = 0.1
    status.progress("writing 0/3 file groups")
    now[0] = 0.2
    status.progress("writing 1/3 file groups")  # replaces the one held back; one timer
    assert [t.delay for t in timers] == [pytest.approx(0.4)]
    now[0] = 0.5
    timers[0].fn()
    now[0] = 0.6
    status.progress("writing 2/3 file groups")
    status.result({"state": "Succeeded"})
    timers[1].fn()  # had it fired despite its cancel
    status.progress("committing")  # nothing after the result
    assert timers[1].cancelled
    assert sent == [
        {"status": {"progress": "planning"}},
        {"status": {"progress": "writing 1/3 file groups"}},
        {"status": {"jobReport": {"state": "Succeeded"}}},
    ]


def test_a_failing_api_is_logged_once_and_never_fails_the_run(caplog) -> None:
    def refuse(_: dict[str, Any]) -> None:
        raise ConnectionRefusedError("no API server")

    status = JobStatus(refuse, min_interval=0)
    with caplog.at_level(logging.WARNING):
        for text in ("planning", "writing 0/1 file groups", "committing"):
            status.progress(text)
        status.result({"state": "Succeeded"})
    assert [r.getMessage() for r in caplog.records] == [
        "could not patch the DuckLakeJob's status: ConnectionRefusedError: no API server"
    ]


@pytest.fixture(scope="module")
def cluster() -> Iterator[KubeCluster]:
    server = KubeCluster.start()
    try:
        server.install_crds([os.path.join(ROOT, "crds", "ducklake.dev_ducklakejobs.yaml")])
        server.kubectl("create", "namespace", "data")
        server.wait_for_namespace("data")
        yield server
    finally:
        server.stop()


def test_progress_and_report_on_the_api_server(cluster: KubeCluster, sqlite_lake: Lake, tmp_path) -> None:
    job = {
        "apiVersion": "ducklake.dev/v1alpha1",
        "kind": "DuckLakeJob",
        "metadata": {"name": "compact-t", "namespace": "data"},
        "spec": {"catalogRef": {"name": "lake"}, "table": "main.t", "operation": "compact"},
    }
    created = json.loads(cluster.kubectl("create", "-o", "json", "-f", "-", input=yaml.safe_dump(job)))
    controller_fields = {"state": "Running", "message": "launched"}
    cluster.kubectl(
        "-n", "data", "patch", "ducklakejob", "compact-t", "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": controller_fields}),
    )  # fmt: skip
    doc = run_document(
        sqlite_lake.manifest(),
        "compact",
        "main.t",
        uid=created["metadata"]["uid"],
        name="compact-t",
        in_process_below="1GB",
        master="no-such-master",
    )
    run = run_program(doc, str(tmp_path), DUCKLAKE_REPORT_TO_API="1", KUBECONFIG=cluster.kubeconfig)
    assert run.exit_code == 0, run.stderr
    status = json.loads(cluster.kubectl("-n", "data", "get", "ducklakejob", "compact-t", "-o", "json"))["status"]
    result = without_nulls({k: v for k, v in run.result.items() if k != "event"})
    assert status["jobReport"] == result and result["report"]["filesWritten"] == 3  # read back whole: nothing pruned
    said = {
        phase if phase != "writing" else f"writing {done}/{total} file groups" for phase, done, total in run.progress
    }
    assert status["progress"] in said
    assert {k: status[k] for k in controller_fields} == controller_fields  # merge patches: the controller's stay
    assert "WARNING" not in run.stderr
