"""A Local program's temporary files (DuckDB's spill, staged files, Spark's local
directories) go to a scratch directory of its attempt's (its TMPDIR and working directory),
its Spark sockets to a directory named for it (a shorter path), both removed once nothing of
its process group runs, also when it was killed mid-run; what an ended attempt left in the
state directory goes ``keep_seconds`` after its program ended, found at a launch even when no
run looks at it again. Real child processes."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ducklake_operator.model.run_env import EnvVar
from support.local_programs import attempt, ended, holding, launcher_of

# writes a file into its temporary directory and one into its working directory, starts a child in its process group (Spark's JVM,
# say) that runs while HOLD_FILE.child exists, says where it wrote, and runs while HOLD_FILE exists
SPILLS = """
import os, subprocess, sys, tempfile, time
hold = os.environ["HOLD_FILE"]
with open(os.path.join(tempfile.gettempdir(), "spill"), "w") as fh:
    fh.write("x" * 4096)
with open(".tmp", "w") as fh:  # DuckDB's spill when it is given no directory
    fh.write("x" * 4096)
sockets = os.environ["DUCKLAKE_SPARK_SOCKET_DIR"]  # as a local Spark session makes it
os.makedirs(sockets)
open(os.path.join(sockets, ".0123.sock"), "w").close()
subprocess.Popen([sys.executable, "-c", f"import os, time\\nwhile os.path.exists({hold!r} + '.child'): time.sleep(0.02)"])
with open(hold + ".seen", "w") as fh:
    fh.write(tempfile.gettempdir())
while os.path.exists(hold):
    time.sleep(0.02)
"""


def until(check: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.time() + timeout
    while not check() and time.time() < deadline:
        time.sleep(0.02)
    assert check(), "not within the timeout"


def test_a_killed_programs_scratch_goes_once_nothing_of_its_group_runs(tmp_path: Path) -> None:
    hold, child, seen = tmp_path / "hold", tmp_path / "hold.child", tmp_path / "hold.seen"
    hold.write_text("")
    child.write_text("")
    try:
        launcher = launcher_of(tmp_path, SPILLS)
        launched = launcher.launch(attempt("a", "uid-a"))
        until(seen.exists)
        scratch = Path(seen.read_text())
        assert scratch == tmp_path / "runs" / "a-uida-1.scratch" and (scratch / "spill").is_file()
        assert (scratch / ".tmp").is_file()  # its working directory is its scratch too
        sockets = Path(launcher._sockets(str(scratch)))
        assert (sockets / ".0123.sock").is_file() and len(str(sockets)) + 43 <= 107  # a socket's path fits

        os.kill(int(launched.detail["pid"]), signal.SIGKILL)  # as the kernel's OOM killer would
        assert ended(launcher, launched) != "Running"
        assert not launcher.stopped(launched) and (scratch / "spill").is_file()  # its child still runs
        child.unlink()
        until(lambda: launcher.stopped(launched))
        assert not scratch.exists() and not sockets.exists()
    finally:  # nothing of it left running when an assertion failed
        hold.unlink(missing_ok=True)
        child.unlink(missing_ok=True)
    assert (tmp_path / "runs" / "a-uida-1.out.log").exists()  # its logs stay for its run to read


def test_what_ended_attempts_left_is_swept_at_a_launch(tmp_path: Path) -> None:
    runs, hold = tmp_path / "runs", tmp_path / "hold"
    program = "import os, tempfile\nopen(os.path.join(tempfile.gettempdir(), 'spill'), 'w').close()\n"
    first = launcher_of(tmp_path, program + "os.makedirs(os.environ['DUCKLAKE_SPARK_SOCKET_DIR'])")
    gone = first.launch(attempt("a", "uid-a"))
    assert ended(first, gone) != "Running"  # and its run never looks again (deleted while no operator ran)
    sockets = Path(first._sockets(str(runs / "a-uida-1.scratch")))
    assert (runs / "a-uida-1.scratch" / "spill").is_file() and sockets.is_dir()
    (runs / "notes.txt").write_text("not the launcher's")

    hold.write_text("")
    restarted = holding(tmp_path, keep_seconds=60)
    running = restarted.launch(attempt("b", "uid-b"))  # its first launch sweeps
    names = {p.name for p in runs.iterdir()}
    assert "a-uida-1.scratch" not in names and not sockets.exists()
    assert {f"a-uida-1.{f}" for f in ("launch.json", "run.json", "out.log", "err.log")} <= names  # kept a while

    long_ago = time.time() - 120
    for path in runs.iterdir():
        os.utime(path, (long_ago, long_ago))
    again = holding(tmp_path, keep_seconds=60)
    third = again.launch(attempt("c", "uid-c"))
    names = {p.name for p in runs.iterdir()}
    assert not [n for n in names if n.startswith("a-uida-1")], names
    # a running attempt's files stay, however old, and so does what is not the launcher's
    assert {"b-uidb-1.launch.json", "b-uidb-1.out.log", "b-uidb-1.scratch", "notes.txt"} <= names
    hold.unlink()
    assert ended(again, running) != "Running" and ended(again, third) != "Running"


def test_a_tmpdir_the_runs_settings_name_wins(tmp_path: Path) -> None:
    """spark.env's TMPDIR (a larger volume, say) is the program's, not the attempt's scratch."""
    own = tmp_path / "volume"
    own.mkdir()
    launcher = launcher_of(
        tmp_path, "import os, tempfile\nopen(os.environ['HOLD_FILE'], 'w').write(tempfile.gettempdir())"
    )
    spec = replace(attempt("a", "uid-a"), env=(EnvVar("TMPDIR", str(own)),))
    assert ended(launcher, launcher.launch(spec)) != "Running"
    assert (tmp_path / "hold").read_text() == str(own)
