"""ingest as a DuckLakeJob run: the job program every launcher runs, on a run document, into a
partitioned table. Its snapshot carries the run's job and report and the files it ingested; the
files it writes carry the run's marker; the same document run again commits nothing more."""

from __future__ import annotations

import json
import subprocess
from contextlib import closing
from pathlib import Path

import pytest

from ducklake_operator.catalog import Catalog
from ducklake_operator.catalog.job_commits import find_job_commit
from ducklake_operator.model.job_marker import file_marker, is_marked, job_commit_report
from support.job_lakes import PARTS, Lake
from support.job_program import NO_SPARK, Placement, program_env, run_document, run_job_command, run_program


def test_ingest_through_the_job_program(sqlite_lake: Lake, tmp_path: Path) -> None:
    rows, before = sqlite_lake.rows(), sqlite_lake.snapshot()
    src = tmp_path / "in"
    src.mkdir()
    records = [{"id": 5000 + i, "part": i % PARTS, "v": f"n{i}", "w": i / 2} for i in range(30)]
    (src / "a.json").write_text("".join(json.dumps(r) + "\n" for r in records))
    doc = run_document(sqlite_lake.manifest(), "ingest", "main.t", {"path": str(src)}, **NO_SPARK)
    run = run_program(doc, str(tmp_path))
    assert run.exit_code == 0, run.stderr
    result = run.result
    assert result["state"] == "Succeeded" and result["committedSnapshot"] == before + 1 == sqlite_lake.snapshot()
    assert result["report"]["rowsWritten"] == 30 and result["report"]["filesWritten"] == PARTS  # a file per partition
    assert result["report"]["columnsAdded"] == ["+ add column w float64"]
    assert [phase for phase, _, _ in run.progress][:2] == ["planning", "reading"]
    got = sqlite_lake.rows()
    assert got[: len(rows)] == [r + (None,) for r in rows]
    assert sorted(r[1:] for r in got[len(rows) :]) == sorted((r["id"], r["part"], r["v"], r["w"]) for r in records)
    with closing(Catalog.open(sqlite_lake.location)) as catalog:
        commit = find_job_commit(catalog, doc["job"]["uid"])
        new = [f for f in catalog.state().table("main", "t").data_files if f.begin_snapshot == before + 1]
    assert commit is not None and commit.snapshot_id == result["committedSnapshot"]
    info = json.loads(commit.commit_extra_info or "")
    assert info["ducklakeJob"] == doc["job"] and [f[0] for f in info["ingest"]["files"]] == [str(src / "a.json")]
    marked = job_commit_report(commit.commit_extra_info, doc["job"]["uid"]) or {}
    assert marked["rowsWritten"] == 30 and marked["filesRead"] == 1
    assert len(new) == PARTS and all(is_marked(f.path, file_marker(doc["job"]["uid"])) for f in new)

    again = run_program(doc, str(tmp_path))  # the run landed: it says so, and ingests nothing twice
    assert again.exit_code == 0 and again.result["committedSnapshot"] == result["committedSnapshot"]
    assert sqlite_lake.snapshot() == before + 1 and sqlite_lake.rows() == got


@pytest.mark.parametrize("spark", [False, True], ids=["in-process", "spark"])
def test_a_bad_line_is_named_in_the_runs_message_and_nothing_is_committed(
    sqlite_lake: Lake, tmp_path: Path, spark: bool
) -> None:
    """The job program's message and ``ducklake run-job``'s error name the file and the line,
    from Spark tasks as in-process (Spark's own text was "An exception was thrown from the
    Python worker")."""
    before, files = sqlite_lake.snapshot(), sqlite_lake.files()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1}\n{"id": 2}\n{"id": 3, "v": \n{"id": 4}\n')
    where = f"{bad}:3: not JSON ("
    placement: Placement = {"in_process_below": None, "master": "local[1]"} if spark else NO_SPARK
    doc = run_document(sqlite_lake.manifest(), "ingest", "main.t", {"path": str(bad)}, **placement)
    run = run_program(doc, str(tmp_path))
    assert run.exit_code == 1 and run.result["state"] == "Failed", run.stderr
    assert where in run.result["message"] and "\n" not in run.result["message"], run.result["message"]

    cli = subprocess.run(
        run_job_command(sqlite_lake.manifest(), str(tmp_path), "ingest", "main.t", "-p", f"path={bad}")
        + ([] if spark else ["--no-spark"]),
        capture_output=True,
        text=True,
        env=program_env(),
        timeout=300,
    )
    error = [line for line in cli.stderr.splitlines() if line.startswith("error: ")]
    assert cli.returncode == 1 and len(error) == 1 and where in error[0], cli.stderr
    assert sqlite_lake.snapshot() == before and sqlite_lake.files() == files
