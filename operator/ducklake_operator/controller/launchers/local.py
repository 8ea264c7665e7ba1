"""The ``Local`` launcher: the job program as a child process of the operator (Spark in
``local[*]``), the embedded default and the development one.

Each attempt gets a run document file and two logs (stdout: the program's JSON lines;
stderr) in a state directory, and runs in a process group of its own with its credentials
in its environment. Its scratch directory (its TMPDIR and working directory: DuckDB's spill,
staged files, Spark's local directories) and its Spark sockets' directory are removed once
nothing of the group runs, as a pod's emptyDir goes with the pod: a program killed mid-run
(cancelled, OOM-killed) left its spill in the operator's pod. What an attempt leaves in the
state directory goes a day after its program ended, as the Job and SparkApplication
launchers' objects do (``ttlSecondsAfterFinished``). After a run on Spark it keeps a warm
spare ready for the next one (``local_spare``).

``Launched.detail`` holds its pid, its start time (``/proc``) and its log, so a restarted
operator finds it again: a pid with the same start time is the same process; once it is
gone, its final JSON line says how it ended. A launch repeated for the same attempt (the
operator died before writing the run's status) finds the first one's record instead of
starting a second process.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...api.v1alpha1.job import RUNNING
from ...errors import LauncherBusy, LaunchFailed
from ...model.run_env import CATALOG_PASSWORD, CATALOG_USERNAME, REPORT_TO_API
from ...model.socket_paths import SOCKET_DIR_ENV, socket_parent
from ...model.spare_handoff import Handoff
from .local_spare import (
    CGROUP_ROOT,
    IDLE_SECONDS,
    SPARE_MEMORY,
    SPARE_PREFIX,
    WARM_SPARE_ENV,
    Spare,
    SpareKey,
    memory_room,
    spare_key,
    warm_spare_enabled,
)
from .observe import last_result, observe_finished_program
from .spec import LOCAL, TTL_AFTER_FINISHED, Launched, LaunchSpec, Observed

log = logging.getLogger(__name__)
STATE_DIR_ENV = "DUCKLAKE_STATE_DIR"
# the job programs run in the operator's own pod, each with Spark's JVM or an in-process DuckDB
# sized for a pod of its own: more at once than its memory limit allows get it OOM-killed (and
# every run with it), so only so many run at once; the others wait for one to end
MAX_RUNS_ENV, MAX_RUNS = "DUCKLAKE_LOCAL_MAX_RUNS", 2
# a place whose run never says it no longer runs (``release``: e.g. its DuckLakeJob deleted
# while no operator ran) is given back this long after its program exited
LINGER_SECONDS = 60.0
GRACE_SECONDS = 10.0  # between SIGTERM and SIGKILL on cancel
KILL_WAIT_SECONDS = 10.0  # SIGKILL is not refused, but a process in the kernel ends when it returns
SCRATCH = ".scratch"  # an attempt's TMPDIR: <state dir>/<attempt name>.scratch
WARMABLE_KEPT = 64  # launched attempts a spare may be started after (``release``), newest kept
SWEEP_INTERVAL = 600.0  # seconds between looks for what ended attempts left (``_sweep``)
# an attempt's files in the state directory (``_write``'s temporary ones too; its scratch
# directory goes with ``_remove_scratch``); an attempt's name has no dot
_ATTEMPT_FILE = re.compile(r"^([a-z][a-z0-9-]*)\.(?:launch\.json|run\.json|out\.log|err\.log)(?:\.tmp)?$")
# catalog credentials come from the catalog's Secret only, never from the operator's own env
NOT_INHERITED = (CATALOG_USERNAME, CATALOG_PASSWORD)
SecretValue = Callable[[str, str, str], str]  # (namespace, Secret, key) -> value


class LocalLauncher:
    kind = LOCAL

    def __init__(
        self,
        secret_value: SecretValue,
        *,
        state_dir: str | None = None,
        program: Sequence[str] | None = None,
        grace_seconds: float = GRACE_SECONDS,
        env: Mapping[str, str] | None = None,
        on_exit: Callable[[str], None] | None = None,
        max_runs: int | None = None,
        linger_seconds: float = LINGER_SECONDS,
        keep_seconds: float = TTL_AFTER_FINISHED,
        warm_spare: bool | None = None,
        cgroup_root: str = CGROUP_ROOT,
    ) -> None:
        """``on_exit(uid)``: called (from a thread) when the program of the DuckLakeJob with
        that uid exits, so its run looks at once instead of at its next poll.
        ``keep_seconds``: how long an ended attempt's files (run document, logs) stay.
        ``warm_spare``: keep a spare after a run on Spark (else ``DUCKLAKE_LOCAL_WARM_SPARE``, on),
        where the memory cgroup at ``cgroup_root`` (the pod's) leaves room for it."""
        self._secret_value = secret_value
        self._on_exit = on_exit
        self._env = dict(os.environ if env is None else env)
        self._dir = state_dir or self._env.get(STATE_DIR_ENV) or os.path.join(tempfile.gettempdir(), "ducklake-runs")
        self._program = tuple(program or (sys.executable, "-m", "ducklake_jobs"))
        self._grace = grace_seconds
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._places: dict[str, _Place] = {}  # attempt name -> its program's place
        self._max_runs = max_runs or int(self._env.get(MAX_RUNS_ENV) or MAX_RUNS)
        self._linger = linger_seconds
        self._keep = keep_seconds
        self._swept_at: float | None = None
        self._warm = warm_spare_enabled(self._env.get(WARM_SPARE_ENV)) if warm_spare is None else warm_spare
        self._spare: Spare | None = None
        # attempt name -> its spec and key, when a spare could run its like
        self._warmable: dict[str, tuple[LaunchSpec, SpareKey]] = {}
        self._cgroup_root = cgroup_root
        self._lock = threading.Lock()

    def available(self) -> str | None:
        return None

    def launch(self, spec: LaunchSpec) -> Launched:
        os.makedirs(self._dir, mode=0o700, exist_ok=True)
        record = os.path.join(self._dir, f"{spec.name}.launch.json")
        known = _read_json(record)
        if known is not None:  # launched before (by an operator that died before writing the run's status?)
            self._adopt(spec.name, known)
            return Launched(self.kind, spec.name, known)
        # a missing Secret or key is CredentialsInvalid: nothing started
        credentials, env = self._credentials(spec), self._environment(spec, self._scratch(spec.name))
        key = spare_key(spec) if self._warm else None
        run_file = os.path.join(self._dir, f"{spec.name}.run.json")
        _write(run_file, spec.run_document)
        out_path, err_path = (os.path.join(self._dir, f"{spec.name}.{s}.log") for s in ("out", "err"))
        # counted and started under one lock: two runs cannot both take the last place; and the
        # launch record written under it, so a sweep never sees a started program without one
        with self._lock:
            self._sweep_now_and_then()
            if self._held() >= self._max_runs:
                raise LauncherBusy(
                    f"a place among the Local launcher's programs (at most {self._max_runs} at once in the operator's "
                    f"pod: chart value jobs.local.maxRuns)"
                )
            handed = self._handed_off(key, run_file, credentials, out_path, err_path)
            proc, scratch = handed or self._fresh(spec.name, {**env, **credentials}, run_file, out_path, err_path)
            self._children[proc.pid] = proc
            stat = _stat(proc.pid)  # our unreaped child: there even if it has exited already
            self._places[spec.name] = _Place(proc.pid, stat.start if stat else None)
            detail = {"pid": proc.pid, "startTime": self._places[spec.name].start, "log": out_path,
                      "stderr": err_path, "runFile": run_file, "scratch": scratch,
                      **({"fromSpare": True} if handed else {})}  # fmt: skip
            _write(record, json.dumps(detail))
            if key is not None:
                self._warmable[spec.name] = (spec, key)
                while len(self._warmable) > WARMABLE_KEPT:  # the oldest, whose runs never released them
                    del self._warmable[next(iter(self._warmable))]
        if self._on_exit is not None:
            on_exit, uid = self._on_exit, spec.owner.uid
            threading.Thread(target=lambda: (proc.wait(), on_exit(uid)), name=f"wait-{proc.pid}", daemon=True).start()
        return Launched(self.kind, spec.name, detail)

    def _fresh(
        self, name: str, env: dict[str, str], run_file: str, out_path: str, err_path: str
    ) -> tuple[subprocess.Popen[bytes], str]:
        """A new program for the attempt, and its scratch directory (under the lock)."""
        scratch = self._scratch(name)
        os.makedirs(scratch, mode=0o700, exist_ok=True)
        try:
            return self._start(["run", "--run-file", run_file], env, scratch, out_path, err_path), scratch
        except LaunchFailed:
            self._remove_scratch(scratch)
            raise

    def _start(
        self,
        args: list[str],
        env: dict[str, str],
        scratch: str,
        out_path: str,
        err_path: str,
        *,
        stdin: int | None = None,
    ) -> subprocess.Popen[bytes]:
        """The program, in its scratch directory too (what a library writes into the
        working directory goes with the scratch)."""
        try:
            with open(out_path, "ab") as out, open(err_path, "ab") as err:
                proc = subprocess.Popen(
                    [*self._program, *args],
                    env=env,
                    stdin=subprocess.DEVNULL if stdin is None else stdin,
                    stdout=out,
                    stderr=err,
                    cwd=scratch,
                    start_new_session=True,  # its own process group: a cancel stops Spark's JVM too
                )
        except OSError as exc:
            raise LaunchFailed(f"could not start the job program {self._program[0]}: {exc.strerror or exc}") from None
        return proc

    def leftover(self, spec: LaunchSpec) -> Launched | None:
        """The attempt's program when a launch of it recorded one."""
        known = _read_json(os.path.join(self._dir, f"{spec.name}.launch.json"))
        return Launched(self.kind, spec.name, known) if known is not None else None

    def release(self, launched: Launched) -> None:
        """The run says the attempt no longer runs: its program's place is free. When its
        program used Spark, or was a spare (a run under ``inProcessBelow`` with a spare's
        settings is handed to it: where its work goes is known only once it has planned),
        and no other runs, a spare with its settings is started."""
        with self._lock:
            self._places.pop(launched.name, None)
            warmable = self._warmable.pop(launched.name, None)
            wanted = _ran_on_spark(launched.detail) or bool(launched.detail.get("fromSpare"))
            if warmable is not None and self._spare is None and self._held() == 0 and wanted:
                room = memory_room(self._cgroup_root)
                if room is None or room >= SPARE_MEMORY:
                    self._start_spare(*warmable)
                else:
                    log.info("no warm spare: %d MB left under the pod's memory limit", room // 2**20)

    def close(self) -> None:
        """Stop the spare, if there is one (the operator stops; a program it launched runs on)."""
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is not None:
            self._discard(spare)

    def _held(self) -> int:
        """Places held now (under the lock): a program's from its launch, or from when this
        operator process found it again, until its run releases it, or ``linger`` seconds
        after it exited when no release comes. Held past the exit because the run shows the
        attempt ``Running`` until it has asked the catalog and written its end: freed at
        the exit, another run would show ``Running`` first, one more than the places."""
        now = time.monotonic()
        for name, place in list(self._places.items()):
            if place.exited_at is None:
                child = self._children.get(place.pid)
                if not (child.poll() is None if child is not None else _same_process_running(place.pid, place.start)):
                    place.exited_at = now
            elif now - place.exited_at >= self._linger:
                del self._places[name]
        return len(self._places)

    def _adopt(self, name: str, detail: Mapping[str, Any]) -> None:
        """A program an earlier operator process started, found running: it holds a place."""
        pid, start = int(detail["pid"]), detail.get("startTime")
        if _same_process_running(pid, start):
            with self._lock:
                self._places.setdefault(name, _Place(pid, start))

    def observe(self, launched: Launched) -> Observed:
        pid, start = int(launched.detail["pid"]), launched.detail.get("startTime")
        with self._lock:
            child = self._children.get(pid)
        if child is not None:
            code = child.poll()
            if code is None:
                return Observed(RUNNING, f"the job program runs (pid {pid})")
            with self._lock:
                self._children.pop(pid, None)
            return self._finished(launched.detail, code)
        if _same_process_running(pid, start):  # an operator restarted since it launched this
            self._adopt(launched.name, launched.detail)
            return Observed(RUNNING, f"the job program runs (pid {pid})")
        return self._finished(launched.detail, None)

    def cancel(self, launched: Launched) -> None:
        """SIGTERM to its process group, SIGKILL after the grace period; nothing when it has
        ended or its pid now belongs to another process."""
        pid, start = int(launched.detail["pid"]), launched.detail.get("startTime")
        with self._lock:
            child = self._children.get(pid)
        if child is None and not _same_process_running(pid, start):
            return
        self._terminate_group(pid, child)
        if child is not None:
            with self._lock:
                self._children.pop(pid, None)

    def stopped(self, launched: Launched) -> bool:
        """No process of its group is left (the program and Spark's JVM it started); its
        scratch directory is gone then."""
        pid = int(launched.detail["pid"])
        with self._lock:
            child = self._children.get(pid)
        if self._group_alive(pid, child):
            return False
        self._remove_scratch(self._scratch_of(launched.name, launched.detail))
        return True

    # ------------------------------------------------------------------ pieces

    def _scratch(self, name: str) -> str:
        return os.path.join(self._dir, name + SCRATCH)

    def _scratch_of(self, name: str, detail: Mapping[str, Any]) -> str:
        """An attempt's scratch directory: its own, or that of the spare it was handed to."""
        return str(detail.get("scratch") or self._scratch(name))

    @staticmethod
    def _sockets(scratch: str) -> str:
        """The directory of a program's Spark sockets: outside its scratch directory, too
        long a path for a socket, and named from it, so that it is found again after a
        restart."""
        own = f"ducklake-sockets-{hashlib.sha256(scratch.encode()).hexdigest()[:16]}"
        return os.path.join(socket_parent(tempfile.gettempdir(), len(own)), own)

    def _remove_scratch(self, scratch: str) -> None:
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(self._sockets(scratch), ignore_errors=True)

    # ------------------------------------------------------------------ the warm spare

    def _start_spare(self, spec: LaunchSpec, key: SpareKey) -> None:
        """A spare with the settings of ``spec`` (under the lock; a spare that cannot start is
        no spare: the next run starts as it would have)."""
        name = SPARE_PREFIX + os.urandom(8).hex()
        scratch = self._scratch(name)
        record, out_path, err_path = (
            os.path.join(self._dir, f"{name}.{s}") for s in ("launch.json", "out.log", "err.log")
        )
        try:
            os.makedirs(scratch, mode=0o700, exist_ok=True)
            env = self._environment(spec, scratch)
            args = ["spare", "--spark", key.spark, "--idle-seconds", str(IDLE_SECONDS)]
            proc = self._start(args, env, scratch, out_path, err_path, stdin=subprocess.PIPE)
        except (OSError, LaunchFailed):
            self._remove_scratch(scratch)
            for path in (record, out_path, err_path):
                _remove(path)
            return
        stat = _stat(proc.pid)
        _write(record, json.dumps({"pid": proc.pid, "startTime": stat.start if stat else None}))
        self._spare = Spare(name, key, proc, scratch, record, out_path, err_path)

    def _handed_off(
        self, key: SpareKey | None, run_file: str, credentials: dict[str, str], out_path: str, err_path: str
    ) -> tuple[subprocess.Popen[bytes], str] | None:
        """The spare, running the attempt, and its scratch directory; None when there is no
        spare for it. One with other settings is stopped before the attempt's own program
        starts (its JVM gone: at most ``max_runs`` programs' memory in the pod)."""
        spare, self._spare = self._spare, None
        if spare is None:
            return None
        if key != spare.key or not spare.alive() or not spare.hand_off(Handoff(run_file, credentials)):
            self._discard(spare)
            return None
        os.replace(spare.out_path, out_path)  # its open files are the attempt's logs now
        os.replace(spare.err_path, err_path)
        for path in spare.files:
            _remove(path)
        return spare.proc, spare.scratch

    def _discard(self, spare: Spare) -> None:
        """Stop a spare (the end of its stdin, then its group ended as a cancel ends one) and
        remove what it had."""
        if spare.proc.stdin is not None:
            try:
                spare.proc.stdin.close()
            except OSError:
                pass
        self._terminate_group(spare.proc.pid, spare.proc)
        self._remove_scratch(spare.scratch)
        for path in spare.files:
            _remove(path)

    def _sweep_now_and_then(self) -> None:
        """``_sweep`` (under the lock) when the last one is ``SWEEP_INTERVAL`` old."""
        now = time.monotonic()
        if self._swept_at is None or now - self._swept_at >= SWEEP_INTERVAL:
            self._swept_at = now
            self._sweep()

    def _sweep(self) -> None:
        """What ended attempts left that no run removes: the scratch (and sockets) directory
        of an attempt none of whose processes runs (its run never looked again: deleted while
        no operator ran, or the operator's container restarted under it), and its files
        ``keep_seconds`` after they were last written (its program's end: its log). Under the
        lock, so no launch is half-way: an attempt is started with its record written."""
        live = _live_groups()
        entries: dict[str, list[str]] = {}
        for entry in os.listdir(self._dir):
            if (match := _ATTEMPT_FILE.match(entry)) is not None:  # nothing else the directory may hold
                entries.setdefault(match.group(1), []).append(entry)
        now = time.time()
        for name, owned in entries.items():
            record = _read_json(os.path.join(self._dir, f"{name}.launch.json"))
            if record is not None and int(record.get("pid") or 0) in live:
                continue  # its program (or a process it started) runs; a reused pid keeps it too
            self._remove_scratch(self._scratch_of(name, record or {}))
            self._remove_scratch(self._scratch(name))  # also when no record says which (a launch that failed)
            paths = [os.path.join(self._dir, e) for e in owned]
            if now - max(_mtime(p) for p in paths) >= self._keep:
                for path in paths:
                    _remove(path)

    def _environment(self, spec: LaunchSpec, scratch: str) -> dict[str, str]:
        """A program's environment for ``spec`` but the catalog's credentials (``_credentials``)."""
        env = {k: v for k, v in self._env.items() if k not in NOT_INHERITED}  # KUBECONFIG stays
        env["TMPDIR"] = scratch  # unless the settings' spark.env names another
        for var in spec.env:  # the settings' spark.env (no name the operator sets below)
            env[var.name] = var.value if var.secret is None else self._secret_value(
                spec.namespace, var.secret.name, var.secret.key)  # fmt: skip
        env[SOCKET_DIR_ENV] = self._sockets(scratch)  # the launcher's, which it removes
        env[REPORT_TO_API] = "1"
        return env

    def _credentials(self, spec: LaunchSpec) -> dict[str, str]:
        """The variables a run gets from its catalog's Secrets (a spare, only with its run)."""
        return {e.env: self._secret_value(spec.namespace, e.secret, e.key) for e in spec.env_from_secrets}

    def _finished(self, detail: Mapping[str, Any], exit_code: int | None) -> Observed:
        result = last_result(_lines(str(detail.get("log") or "")))
        errors = [line for line in _lines(str(detail.get("stderr") or "")) if line.strip()]
        return observe_finished_program(result, exit_code, errors[-1].strip()[:300] if errors else "")

    def _terminate_group(self, pgid: int, child: subprocess.Popen[bytes] | None) -> None:
        """SIGTERM to the process group, SIGKILL after the grace period; returns once none of
        it is left (or the kill's own wait is over)."""
        _signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + self._grace
        while self._group_alive(pgid, child) and time.monotonic() < deadline:
            time.sleep(0.05)
        if self._group_alive(pgid, child):
            _signal_group(pgid, signal.SIGKILL)
            deadline = time.monotonic() + KILL_WAIT_SECONDS
            while self._group_alive(pgid, child) and time.monotonic() < deadline:
                time.sleep(0.02)

    @staticmethod
    def _group_alive(pgid: int, child: subprocess.Popen[bytes] | None) -> bool:
        if child is not None:
            child.poll()  # reaps the leader once it has exited
        return pgid in _live_groups()


@dataclass
class _Place:
    """A program's place among the Local launcher's (``max_runs`` of them)."""

    pid: int
    start: Any  # its start time (/proc), so a pid taken by another process is not counted
    exited_at: float | None = None  # monotonic: when the launcher first saw it had exited


@dataclass(frozen=True)
class _Stat:
    state: str  # Z: exited, not yet reaped
    pgrp: int
    start: int


def _stat(pid: int) -> _Stat | None:
    """State, process group and start time (clock ticks after boot) from /proc/PID/stat."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            text = fh.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after the command name, which may hold anything
    return _Stat(fields[0], int(fields[2]), int(fields[19]))


def _same_process_running(pid: int, start: Any) -> bool:
    stat = _stat(pid)
    return stat is not None and stat.start == start and stat.state != "Z"


def _live_groups() -> set[int]:
    """The process groups that have a process that has not exited, in one look at /proc."""
    groups = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None and stat.state != "Z":
                groups.add(stat.pgrp)
    return groups


def _ran_on_spark(detail: Mapping[str, Any]) -> bool:
    """Whether the attempt's program ran its work as Spark tasks (its final JSON line says)."""
    result = last_result(_lines(str(detail.get("log") or "")))
    return result is not None and result.get("ranOn") == "spark"


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _write(path: str, text: str) -> None:
    """Atomically, readable by this user only."""
    tmp = f"{path}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def _mtime(path: str) -> float:
    try:
        return os.lstat(path).st_mtime
    except OSError:
        return 0.0


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def _read_json(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return dict(json.load(fh))
    except (OSError, ValueError):
        return None


def _lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read().splitlines()
    except OSError:
        return []
