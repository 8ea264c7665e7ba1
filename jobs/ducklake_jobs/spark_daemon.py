"""The daemon of a Spark executor's Python workers (``spark.python.daemon.module``, set by
``session.SESSION_DEFAULTS``): PySpark's own, run with PySpark imported from its installed
package (``pyspark_path``), so neither the daemon nor the workers it forks compile PySpark's
modules from ``pyspark.zip`` again. Spark runs it as ``python -m ducklake_jobs.spark_daemon
<worker module>``; PySpark's daemon reads that argument itself."""

from __future__ import annotations

from ducklake_jobs.pyspark_path import prefer_installed

if __name__ == "__main__":
    prefer_installed()
    from pyspark import daemon

    daemon.manager()
