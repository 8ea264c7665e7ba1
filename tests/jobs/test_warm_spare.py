"""The Local launcher's warm spare, with the real job program, Spark local[2] and a PostgreSQL
catalog whose credentials come from a Secret: after a run on Spark a spare waits with its
session started and no credential in its environment; the next run with the same settings is
handed to it (the same process, its start already paid: ``sparkStart`` 0), with the same rows
and a commit as a fresh program's; a run with other settings stops the spare and starts its
own program; a spare whose launcher goes (its stdin ends) exits, its JVM with it."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from ducklake_operator.catalog import CatalogLocation
from ducklake_operator.controller.launchers.local import LocalLauncher, _live_groups, _stat
from ducklake_operator.controller.launchers.spec import Launched, LaunchSpec, launch_spec
from ducklake_operator.model.run_env import CATALOG_PASSWORD, CATALOG_USERNAME
from support import duck
from support.job_lakes import PARTS, Lake, partitioned_table
from support.job_program import NO_SPARK, run_document
from support.local_programs import ended
from support.pgserver import PgServer

ROLE, PASSWORD = "ducklake_spare_pw", "spare pw 'q' 7e"
SECRET = "lake-pg"
CREDENTIALS = [(CATALOG_USERNAME, SECRET, "username"), (CATALOG_PASSWORD, SECRET, "password")]


@pytest.fixture(scope="module")
def password_role(pg_server: PgServer) -> PgServer:
    pg_server.create_password_role(ROLE, PASSWORD)
    return pg_server


@pytest.fixture
def lake(password_role: PgServer, data_path: str) -> Lake:
    pg_server = password_role
    name = f"{ROLE}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    pg_server.create_database(name, owner=ROLE)
    location = CatalogLocation(kind="postgres", host=pg_server.host, port=pg_server.port, database=name, user=ROLE,
                               password=PASSWORD)  # fmt: skip
    return partitioned_table(location, data_path)


def launcher_of(tmp_path: Path, **settings: Any) -> LocalLauncher:
    """A Local launcher of the real job program that keeps a warm spare, the catalog's Secret
    its credentials, state in ``tmp_path/runs``."""

    def secret_value(namespace: str, secret: str, key: str) -> str:
        assert (namespace, secret) == ("data", SECRET)
        return {"username": ROLE, "password": PASSWORD}[key]

    env = {k: v for k, v in os.environ.items() if not k.startswith("DUCKLAKE_")}
    return LocalLauncher(secret_value, state_dir=str(tmp_path / "runs"), env=env, warm_spare=True, **settings)


@pytest.fixture
def launcher(tmp_path: Path) -> Any:
    local = launcher_of(tmp_path)
    yield local
    local.close()


def attempt(
    lake: Lake, name: str, *, conf: dict[str, str] | None = None, env: list[dict[str, str]] | None = None,
    **placement: Any,
) -> LaunchSpec:  # fmt: skip
    doc = run_document(lake.manifest(secret=SECRET), "compact", "main.t", name=name, **placement)
    doc["spark"]["conf"] = conf or {}  # as the controller writes a run's spark.conf
    return launch_spec(job_name=name, namespace="data", uid=doc["job"]["uid"], attempt=1, run_document=doc,
                       spark={"launcher": "Local", "master": "local[2]", "conf": conf or {}, "env": env or []},
                       env_from_secrets=CREDENTIALS, timeout_seconds=None, env={})  # fmt: skip


def more_files(lake: Lake, round_: int) -> None:
    """Two more small files in each partition: something for the next compaction to do."""
    start = 100_000 * round_
    duck.run_workload(lake.location, [
        f"INSERT INTO lk.t SELECT i, i % {PARTS}, 'w' || i FROM range({start + k * 50}, {start + k * 50 + 50}) t(i)"
        for k in range(2)
    ])  # fmt: skip


def finish(launcher: LocalLauncher, launched: Launched) -> dict[str, Any]:
    """The attempt run to its end, its program's result; released as its run would."""
    assert ended(launcher, launched, timeout=120) == "Succeeded", Path(launched.detail["stderr"]).read_text()[-3000:]
    deadline = time.time() + 30
    while not launcher.stopped(launched) and time.time() < deadline:
        time.sleep(0.05)
    result = json.loads(Path(launched.detail["log"]).read_text().splitlines()[-1])
    launcher.release(launched)
    return dict(result)


def spare_of(state_dir: Path) -> dict[str, Any] | None:
    """The spare's record (its pid) in the state directory, if one was started."""
    records = glob.glob(str(state_dir / "spare-*.launch.json"))
    assert len(records) <= 1, records
    if not records:
        return None
    return {**json.loads(Path(records[0]).read_text()), "name": os.path.basename(records[0]).split(".")[0]}


def environ(pid: int, err_log: Path, timeout: float = 10) -> dict[str, str]:
    """The program's environment. Popen returns once exec has closed the program's
    close-on-exec pipe, before the kernel has set up its new stack: until then (a moment
    that a loaded machine stretches) its environ reads empty, as it does once it ended."""
    deadline = time.time() + timeout
    while not (raw := _environ_bytes(pid)) and time.time() < deadline:
        time.sleep(0.01)
    stat = _stat(pid)
    assert raw, (
        f"process {pid} ({stat.state if stat else 'gone'}) shows no environment; {err_log}: "
        + (err_log.read_text()[-2000:])
    )
    return dict(entry.split("=", 1) for entry in raw.decode(errors="replace").split("\0") if "=" in entry)


def _environ_bytes(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except FileNotFoundError:
        return b""


def gone(pgid: int, timeout: float = 30) -> bool:
    deadline = time.time() + timeout
    while pgid in _live_groups() and time.time() < deadline:
        time.sleep(0.05)
    return pgid not in _live_groups()


def test_a_run_after_one_on_spark_is_handed_to_a_warm_spare(lake: Lake, launcher: LocalLauncher, tmp_path) -> None:
    state = tmp_path / "runs"
    first = finish(launcher, launcher.launch(attempt(lake, "first")))
    assert first["ranOn"] == "spark" and "sparkSession" not in first["report"]
    assert first["report"]["timings"]["sparkStart"] > 0
    spare = spare_of(state)
    assert spare is not None, "no spare after a run on Spark"
    # waiting for its run: no credential yet, its own scratch as TMPDIR
    seen = environ(spare["pid"], state / f"{spare['name']}.err.log")
    assert CATALOG_PASSWORD not in seen and CATALOG_USERNAME not in seen and PASSWORD not in json.dumps(seen)
    scratch = seen["TMPDIR"]
    assert os.path.isdir(scratch) and os.path.basename(scratch).startswith("spare-")

    more_files(lake, 1)
    rows, before = lake.rows(), lake.snapshot()
    launched = launcher.launch(attempt(lake, "second"))
    assert launched.detail["pid"] == spare["pid"] and launched.detail["scratch"] == scratch
    assert spare_of(state) is None  # the spare is the attempt now
    second = finish(launcher, launched)
    report = second["report"]
    assert second["state"] == "Succeeded" and second["ranOn"] == "spark" and report["sparkSession"] == "warm"
    assert report["timings"]["sparkStart"] == 0 and report["groups"] == PARTS
    assert second["committedSnapshot"] == before + 1 == lake.snapshot() and lake.rows() == rows
    logs = Path(launched.detail["log"]).read_text() + Path(launched.detail["stderr"]).read_text()
    assert PASSWORD not in logs
    assert not os.path.exists(scratch), "the spare's scratch directory outlived its run"
    kept = {f"{launched.name}.{s}" for s in ("launch.json", "run.json", "out.log", "err.log")}
    assert kept <= set(os.listdir(state))  # its logs under its own name, as a fresh program's

    # another spare; a run with other Spark settings stops it and runs in a program of its own
    spare = spare_of(state)
    assert spare is not None
    more_files(lake, 2)
    other = launcher.launch(attempt(lake, "third", conf={"spark.task.maxFailures": "2"}))
    assert other.detail["pid"] != spare["pid"]
    # stopped before the attempt's own program started: never more programs than maxRuns
    assert spare["pid"] not in _live_groups(), "the spare with other settings still runs"
    assert not glob.glob(str(state / f"{spare['name']}.*")), os.listdir(state)  # its scratch and files too
    third = finish(launcher, other)
    assert third["state"] == "Succeeded" and "sparkSession" not in third["report"]
    assert spare_of(state) is not None  # a spare again, with the last run's settings


def test_a_spare_whose_jvm_was_killed_runs_its_run_on_a_session_of_its_own(
    lake: Lake, launcher: LocalLauncher, tmp_path
) -> None:
    """The JVM of a waiting spare killed (the out-of-memory killer picks the largest process):
    the run handed to it starts Spark again, as a fresh program would, and succeeds."""
    state = tmp_path / "runs"
    finish(launcher, launcher.launch(attempt(lake, "first")))
    spare = spare_of(state)
    assert spare is not None
    err = state / f"{spare['name']}.err.log"
    deadline = time.time() + 120
    while "waiting for the run" not in err.read_text() and time.time() < deadline:
        time.sleep(0.05)
    for pid in _java_pids(spare["pid"]):
        os.kill(pid, 9)
    deadline = time.time() + 30
    while _java_in(spare["pid"]) and time.time() < deadline:
        time.sleep(0.05)
    more_files(lake, 1)
    rows = lake.rows()
    launched = launcher.launch(attempt(lake, "second"))
    assert launched.detail["pid"] == spare["pid"]
    result = finish(launcher, launched)
    assert result["state"] == "Succeeded" and result["ranOn"] == "spark" and "sparkSession" not in result["report"]
    assert result["report"]["timings"]["sparkStart"] > 0 and lake.rows() == rows
    assert "the run starts its own" in Path(launched.detail["stderr"]).read_text()


def test_a_spare_that_died_while_it_waited_is_replaced_by_a_program_of_the_runs_own(
    lake: Lake, launcher: LocalLauncher, tmp_path
) -> None:
    state = tmp_path / "runs"
    finish(launcher, launcher.launch(attempt(lake, "first")))
    spare = spare_of(state)
    assert spare is not None
    os.killpg(spare["pid"], 9)  # the spare and its JVM
    assert gone(spare["pid"])
    more_files(lake, 1)
    launched = launcher.launch(attempt(lake, "second"))
    assert launched.detail["pid"] != spare["pid"]
    assert not glob.glob(str(state / f"{spare['name']}.*")), os.listdir(state)  # what it had, removed
    result = finish(launcher, launched)
    assert result["state"] == "Succeeded" and "sparkSession" not in result["report"]


def test_a_cancelled_run_in_a_spare_leaves_only_its_logs(lake: Lake, launcher: LocalLauncher, tmp_path) -> None:
    """A cancel ends the spare's whole group (its JVM too), and its scratch and Spark sockets'
    directories go with it, as a fresh program's do. Both runs hold before their commit
    (the spare has the first one's spark.env): the first is let go, the second cancelled."""
    marker = tmp_path / "paused"
    pause = [{"name": "DUCKLAKE_FAULT_PAUSE", "value": "before_commit"},
             {"name": "DUCKLAKE_FAULT_MARKER", "value": str(marker)}]  # fmt: skip

    def held() -> None:
        deadline = time.time() + 120
        while not marker.exists() and time.time() < deadline:
            time.sleep(0.05)
        assert marker.exists(), "the program never reached its commit"

    first = launcher.launch(attempt(lake, "first", env=pause))
    held()
    marker.unlink()  # let it go on
    assert finish(launcher, first)["state"] == "Succeeded"
    spare = spare_of(tmp_path / "runs")
    assert spare is not None
    more_files(lake, 1)
    rows, before = lake.rows(), lake.snapshot()
    second = launcher.launch(attempt(lake, "second", env=pause))
    assert second.detail["pid"] == spare["pid"]
    held()
    scratch = second.detail["scratch"]
    sockets = environ(spare["pid"], Path(second.detail["stderr"]))["DUCKLAKE_SPARK_SOCKET_DIR"]
    assert os.path.isdir(scratch) and os.path.isdir(sockets) and _java_in(spare["pid"])
    launcher.cancel(second)
    assert gone(spare["pid"]) and launcher.stopped(second)
    assert not os.path.exists(scratch) and not os.path.exists(sockets)
    assert os.path.exists(second.detail["log"])  # its logs stay for its run to read
    assert (lake.rows(), lake.snapshot()) == (rows, before)  # nothing committed


def test_no_spare_where_the_pods_memory_limit_leaves_too_little(lake: Lake, tmp_path) -> None:
    """The operator's own memory grows with what it watches: a spare (about 640 MB resident)
    is started only where the pod's memory cgroup leaves room for it (read from its files:
    here a cgroup v2 container with 500 MB left)."""
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "memory.max").write_text(f"{1024 * 2**20}\n")
    (root / "memory.current").write_text(f"{524 * 2**20}\n")
    (root / "memory.stat").write_text("anon 0\nactive_file 0\ninactive_file 0\n")
    tight = launcher_of(tmp_path, cgroup_root=str(root))
    try:
        assert finish(tight, tight.launch(attempt(lake, "first")))["ranOn"] == "spark"
        assert spare_of(tmp_path / "runs") is None
    finally:
        tight.close()


def test_a_run_in_process_leaves_no_spare(lake: Lake, launcher: LocalLauncher, tmp_path) -> None:
    result = finish(launcher, launcher.launch(attempt(lake, "small", **NO_SPARK)))
    assert result["ranOn"] == "in-process"
    assert spare_of(tmp_path / "runs") is None


def test_a_run_that_goes_in_process_in_a_spare_leaves_a_spare(lake: Lake, launcher: LocalLauncher, tmp_path) -> None:
    """A run under ``inProcessBelow`` with a spare's settings is handed to it (where a run's
    work goes is known only once it has planned) and works in-process there; a spare is
    started again after it, as one was there before: a small table's run does not take the
    next run's warm start away."""
    state = tmp_path / "runs"
    finish(launcher, launcher.launch(attempt(lake, "first")))
    spare = spare_of(state)
    assert spare is not None
    more_files(lake, 1)
    launched = launcher.launch(attempt(lake, "small", in_process_below="1GB"))
    assert launched.detail["pid"] == spare["pid"] and launched.detail["fromSpare"]
    assert finish(launcher, launched)["ranOn"] == "in-process"
    after = spare_of(state)
    assert after is not None and after["pid"] != spare["pid"]


@pytest.mark.parametrize("why", ["its input ends", "no run came"])
def test_a_spare_exits_with_its_jvm_when_no_run_will_come(tmp_path, why: str) -> None:
    """The operator gone (its end of the pipe closed), or no run within its idle time (its
    memory back to the pod): the spare and the JVM it started exit, no JSON line written."""
    settings = json.dumps({"master": "local[1]", "conf": {}})
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    idle = ["--idle-seconds", "2"] if why == "no run came" else []
    with open(tmp_path / "out", "wb") as out, open(tmp_path / "err", "wb") as err:
        spare = subprocess.Popen([sys.executable, "-m", "ducklake_jobs", "spare", "--spark", settings, *idle],
                                 stdin=subprocess.PIPE, stdout=out, stderr=err, env=env, start_new_session=True)  # fmt: skip
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not _java_in(spare.pid):
            time.sleep(0.1)
        assert _java_in(spare.pid), "its JVM never started"
        assert spare.stdin is not None
        if why == "its input ends":
            spare.stdin.close()
        assert spare.wait(timeout=60) == 0, (tmp_path / "err").read_text()[-2000:]
        assert (tmp_path / "out").read_text() == ""  # no run: no JSON line
        assert gone(spare.pid), "its JVM outlived it"
    finally:
        if spare.poll() is None:
            os.killpg(spare.pid, 9)
        if spare.stdin is not None and not spare.stdin.closed:
            spare.stdin.close()


def _java_in(pgid: int) -> bool:
    """Whether a JVM runs in the process group ``pgid``."""
    return bool(_java_pids(pgid))


def _java_pids(pgid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            if (
                entry.isdigit()
                and os.getpgid(int(entry)) == pgid
                and Path(f"/proc/{entry}/comm").read_text().strip() == "java"
                and getattr(_stat(int(entry)), "state", "Z") != "Z"  # not exited
            ):
                found.append(int(entry))
        except (ProcessLookupError, OSError):
            continue
    return found
