"""A run's deadline is a deadline: the job program refuses, inside its commit's transaction,
to commit past the run's deadline (less a margin), so the controller can end the
run at the deadline even while its pods have not stopped; and the controller can end the
job's catalog sessions (PostgreSQL) so that whatever they had open is decided at once.
Also what the program reports when it fails: what ran out of memory, its files deleted."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import uuid
from contextlib import closing
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from ducklake_jobs.launched_program import COMMIT_MARGIN, deadline_guard, outcome_of_failure
from ducklake_jobs.run_document_reader import parse_run_document
from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.catalog.job_commits import end_job_sessions, job_sessions_ended
from ducklake_operator.errors import JobFailed, SpecError
from ducklake_operator.model.job_marker import file_marker, is_marked, session_name
from ducklake_operator.model.timestamps import stamp
from support.job_lakes import Lake
from support.job_program import (
    NO_SPARK,
    catalog_manifest,
    command,
    pause_env,
    program_env,
    run_document,
    run_program,
    write_document,
)
from support.pgserver import PgServer
from support.spark_errors import SPARK_LOST


def with_deadline(doc: dict, deadline: float) -> dict:
    return {**doc, "job": {**doc["job"], "deadline": stamp(datetime.fromtimestamp(deadline, UTC))}}


def marked(lake: Lake, uid: str) -> set[str]:
    return {f for f in lake.files() if is_marked(f, file_marker(uid))}


def test_a_commit_reached_past_the_deadline_is_refused_inside_its_transaction(lake: Lake, tmp_path) -> None:
    """The program is held inside its commit's transaction (the ``in_commit`` fault point)
    while the deadline passes; let go, it rolls back: nothing committed, its files deleted,
    and it says why."""
    rows, before, files = lake.rows(), lake.snapshot(), lake.files()
    deadline = time.time() + 6
    doc = with_deadline(run_document(lake.manifest(), "compact", "main.t", **NO_SPARK), deadline)
    uid, marker = doc["job"]["uid"], str(tmp_path / "paused")
    run_file = write_document(doc, str(tmp_path))
    proc = subprocess.Popen(command(run_file), env=program_env(**pause_env("in_commit", marker)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        while not os.path.exists(marker) and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        assert marked(lake, uid)  # its files are written, its transaction open
        time.sleep(max(deadline - time.time(), 0) + 0.5)  # held in its transaction past the deadline
        os.unlink(marker)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    result = json.loads(out.splitlines()[-1])
    assert proc.returncode == 1 and result["state"] == "Failed", err
    assert "not committed: the run's deadline is " in result["message"]
    assert re.search(r"a commit must end \d+ s before it \(this one was \d+ s too late\)", result["message"])
    assert result["report"]["uncommittedFiles"] == "deleted"
    assert lake.snapshot() == before and lake.rows() == rows and lake.files() == files and not marked(lake, uid)


def test_a_run_with_time_left_commits(sqlite_lake: Lake, tmp_path) -> None:
    before = sqlite_lake.snapshot()
    doc = with_deadline(run_document(sqlite_lake.manifest(), "compact", "main.t", **NO_SPARK), time.time() + 3600)
    run = run_program(doc, str(tmp_path))
    assert run.exit_code == 0 and run.result["committedSnapshot"] == before + 1 == sqlite_lake.snapshot(), run.stderr


def test_the_guard_refuses_from_the_margin_before_the_deadline() -> None:
    now = [1000.0]
    guard = deadline_guard(1000.0 + 10 * COMMIT_MARGIN + 1, clock=lambda: now[0])
    now[0] += 9 * COMMIT_MARGIN
    guard()  # a second before the margin: goes
    now[0] += 1
    with pytest.raises(
        JobFailed, match=rf"a commit must end {COMMIT_MARGIN:.0f} s before it \(this one was 0 s too late"
    ):
        guard()
    assert JobFailed.cleanable  # nothing committed: the job deletes its files
    # a run given 5 s: its margin is a tenth of that, so it can still commit in time
    short = deadline_guard(now[0] + 5, clock=lambda: now[0])
    now[0] += 4
    short()
    now[0] += 0.6
    with pytest.raises(JobFailed, match=r"a commit must end 0 s before it"):
        short()


def test_the_run_document_carries_the_deadline() -> None:
    doc = run_document(
        catalog_manifest(CatalogLocation(kind="sqlite", path="/lake.sqlite"), "/d/"), "compact", "main.t"
    )
    assert parse_run_document(doc).deadline is None
    parsed = parse_run_document(with_deadline(doc, 1767225600.0))
    assert parsed.deadline == 1767225600.0
    with pytest.raises(SpecError, match=r"job.deadline: 'soon' is not a time such as 2026-01-01T00:00:00Z"):
        parse_run_document({**doc, "job": {**doc["job"], "deadline": "soon"}})


def test_executors_killed_for_memory_are_the_failures_first_words(sqlite_lake: Lake) -> None:
    """Spark's error (the cause of the job's failure) says an executor's pod was OOMKilled."""
    doc = parse_run_document(run_document(sqlite_lake.manifest(), "compact", "main.t"))
    try:
        raise RuntimeError(SPARK_LOST)
    except RuntimeError as spark:
        failure = JobFailed("Py4JJavaError: An error occurred; nothing was committed and the job's files were deleted")
        failure.__cause__ = spark
    with closing(Catalog.open(sqlite_lake.location)) as catalog:
        outcome = outcome_of_failure(catalog, doc, "compact main.t", {"operation": "compact"}, failure)
    assert outcome.state == "Failed" and outcome.exit_code == 1
    assert outcome.message.startswith(
        "compact main.t: the executors ran out of memory (executor 6 was OOMKilled (exit code 137)): raise "
        "spark.executor.memory, or spark.executor.memoryOverhead in spark.conf"
    )
    assert outcome.message.endswith("; Py4JJavaError: An error occurred; nothing was committed and the job's files "
                                    "were deleted")  # fmt: skip


def test_the_controller_ends_the_jobs_catalog_sessions(pg_server: PgServer, data_path: str) -> None:
    """A session of the job (its ``application_name``) holding a transaction open is ended
    by the catalog's own role, without superuser rights: the transaction is rolled back."""
    role, password = f"deadline_{os.getpid()}", "Deadline-pw-1"
    pg_server.create_password_role(role, password)
    pg_server.create_database(role, owner=role)
    location = CatalogLocation(kind="postgres", host=pg_server.host, port=pg_server.port, database=role, user=role,
                               password=password)  # fmt: skip
    uid = str(uuid.uuid4())
    with closing(Catalog.create(location, data_path)) as catalog:
        job = sa.create_engine(
            sa.engine.URL.create("postgresql+psycopg2", role, password, pg_server.host, pg_server.port, role),
            connect_args={"application_name": session_name(uid)},
        )
        try:
            conn = job.connect()
            conn.execute(sa.text("CREATE TABLE held (i int)"))  # a transaction, open
            assert not job_sessions_ended(catalog, uid, timeout=0)
            assert end_job_sessions(catalog, uid) == 1
            assert job_sessions_ended(catalog, uid, timeout=10)
            with pytest.raises(sa.exc.DBAPIError):
                conn.execute(sa.text("SELECT 1"))
            conn.invalidate()
        finally:
            job.dispose()
        with catalog.engine.connect() as check:
            assert check.execute(sa.text("SELECT to_regclass('held')")).scalar() is None  # rolled back
        assert end_job_sessions(catalog, uid) == 0
