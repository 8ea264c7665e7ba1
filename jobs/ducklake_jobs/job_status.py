"""The two status fields of a DuckLakeJob the job program owns (every other one is the
controller's): ``status.progress``, a short text merge-patched while the run runs (at most
one patch per ``min_interval``), and ``status.jobReport``, the final result.

Only with ``DUCKLAKE_REPORT_TO_API=1`` and Kubernetes credentials (in-cluster, or
KUBECONFIG); without the kubernetes client (the ``controller`` extra) the program says so
in one log line and reports on stdout only. A failed patch is logged, never fatal: the
catalog, not the status, says whether the run landed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ducklake_operator.api.v1alpha1.names import GROUP, JOBS, VERSION
from ducklake_operator.model.job_marker import JobIdentity

log = logging.getLogger(__name__)

REPORT_TO_API = "DUCKLAKE_REPORT_TO_API"
MIN_INTERVAL_SECONDS = 0.5

Patch = Callable[[dict[str, Any]], None]  # merge-patches the DuckLakeJob's status with {"status": {...}}
Later = Callable[[float, Callable[[], None]], Any]  # runs a function after a delay; returns what .cancel()s it
Sender = Callable[[Callable[[], None]], "Future[None]"]  # runs a send elsewhere, in the order given


class JobStatus:
    def __init__(
        self,
        patch: Patch,
        clock: Callable[[], float] = time.monotonic,
        min_interval: float = MIN_INTERVAL_SECONDS,
        later: Later | None = None,
        sender: Sender | None = None,
    ) -> None:
        """``sender``: where the patches are sent (progress without waiting, the result waited
        for); None: in the caller's thread."""
        self._patch, self._clock, self._min_interval = patch, clock, min_interval
        self._later = later or _timer
        self._sender = sender
        self._lock = threading.Lock()
        self._last_sent: float | None = None
        self._pending: str | None = None  # held back by the interval, sent when it has passed
        self._scheduled: Any = None
        self._done = False
        self._failures: set[str] = set()

    def progress(self, text: str) -> None:
        """Patched at once, or, within ``min_interval`` of the last patch, once the interval
        has passed (only the latest text held back goes)."""
        with self._lock:
            if self._done:
                return
            now = self._clock()
            wait = 0.0 if self._last_sent is None else self._last_sent + self._min_interval - now
            if wait > 0:
                self._pending = text
                if self._scheduled is None:
                    self._scheduled = self._later(wait, self._send_pending)
                return
            self._last_sent, self._pending = now, None
        self._send_progress(text)

    def result(self, result: Mapping[str, Any]) -> None:
        """The final report; progress held back is dropped, and none is sent after it."""
        with self._lock:
            self._done, self._pending = True, None
            if self._scheduled is not None:
                self._scheduled.cancel()
        report = without_nulls(result)
        if self._sender is None:
            self._send({"jobReport": report})
        else:
            self._sender(lambda: self._send({"jobReport": report})).result()

    def _send_pending(self) -> None:
        with self._lock:
            text, self._pending, self._scheduled = self._pending, None, None
            if text is None or self._done:
                return
            self._last_sent = self._clock()
        self._send_progress(text)

    def _send_progress(self, text: str) -> None:
        if self._sender is None:
            self._send({"progress": text})
        else:
            self._sender(lambda: self._send({"progress": text}))

    def _send(self, fields: dict[str, Any]) -> None:
        try:
            self._patch({"status": fields})
        except Exception as exc:  # the API's trouble must not fail the run
            kind = type(exc).__name__
            if kind not in self._failures:  # once per kind of failure, not once per progress step
                self._failures.add(kind)
                log.warning("could not patch the DuckLakeJob's status: %s", _one_line(exc))


def without_nulls(value: Any) -> Any:
    """``value`` without its null fields, at any depth: in a merge patch a null deletes the field."""
    if isinstance(value, Mapping):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def _timer(delay: float, fn: Callable[[], None]) -> threading.Timer:
    timer = threading.Timer(delay, fn)
    timer.daemon = True
    timer.start()
    return timer


def api_job_status(job: JobIdentity, env: Mapping[str, str]) -> JobStatus | None:
    """The job's status on the API server, or None (not asked for, or not reachable)."""
    if env.get(REPORT_TO_API) != "1":
        return None
    # one thread makes the client (importing it takes a fraction of a second to a second), then
    # sends the patches in order, while the job starts and runs
    sending = ThreadPoolExecutor(1, thread_name_prefix="ducklake-status")
    made = sending.submit(kubernetes_client, f"{REPORT_TO_API}=1", "reporting on stdout only")

    def patch(body: dict[str, Any]) -> None:
        client = made.result()
        if client is not None:  # else kubernetes_client said why, once
            client.CustomObjectsApi().patch_namespaced_custom_object_status(
                GROUP, VERSION, job.namespace or "default", JOBS, job.name, body
            )

    return JobStatus(patch, sender=lambda send: sending.submit(send))


def kubernetes_client(asked: str, otherwise: str) -> Any | None:
    """The kubernetes client's ``client`` module, configured (in-cluster, else the
    kubeconfig); None when it is not installed or there are no credentials, said in one log
    line: what ``asked`` for it, and what happens ``otherwise``."""
    try:
        from kubernetes import client, config
    except ImportError:
        log.info(
            "%s, but the kubernetes client is not installed (pip install 'ducklake-operator[controller]'): %s",
            asked,
            otherwise,
        )
        return None
    try:
        config.load_incluster_config()
    except config.ConfigException:
        try:
            config.load_kube_config()
        except Exception as exc:  # no kubeconfig, or an unreadable one
            log.info("%s, but no Kubernetes credentials (%s): %s", asked, _one_line(exc), otherwise)
            return None
    return client


def _one_line(exc: BaseException) -> str:
    status = getattr(exc, "status", None)
    if isinstance(status, int):  # the client's ApiException: its text is the whole response
        return f"HTTP {status} {getattr(exc, 'reason', '')}".strip()
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
