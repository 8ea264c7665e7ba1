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
LOCAL_DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
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
            if "spark.driver.extraJavaOptions" not in own:
                archive, dump = class_archive.java_options()
                options = f"{LOCAL_DRIVER_JAVA_OPTIONS} {_java_temp_dir()} {archive}"
                settings.set("spark.driver.extraJavaOptions", options.strip())
            if SOCKET_DIR not in own:
                settings.set(SOCKET_DIR, _socket_dir())
    # else the program runs under spark-submit (its PythonRunner sets that variable), whose
    # --master the launcher chose (a pod's: the in-cluster API server, expanded by the kubelet)
    with job_timings.within(job_timings.SPARK_START):
        context = SparkContext.getOrCreate(settings)
        context.setLogLevel("WARN")
    if dump is not None:  # the first session here: its JVM's classes are archived when it exits
        atexit.register(class_archive.publish, context, dump)
    return context


def _java_temp_dir() -> str:
    """The JVM's temporary directory where the program's is: the JVM ignores TMPDIR, and what
    Spark keeps there (its local directories) would land in /tmp, outside the scratch
    directory a launcher gives the program and removes after it (the Local launcher's)."""
    return f'"-Djava.io.tmpdir={tempfile.gettempdir()}"'


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
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path
