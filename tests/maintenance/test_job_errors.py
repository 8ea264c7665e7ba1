"""A job whose work fails (a value Parquet cannot hold, a data file removed behind the
catalog's back) ends in one clear line, commits nothing and leaves no file behind, in
process and from Spark tasks alike."""

from __future__ import annotations

import os

import pytest

from ducklake_jobs.job_steps import reason
from ducklake_jobs.job_template import run_operation
from ducklake_jobs.task_runners import run_on_spark
from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.errors import JobFailed
from support import duck


def parquet_files(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".parquet")}


@pytest.fixture
def lake(tmp_path):
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "c.sqlite"))
    Catalog.create(location, str(tmp_path / "data") + "/")
    return location, str(tmp_path / "data")


def test_flush_of_a_value_parquet_cannot_hold(lake) -> None:
    location, data = lake
    duck.run_workload(location, ["CREATE TABLE lk.t(i INTERVAL)", "INSERT INTO lk.t VALUES (INTERVAL '-1 day')"])
    catalog = Catalog.open(location)
    before = catalog.snapshot().snapshot_id
    with pytest.raises(JobFailed, match=r"^IOException: .*negative intervals; nothing was committed"):
        run_operation(catalog, "flushInlinedData", None, {})
    assert catalog.snapshot().snapshot_id == before and parquet_files(data) == set()
    con = duck.attach(location)
    assert con.execute("SELECT count(*) FROM lk.t").fetchone() == (1,)
    con.close()


def test_spark_task_failure_is_one_line_and_commits_nothing(lake) -> None:
    location, data = lake
    duck.run_workload(
        location,
        ["CREATE TABLE lk.t(id INTEGER)"]
        + [f"INSERT INTO lk.t SELECT i FROM range({k * 100}, {k * 100 + 100}) t(i)" for k in range(3)],
    )
    catalog = Catalog.open(location)
    before, files = catalog.snapshot().snapshot_id, parquet_files(data)
    missing = sorted(files)[0]
    os.remove(missing)  # removed behind the catalog's back
    with pytest.raises(JobFailed) as info:
        run_operation(catalog, "compact", "main.t", {}, runner=run_on_spark)
    message = str(info.value)
    assert "\n" not in message and os.path.basename(missing) in message and "nothing was committed" in message
    assert catalog.snapshot().snapshot_id == before and parquet_files(data) == files - {missing}


def test_reason_finds_the_innermost_error_line() -> None:
    spark_text = (
        "An exception was thrown from the Python worker. Please see the stack trace below.\n"
        'Traceback (most recent call last):\n  File "x.py", line 1, in f\n'
        "pyarrow.lib.ArrowInvalid: bad file\n\tat org.apache.spark.api.python.PythonRunner"
    )
    assert reason(RuntimeError(spark_text)) == "ArrowInvalid: bad file"
    assert reason(ValueError("plain message\nmore")) == "ValueError: plain message"
    assert reason(KeyError()) == "KeyError"
    # a Py4J error whose Java cause is what matters (Spark could not reach the cluster)
    java_text = (
        "An error occurred while calling None.org.apache.spark.api.java.JavaSparkContext.\n"
        ": org.apache.spark.SparkException: External scheduler cannot be instantiated\n"
        "\tat org.apache.spark.SparkContext$.createTaskScheduler(SparkContext.scala:3257)\n"
        "Caused by: java.net.UnknownHostException: kubernetes.default.svc\n\tat java.base/java.net.InetAddress.get"
    )
    assert reason(RuntimeError(java_text)) == "UnknownHostException: kubernetes.default.svc"
