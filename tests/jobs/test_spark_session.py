"""A local Spark session's driver JVM starts with the options that halve its start
(``session.LOCAL_DRIVER_JAVA_OPTIONS``), and still runs tasks. The session is the test run's
shared one (local[*]): a session of its own master would be every later test's too."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ducklake_jobs.session import LOCAL_DRIVER_JAVA_OPTIONS, spark_context


def test_local_driver_jvm_runs_with_the_quick_start_options() -> None:
    context = spark_context()
    jvm = context._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert set(LOCAL_DRIVER_JAVA_OPTIONS.split()) <= set(arguments), arguments
    assert context.parallelize([1, 2], 2).map(lambda x: x * 10).collect() == [10, 20]


def test_local_session_draws_no_console_progress_bar() -> None:
    """Started from Python, a local session is a "pyspark-shell" to Spark, which would draw
    its progress bar (carriage returns) on the job's stderr, among the log lines."""
    context = spark_context()
    assert context._jsc.sc().progressBar().isEmpty()


def test_workers_import_pyspark_from_its_package_not_from_pyspark_zip() -> None:
    """Spark puts pyspark.zip first on its workers' path; compiled from there again by every
    new daemon and worker, PySpark's modules took 0.6-1.0 s before a session's first task."""

    def where(_: int) -> list[str]:
        import sys

        return [str(sys.modules[m].__file__) for m in ("pyspark", "pyspark.worker", "py4j")]

    files = spark_context().parallelize([0], 1).map(where).collect()[0]
    assert all(".zip" not in f for f in files), files


# a local session in a process of its own: its JVM's temporary directory and its sockets' directory
CHILD = """
import json
from ducklake_jobs.session import spark_context
context = spark_context("local[1]")
print(json.dumps({"jvm": context._jvm.java.lang.System.getProperty("java.io.tmpdir"),
                  "sockets": context.getConf().get("spark.python.unix.domain.socket.dir"),
                  "result": context.parallelize([1, 2], 2).map(lambda x: x * 10).collect()}))
"""


def session_in_a_process(tmp: Path, **more: str) -> dict[str, Any]:
    """A local session's directories in a process whose TMPDIR is ``tmp``; its task's result."""
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), **more}
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def until_gone(paths: Callable[[], list[Path]]) -> list[Path]:
    """What is left of ``paths()`` once the JVM, which exits after the program, has run its
    shutdown hooks (they remove its local directories)."""
    deadline = time.time() + 30
    while paths() and time.time() < deadline:
        time.sleep(0.1)
    return paths()


def test_a_local_sessions_temporary_files_are_in_tmpdir_and_gone_after_it() -> None:
    """The JVM ignores TMPDIR: its local directories, and the Unix domain sockets of its Python
    workers, went to /tmp, outside a Local program's scratch directory, and two socket files
    of every session stayed there (the JVM exits with the program, without stopping its
    context). Now both follow TMPDIR, and the sockets' directory goes when the program exits."""
    tmp = Path(tempfile.mkdtemp(prefix="dl-", dir="/tmp"))  # short: a socket's path must fit in 107 bytes
    try:
        seen = session_in_a_process(tmp)
        assert Path(seen["jvm"]).parent == tmp and Path(seen["sockets"]).parent == tmp, seen
        assert seen["result"] == [10, 20]
        assert until_gone(lambda: list(tmp.iterdir())) == []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_a_tmpdir_too_long_for_a_socket_has_them_in_tmp_and_gone_after_it(tmp_path: Path) -> None:
    """A Local program's scratch directory is a long path: a socket there would not bind
    ("AF_UNIX path too long"), so they go to a directory of the program's own in /tmp."""
    tmp = tmp_path / ("scratch-" + "x" * 60)
    tmp.mkdir()
    seen = session_in_a_process(tmp)
    sockets = Path(seen["sockets"])
    assert Path(seen["jvm"]).parent == tmp and sockets.parent == Path("/tmp") and seen["result"] == [10, 20], seen
    assert until_gone(lambda: [p for p in (sockets,) if p.exists()] + list(tmp.iterdir())) == []


def test_the_socket_directory_a_launcher_names_is_the_sessions_and_gone_after_it(tmp_path: Path) -> None:
    """The Local launcher names it (``DUCKLAKE_SPARK_SOCKET_DIR``) so that it can remove it
    after a program killed before its exit could."""
    tmp, sockets = tmp_path / "tmp", Path(tempfile.mkdtemp(prefix="dl-", dir="/tmp")) / "sockets"
    tmp.mkdir()
    try:
        seen = session_in_a_process(tmp, DUCKLAKE_SPARK_SOCKET_DIR=str(sockets))
        assert seen["sockets"] == str(sockets) and seen["result"] == [10, 20], seen
        assert until_gone(lambda: [p for p in (sockets,) if p.exists()] + list(tmp.iterdir())) == []
    finally:
        shutil.rmtree(sockets.parent, ignore_errors=True)
