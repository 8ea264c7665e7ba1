"""The job program every launcher runs (``python -m ducklake_jobs run --run-file``), as a
child process on a run document: its JSON lines and exit codes, Spark or in-process, the
commit marker, a run that already landed, and every kind of bad input ending in a Failed
result a person can act on, with nothing committed and no password anywhere."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import closing

import pytest

from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.catalog.job_commits import find_job_commit
from ducklake_operator.controller.launchers.local import _live_groups
from ducklake_operator.model.job_marker import file_marker, is_marked, job_commit_report
from support import duck
from support.job_lakes import INSERTS, PARTS, Lake, partitioned_table
from support.job_program import NO_SPARK, command, program_env, run_document, run_program, write_document
from support.pgserver import PgServer, free_port

ROLE = "ducklake_job_pw"
# a space, quotes and a backslash: the password must not leak in any spelling (JSON escapes them)
PASSWORD = "Job pw 'q' \\ 5c1d"
_databases = itertools.count()


def table_files(lake: Lake) -> list[str]:
    with closing(Catalog.open(lake.location)) as catalog:
        return [f.path for f in catalog.state().table("main", "t").data_files]


def assert_no_password(run_stdout: str, run_stderr: str) -> None:
    for spelling in (PASSWORD, json.dumps(PASSWORD)[1:-1]):
        assert spelling not in run_stdout and spelling not in run_stderr


@pytest.fixture(scope="module")
def password_role(pg_server: PgServer) -> PgServer:
    pg_server.create_password_role(ROLE, PASSWORD)
    return pg_server


@pytest.fixture
def role_location(password_role: PgServer) -> CatalogLocation:
    """A fresh database the password role owns, reached as that role."""
    name = f"{ROLE}_{os.getpid()}_{next(_databases)}"
    password_role.create_database(name, owner=ROLE)
    return CatalogLocation(
        kind="postgres", host=password_role.host, port=password_role.port, database=name, user=ROLE, password=PASSWORD
    )


def test_compact_on_spark_with_credentials_from_the_environment(role_location, data_path, tmp_path) -> None:
    lake = partitioned_table(role_location, data_path)
    rows, before = lake.rows(), lake.snapshot()
    doc = run_document(lake.manifest(secret="lake-pg"), "compact", "main.t")
    run = run_program(
        doc,
        str(tmp_path),
        DUCKLAKE_CATALOG_USERNAME=ROLE,
        DUCKLAKE_CATALOG_PASSWORD=PASSWORD,
        DUCKLAKE_REPORT_TO_API="",
    )
    assert run.exit_code == 0, run.stderr
    result = run.result
    assert result["state"] == "Succeeded" and result["ranOn"] == "spark" == result["report"]["ranOn"]
    assert result["committedSnapshot"] == before + 1 == lake.snapshot()
    assert result["report"]["groups"] == PARTS and result["report"]["filesRead"] == PARTS * INSERTS
    timings = result["report"]["timings"]  # this program started its Spark session
    assert min(timings.values()) > 0 and sum(timings.values()) <= result["report"]["seconds"], timings
    phases = run.progress
    assert phases[0] == ("planning", 0, 0) and phases[-1] == ("committing", PARTS, PARTS)
    writing = [done for phase, done, total in phases if phase == "writing" and total == PARTS]
    assert writing[0] == 0 and writing[-1] == PARTS and writing == sorted(writing)
    assert_no_password(run.stdout, run.stderr)
    assert lake.rows() == rows
    with closing(Catalog.open(role_location)) as catalog:
        commit = find_job_commit(catalog, doc["job"]["uid"])
    assert commit is not None and commit.snapshot_id == result["committedSnapshot"]
    marked = job_commit_report(commit.commit_extra_info, doc["job"]["uid"]) or {}
    # the snapshot itself; the report's seconds and timings end after the commit, and what the
    # commit cannot know of itself: its retries and conflicts
    unstamped = ("committedSnapshot", "seconds", "timings", "commitRetries", "commitConflicts")
    assert (result["report"]["commitRetries"], result["report"]["commitConflicts"]) == (0, 0)
    assert {k: v for k, v in marked.items() if k not in unstamped} == {
        k: v for k, v in result["report"].items() if k not in unstamped
    }
    assert json.loads(commit.commit_extra_info or "")["ducklakeJob"] == doc["job"]
    files = table_files(lake)
    assert len(files) == PARTS and all(is_marked(f, file_marker(doc["job"]["uid"])) for f in files)


def test_compact_below_the_threshold_runs_in_process(lake: Lake, tmp_path) -> None:
    rows, before = lake.rows(), lake.snapshot()
    run = run_program(run_document(lake.manifest(), "compact", "main.t", **NO_SPARK), str(tmp_path))
    assert run.exit_code == 0, run.stderr
    assert run.result["ranOn"] == "in-process" and run.result["committedSnapshot"] == before + 1
    assert run.result["report"]["bytesRead"] < 1_000_000_000
    assert run.result["report"]["timings"]["sparkStart"] == 0 < run.result["report"]["timings"]["tasks"]
    # in-process, each finished file group is counted
    assert run.progress == [("planning", 0, 0)] + [("writing", k, PARTS) for k in range(PARTS + 1)] + [
        ("committing", PARTS, PARTS)
    ]
    assert (
        run.result["message"]
        == f"compact main.t: committed snapshot {before + 1} ({PARTS * INSERTS} files read, {PARTS} written)"
    )
    assert lake.rows() == rows


def test_the_same_document_run_twice_commits_once(sqlite_lake: Lake, tmp_path) -> None:
    rows, before = sqlite_lake.rows(), sqlite_lake.snapshot()
    doc = run_document(sqlite_lake.manifest(), "compact", "main.t", **NO_SPARK)
    first = run_program(doc, str(tmp_path))
    files = sqlite_lake.files()
    second = run_program(doc, str(tmp_path))
    assert first.exit_code == second.exit_code == 0
    assert (
        first.result["committedSnapshot"] == second.result["committedSnapshot"] == before + 1 == sqlite_lake.snapshot()
    )
    assert second.progress == [] and "not run again" in second.result["message"]
    assert second.result["report"]["filesWritten"] == first.result["report"]["filesWritten"] == PARTS
    assert sqlite_lake.files() == files and sqlite_lake.rows() == rows


def test_dry_run_commits_and_writes_nothing(sqlite_lake: Lake, tmp_path) -> None:
    before, files = sqlite_lake.snapshot(), sqlite_lake.files()
    run = run_program(
        run_document(sqlite_lake.manifest(), "compact", "main.t", {"dryRun": True}, **NO_SPARK), str(tmp_path)
    )
    assert run.exit_code == 0 and run.result["state"] == "Succeeded" and run.result["committedSnapshot"] is None
    assert run.result["message"] == "compact main.t: dry run, nothing committed"
    assert len(run.result["report"]["plan"]) == PARTS
    assert sqlite_lake.snapshot() == before and sqlite_lake.files() == files


@pytest.mark.parametrize("dry_run", [False, True])
def test_expire_snapshots(lake: Lake, tmp_path, dry_run: bool) -> None:
    rows = lake.rows()
    con_snapshots = lake_snapshots(lake)
    run = run_program(
        run_document(lake.manifest(), "expireSnapshots", None, {"retainLast": 1, "dryRun": dry_run}, **NO_SPARK),
        str(tmp_path),
    )
    assert run.exit_code == 0, run.stderr
    expired = run.result["report"]["expired"]
    assert expired == con_snapshots[:-1] and run.result["ranOn"] == "in-process"
    assert run.result["message"] == (
        "expireSnapshots: dry run, nothing committed"
        if dry_run
        else f"expireSnapshots: {len(expired)} snapshots expired"
    )
    assert lake_snapshots(lake) == (con_snapshots if dry_run else con_snapshots[-1:])
    assert lake.rows() == rows


def lake_snapshots(lake: Lake) -> list[int]:
    con = duck.attach(lake.location, con=duck.connect())
    try:
        return [r[0] for r in con.execute("SELECT snapshot_id FROM ducklake_snapshots('lk') ORDER BY 1").fetchall()]
    finally:
        con.close()


def test_flush_writes_files_marked_with_the_job(sqlite_lake: Lake, tmp_path) -> None:
    duck.run_workload(
        sqlite_lake.location,
        ["INSERT INTO lk.t VALUES (1000, 0, 'a'), (1001, 1, 'b')", "DELETE FROM lk.t WHERE id = 1000"],
    )
    rows, files = sqlite_lake.rows(), sqlite_lake.files()
    doc = run_document(sqlite_lake.manifest(), "flushInlinedData", "main.t", **NO_SPARK)
    run = run_program(doc, str(tmp_path))
    assert run.exit_code == 0, run.stderr
    assert run.result["report"]["rowsFlushed"] == 2 and run.result["committedSnapshot"] == sqlite_lake.snapshot()
    new = sqlite_lake.files() - files
    assert new and all(is_marked(f, file_marker(doc["job"]["uid"])) for f in new)
    assert sqlite_lake.rows() == rows


BAD_INPUT = {
    "unknown operation": ("compactify", "main.t", {}, "unknown operation 'compactify'"),
    "unknown parameter": (
        "compact",
        "main.t",
        {"targetFileSiz": "1MB"},
        "params.targetFileSiz: not a parameter of compact (did you mean targetFileSize?)",
    ),
    "bad value": ("compact", "main.t", {"targetFileSize": "big"}, "params.targetFileSize: "),
    "missing table": ("compact", "main.nope", {}, "table main.nope does not exist"),
    "no table": ("compact", None, {}, "compact needs a table (schema.table)"),
    "ingest without a path": ("ingest", "main.t", {}, "params.path: is required"),
}


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input_fails_with_a_message_and_commits_nothing(sqlite_lake: Lake, tmp_path, case: str) -> None:
    operation, table, params, message = BAD_INPUT[case]
    before, files = sqlite_lake.snapshot(), sqlite_lake.files()
    run = run_program(run_document(sqlite_lake.manifest(), operation, table, params, **NO_SPARK), str(tmp_path))
    assert run.exit_code == 1 and run.result["state"] == "Failed" and run.result["committedSnapshot"] is None
    assert message in run.result["message"] and "\n" not in run.result["message"], run.result["message"]
    assert "Traceback" not in run.stderr
    assert sqlite_lake.snapshot() == before and sqlite_lake.files() == files


def test_an_unreachable_catalog_fails_with_where_it_is(tmp_path) -> None:
    port = free_port()  # nothing listens there
    location = CatalogLocation(kind="postgres", host="127.0.0.1", port=port, database="lake", user="postgres")
    run = run_program(
        run_document(Lake(location, str(tmp_path) + "/").manifest(), "compact", "main.t", **NO_SPARK), str(tmp_path)
    )
    assert run.exit_code == 1 and run.result["state"] == "Failed"
    assert run.result["message"].startswith(
        f"compact main.t: cannot reach the catalog at postgres://127.0.0.1:{port}/lake: could not connect"
    )


def test_credentials_wrong_or_missing(role_location, data_path, tmp_path) -> None:
    lake = partitioned_table(role_location, data_path)
    doc = run_document(lake.manifest(secret="lake-pg"), "compact", "main.t", **NO_SPARK)
    wrong = run_program(
        doc, str(tmp_path), DUCKLAKE_CATALOG_USERNAME=ROLE, DUCKLAKE_CATALOG_PASSWORD="nope-" + PASSWORD
    )
    assert wrong.exit_code == 1 and "authentication failed (check the credentials)" in wrong.result["message"]
    assert "nope-" not in wrong.stdout + wrong.stderr
    assert_no_password(wrong.stdout, wrong.stderr)
    missing = run_program(doc, str(tmp_path), DUCKLAKE_CATALOG_USERNAME=ROLE)
    assert missing.exit_code == 1
    assert (
        "the catalog's credentials are in Secret 'lake-pg', but DUCKLAKE_CATALOG_PASSWORD is not set"
        in missing.result["message"]
    )


def test_a_bad_run_document_is_named_field_by_field(sqlite_lake: Lake, tmp_path) -> None:
    doc = run_document(sqlite_lake.manifest(), "compact", "main.t")
    doc["job"] = {"name": 7}
    doc["inProcessBelow"] = "lots"
    doc["catalog"]["spec"]["dataPath"] = "no-slash"
    run = run_program(doc, str(tmp_path))
    assert run.exit_code == 1
    message = run.result["message"]
    for problem in (
        "job.uid: is required",
        "job.name: 7 is not a string",
        "inProcessBelow: 'lots' is not a size",
        "catalog: spec.dataPath",
    ):
        assert problem in message, message
    not_json = tmp_path / "broken.json"
    not_json.write_text("{")
    for path, expected in (
        (str(not_json), "is not JSON"),
        (str(tmp_path / "missing.json"), "cannot read the run document"),
    ):
        proc = subprocess.run(command(path), capture_output=True, text=True, env=program_env())
        assert proc.returncode == 1 and expected in json.loads(proc.stdout)["message"], proc.stdout


def test_console_script_and_no_kubernetes_client(sqlite_lake: Lake, tmp_path) -> None:
    """``ducklake-job`` is the same program; asked to report to the API without the kubernetes
    client, it says so in one log line and reports on stdout."""
    doc = run_document(sqlite_lake.manifest(), "expireSnapshots", None, {"retainLast": 1}, **NO_SPARK)
    script = os.path.join(os.path.dirname(sys.executable), "ducklake-job")
    assert run_program(doc, str(tmp_path), argv=[script]).result["state"] == "Succeeded"
    hidden = "import sys; sys.modules['kubernetes'] = None; from ducklake_jobs.__main__ import main; sys.exit(main())"
    run = run_program(doc, str(tmp_path), argv=[sys.executable, "-c", hidden], DUCKLAKE_REPORT_TO_API="1")
    assert run.exit_code == 0 and run.result["state"] == "Succeeded"
    assert [line for line in run.stderr.splitlines() if line.strip()] == [
        "INFO ducklake_jobs.job_status: DUCKLAKE_REPORT_TO_API=1, but the kubernetes client is not installed "
        "(pip install 'ducklake-operator[controller]'): reporting on stdout only"
    ]


def test_a_program_on_spark_ends_with_its_jvm_and_leaves_nothing_in_its_tmpdir(sqlite_lake: Lake, tmp_path) -> None:
    """Its JVM went on for about 2 s after the program had exited, running its shutdown hooks,
    while a Local run waited for the program's whole process group to end. The program now
    kills the JVM it started once its result is out: when it exits, nothing of its group is
    left, and nothing of its session in its TMPDIR (Spark's local directory and the workers'
    sockets are the session's own, removed at exit)."""
    tmp = tempfile.mkdtemp(prefix="dl-", dir="/tmp")  # short: a socket's path there must fit in 107 bytes
    try:
        run_file = write_document(run_document(sqlite_lake.manifest(), "compact", "main.t"), str(tmp_path))
        with open(tmp_path / "out", "wb") as out, open(tmp_path / "err", "wb") as err:
            proc = subprocess.Popen(command(run_file), stdout=out, stderr=err, env=program_env(TMPDIR=tmp),
                                    start_new_session=True)  # fmt: skip
        assert proc.wait(300) == 0, (tmp_path / "err").read_text()[-3000:]
        assert proc.pid not in _live_groups(), "its JVM outlived it"
        result = json.loads((tmp_path / "out").read_text().splitlines()[-1])
        assert result["state"] == "Succeeded" and result["ranOn"] == "spark"
        assert os.listdir(tmp) == []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
