"""A local Spark session's driver JVM starts with the options that halve its start
(``session.LOCAL_DRIVER_JAVA_OPTIONS``), and still runs tasks. The session is the test run's
shared one (local[*]): a session of its own master would be every later test's too."""

from __future__ import annotations

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
