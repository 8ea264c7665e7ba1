"""The Spark session of a job: local[*] for ``ducklake run-job``, the cluster's otherwise.

One per process (startup costs seconds). The jobs use Spark's RDD API only, so the session
is a SparkContext: a SparkSession around it took 0.5 s more to start (a local[2] one here,
1.68-1.83 s against 1.17-1.26 s), for SQL machinery no job uses. Workers run this
interpreter, so the project is importable in the tasks.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from functools import lru_cache
from typing import Any

from ducklake_operator.model.socket_paths import SOCKET_DIR_ENV, socket_parent

from . import class_archive, job_timings

# The driver JVM of a local session only schedules (the tasks' work is in Python): without
# C2 compilation and with the serial collector it starts in about half the time (a bare
# local[2] session here, median of 5 paired runs: 3.2 s against 6.7 s), and from a
# class-data-sharing archive when there is one (``class_archive``). A run's own
# spark.driver.extraJavaOptions replaces them.
# Without its performance-data file (/tmp/hsperfdata_<user>/<pid>, which only jps and jstat read)
# a JVM killed at the program's end (``stop_jvm``) leaves nothing in /tmp.
LOCAL_DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData"
# The JVM and its Python workers talk over Unix domain sockets (Spark 4.1+; the files go to
# java.io.tmpdir, /tmp: the pods' emptyDir; a local session's to ``_socket_dir``) rather
# than loopback TCP: a task's round trip took about 26 ms there, 4-6 ms this way (local[2],
# 100 tasks that do nothing: 2.6-2.8 s against 0.43-0.63 s). The workers' daemon imports
# PySpark from its installed package, not from pyspark.zip (``spark_daemon``). A session
# started from Python is a "pyspark-shell" to Spark, which would draw its console progress
# bar (carriage returns) among the job's log lines. A run's own spark.conf setting wins.
SESSION_DEFAULTS = (
    ("spark.ui.enabled", "false"),
    ("spark.python.unix.domain.socket.enabled", "true"),
    ("spark.python.daemon.module", "ducklake_jobs.spark_daemon"),
    ("spark.ui.showConsoleProgress", "false"),
)
SOCKET_DIR = "spark.python.unix.domain.socket.dir"
SOCKETS_PREFIX = "ducklake-spark-"  # + mkdtemp's 8 characters
LOCAL_DIR = "spark.local.dir"
LOCAL_DIR_PREFIX = "ducklake-spark-local-"
JVM_EXIT_SECONDS = 10.0  # for a JVM killed at the program's end to be gone
# the JVM is this process's, what it writes is in the session's own directory, and it writes no
# class-data-sharing archive as it exits: ``stop_jvm`` kills it
_killable = False


@lru_cache(maxsize=1)
def spark_context(master: str | None = None, conf: tuple[tuple[str, str], ...] = ()) -> Any:
    """``master``: else DUCKLAKE_SPARK_MASTER, else local[*], unless spark-submit started this
    program; ``conf``: Spark settings (a run document's ``spark.conf``), over this module's."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark import SparkConf, SparkContext

    settings = SparkConf().setAppName("ducklake-maintenance")
    for key, value in (*SESSION_DEFAULTS, *conf):
        settings.set(key, value)
    dump = None
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        chosen = master or os.environ.get("DUCKLAKE_SPARK_MASTER", "local[*]")
        settings.setMaster(chosen)
        if chosen.startswith("local"):
            own = dict(conf)
            # the JVM's temporary files (its native libraries, Spark's local directories) in a
            # directory of the session's, in TMPDIR, removed at exit; unless the run places them
            java_ours, local_dir_ours = "spark.driver.extraJavaOptions" not in own, LOCAL_DIR not in own
            session_dir = _own_dir(tempfile.mkdtemp(prefix=LOCAL_DIR_PREFIX)) if java_ours or local_dir_ours else ""
            if java_ours:
                archive, dump = class_archive.java_options()
                options = f"{LOCAL_DRIVER_JAVA_OPTIONS} {_java_temp_dir(session_dir)} {archive}"
                settings.set("spark.driver.extraJavaOptions", options.strip())
            if local_dir_ours:
                settings.set(LOCAL_DIR, session_dir)
            if SOCKET_DIR not in own:
                settings.set(SOCKET_DIR, _socket_dir())
            global _killable
            _killable = java_ours and local_dir_ours and dump is None
    # else the program runs under spark-submit (its PythonRunner sets that variable), whose
    # --master the launcher chose (a pod's: the in-cluster API server, expanded by the kubelet)
    with job_timings.within(job_timings.SPARK_START):
        context = SparkContext.getOrCreate(settings)
        context.setLogLevel("WARN")
    if dump is not None:  # the first session here: its JVM's classes are archived when it exits
        atexit.register(class_archive.publish, context, dump)
    return context


def stop_jvm() -> None:
    """At the program's end (its result written), kill the JVM this process started, rather than
    leave it to its shutdown hooks: it went on for about 2 s after the program had exited
    (stopping the context, which the run no longer needs), and a launcher that waits for the
    program's whole process group (the Local launcher) waited for it. What those hooks would
    delete (and its native libraries, which it deletes as it exits) is in the session's own
    directory, removed at exit. Nothing when the JVM is not this process's (under
    spark-submit), keeps its files elsewhere (a run's own java options or local directory) or
    writes its class archive as it exits, or when this process never imported PySpark. The
    program's output is flushed first: its result is out before the wait."""
    if "pyspark" not in sys.modules:
        return
    from pyspark import SparkContext

    sys.stdout.flush()
    proc = getattr(SparkContext._gateway, "proc", None)
    if proc is None or not _killable:
        return
    proc.kill()
    try:
        proc.wait(JVM_EXIT_SECONDS)
    except Exception:  # noqa: BLE001 - still going: it ends with this process's stdin anyway
        pass


def _java_temp_dir(path: str) -> str:
    """The JVM's temporary directory: ``path``, in the program's (TMPDIR). The JVM ignores
    TMPDIR, and what it keeps there would land in /tmp, outside the scratch directory a
    launcher gives the program and removes after it (the Local launcher's)."""
    return f'"-Djava.io.tmpdir={path}"'


def _socket_dir() -> str:
    """A directory of the program's own for the Unix domain sockets of the JVM and its Python
    workers, removed when the program exits. In the temporary directory they outlived every
    program (two ``.<uuid>.sock`` files a session): the JVM exits when this process does,
    without stopping the context (a ``stop()`` takes about a second), so nothing removed
    them. The one a launcher names (the Local launcher's, which it removes after a program
    that could not), else one in TMPDIR when a socket's path fits there, else in /tmp."""
    path = os.environ.get(SOCKET_DIR_ENV)
    if path:
        os.makedirs(path, mode=0o700, exist_ok=True)
    else:
        parent = socket_parent(tempfile.gettempdir(), len(SOCKETS_PREFIX) + 8)
        path = tempfile.mkdtemp(prefix=SOCKETS_PREFIX, dir=parent)
    return _own_dir(path)


def _own_dir(path: str) -> str:
    """``path``, removed when this process exits."""
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path
