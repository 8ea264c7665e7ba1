"""The SparkSession of a job: local[*] for ``ducklake run-job``, the cluster's otherwise.

One session per process (startup costs seconds). Workers run this interpreter, so the
project is importable in the tasks.
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def spark_session(master: str | None = None, conf: tuple[tuple[str, str], ...] = ()) -> Any:
    """``master``: else DUCKLAKE_SPARK_MASTER, else local[*], unless spark-submit started this
    program; ``conf``: Spark settings (a run document's ``spark.conf``), over this module's."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("ducklake-maintenance").config("spark.ui.enabled", "false")
    for key, value in conf:
        builder = builder.config(key, value)
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master(master or os.environ.get("DUCKLAKE_SPARK_MASTER", "local[*]"))
    # else the program runs under spark-submit (its PythonRunner sets that variable), whose
    # --master the launcher chose (a pod's: the in-cluster API server, expanded by the kubelet)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session
