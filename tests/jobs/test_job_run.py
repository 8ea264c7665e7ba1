"""The pieces of a run that need no child process: where file groups run, the run document's
defaults, and a failure whose commit's fate is unknown (exit 3, files kept)."""

from __future__ import annotations

from contextlib import closing

from ducklake_jobs.launched_program import outcome_of_failure
from ducklake_jobs.run_context import PLAIN_RUN, JobRun
from ducklake_jobs.run_document_reader import parse_run_document
from ducklake_jobs.task_runners import ran_on, run_in_process, run_on_spark
from ducklake_operator.catalog import Catalog
from ducklake_operator.errors import CommitStateUnknown, TableNotFound
from ducklake_operator.model.job_marker import EXIT_FAILED, EXIT_UNKNOWN
from support.job_lakes import Lake
from support.job_program import run_document


def test_file_groups_run_in_process_below_the_threshold_only() -> None:
    below = JobRun(in_process_below=1000)
    assert below.runner_for(run_on_spark, 999) is run_in_process
    assert below.runner_for(run_on_spark, 1000) is run_on_spark
    assert PLAIN_RUN.runner_for(run_on_spark, 0) is run_on_spark
    assert [ran_on(r) for r in (run_in_process, run_on_spark)] == ["in-process", "spark"]
    assert PLAIN_RUN.file_marker == "" and PLAIN_RUN.extra_info({"x": 1}) is None


def test_run_document_defaults(sqlite_lake: Lake) -> None:
    raw = run_document(sqlite_lake.manifest(), "compact", "main.t", master=None, in_process_below="16MiB")
    raw["spark"]["conf"] = {"spark.executor.instances": 2}
    del raw["job"]["attempt"]
    doc = parse_run_document(raw)
    assert doc.spark_master == "local[*]" and doc.spark_conf == (("spark.executor.instances", "2"),)
    assert doc.in_process_below == 16 << 20 and doc.job.attempt == 1 and doc.job.namespace == "data"
    assert doc.catalog.data_path == sqlite_lake.data_path


def test_an_unknown_commit_outcome_is_exit_3_and_keeps_files(sqlite_lake: Lake) -> None:
    doc = parse_run_document(run_document(sqlite_lake.manifest(), "compact", "main.t"))
    started = {"operation": "compact", "table": "main.t"}
    with closing(Catalog.open(sqlite_lake.location)) as catalog:
        unknown = outcome_of_failure(catalog, doc, "compact main.t", started, CommitStateUnknown("COMMIT lost"))
        failed = outcome_of_failure(catalog, doc, "compact main.t", started, TableNotFound("gone"))
        crashed = outcome_of_failure(catalog, doc, "compact main.t", started, KeyError("k"))
    assert (unknown.state, unknown.exit_code) == ("Failed", EXIT_UNKNOWN)
    assert unknown.message == "compact main.t: COMMIT lost; its files were kept"
    assert (failed.exit_code, failed.message) == (EXIT_FAILED, "compact main.t: gone")
    assert (crashed.exit_code, crashed.message) == (EXIT_FAILED, "compact main.t: KeyError: 'k'")
