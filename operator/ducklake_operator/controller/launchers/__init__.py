"""How an attempt of a DuckLakeJob runs (``spark.launcher``): ``Local`` (a child process of
the operator), ``Job`` (a ``batch/v1`` Job running ``spark-submit`` in client mode) or
``SparkApplication`` (the Kubeflow Spark Operator's). ``spec`` builds the attempt,
``render`` the objects (pure), ``observe`` reads their state (pure); ``local`` and ``kube``
do the I/O.

This module imports nothing heavy: ``spec`` is imported by the controller at start, the
kubernetes client only when ``launchers`` is called.
"""

from __future__ import annotations

from typing import Any

from .spec import JOB, LOCAL, SPARK_APPLICATION, Launcher


def launchers(secret_value: Any, api_client: Any = None, on_exit: Any = None) -> dict[str, Launcher]:
    """One launcher per ``spark.launcher`` value; ``secret_value(namespace, secret, key)``
    gives the Local launcher its credentials (pods get them from the Secrets directly),
    ``on_exit(uid)`` is told when a Local program exits."""
    from .kube import JobLauncher, SparkApplicationLauncher
    from .local import LocalLauncher

    return {
        LOCAL: LocalLauncher(secret_value, on_exit=on_exit),
        JOB: JobLauncher(api_client),
        SPARK_APPLICATION: SparkApplicationLauncher(api_client),
    }
