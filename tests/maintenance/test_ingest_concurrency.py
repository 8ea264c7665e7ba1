"""ingest while others write, and killed: DuckDB commits between the job's plan and its commit
(an insert lands beside it; a delete, which DuckDB's rules make an insert refuse, is committed
over; a new column makes it plan again; the same file ingested meanwhile refuses it), a DuckDB
writer running all along on PostgreSQL, and the job SIGKILLed before, during and after its
commit. No row is lost or doubled, no file of an uncommitted attempt stays referenced, and
DuckDB keeps writing and merging afterwards."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

import ducklake_jobs.ingest as job
import ducklake_jobs.ingest_tasks as tasks
from ducklake_jobs.housekeeping import delete_orphan_files
from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.errors import DuckLakeError
from support import duck
from support.ingest_runs import ingest
from support.job_program import catalog_manifest, killed_at, run_job_command

ROWS = 50  # per ingested file


def write_files(directory: Path, files: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for k in range(files):
        lines = [{"id": 1000 * (k + 1) + i, "v": f"f{k}", "extra": i * 0.5} for i in range(ROWS)]
        (directory / f"{k}.json").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return directory


def new_lake(location: CatalogLocation, tmp_path: Path) -> CatalogLocation:
    Catalog.create(location, str(tmp_path / "data") + "/").close()
    duck.run_workload(
        location, ["CREATE TABLE lk.t(id BIGINT, v VARCHAR)", "INSERT INTO lk.t VALUES (1, 'a'), (2, 'b')"]
    )
    return location


def ids(location: CatalogLocation) -> list[int]:
    con = duck.attach(location, con=duck.connect())
    try:
        return [r[0] for r in con.execute("SELECT id FROM lk.t ORDER BY id").fetchall()]
    finally:
        con.close()


def referenced_files(location: CatalogLocation) -> set[str]:
    catalog = Catalog.open(location)
    try:
        return {f.path for f in catalog.state().table("main", "t").data_files}
    finally:
        catalog.close()


def parquet_files(tmp_path: Path) -> set[str]:
    return {p.name for p in (tmp_path / "data").rglob("*.parquet")}


CONCURRENT = {
    "insert": ["INSERT INTO lk.t (id, v) VALUES (3, 'c')"],
    "delete": ["DELETE FROM lk.t WHERE id = 2"],
    "new column": ["ALTER TABLE lk.t ADD COLUMN other INTEGER"],
}


@pytest.mark.parametrize("what", list(CONCURRENT))
def test_a_commit_between_the_plan_and_the_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str) -> None:
    location = new_lake(CatalogLocation(kind="sqlite", path=str(tmp_path / "c.sqlite")), tmp_path)
    src = write_files(tmp_path / "in", 2)
    monkeypatch.setattr(job, "GROUP_BYTES", 1)  # a task per input file in each pass, and an output file:
    duck.run_workload(location, ["CALL lk.set_option('target_file_size', '1B', table_name => 't')"])
    written = tasks.write_files
    runs: list[int] = []
    one_at_a_time = threading.Lock()  # the in-process tasks run in threads

    def and_duckdb_commits(task: tasks.WriteTask) -> tasks.WriteResult:
        result = written(task)
        with one_at_a_time:
            if not runs:  # once: after the first task of the first attempt
                duck.run_workload(location, CONCURRENT[what])
            runs.append(1)
        return result

    monkeypatch.setattr(job, "write_files", and_duckdb_commits)
    report = ingest(location, src)
    before = {"insert": [1, 2, 3], "delete": [1], "new column": [1, 2]}[what]
    assert ids(location) == before + [1000 + i for i in range(ROWS)] + [2000 + i for i in range(ROWS)]
    # an insert does not stop it; a delete does by DuckDB's rules, and the same files commit on
    # the new snapshot; a new column makes the files wrong: they go, and the job plans again
    assert report.get("rebased", 0) == (what == "delete") and report.get("replanned", 0) == (what == "new column")
    assert len(runs) == (4 if what == "new column" else 2)
    assert parquet_files(tmp_path) >= {p.rsplit("/", 1)[-1] for p in referenced_files(location)}
    con = duck.attach(location, con=duck.connect())
    assert [r[0] for r in con.execute("DESCRIBE lk.t").fetchall()] == ["id", "v"] + (
        ["other", "extra"] if what == "new column" else ["extra"]
    )
    con.close()
    leftover = delete_orphan_files(Catalog.open(location), older_than="0s")["deleted"]
    assert leftover == []  # the first attempt's files were deleted when its commit was refused


def test_the_same_file_ingested_meanwhile_refuses_the_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    location = new_lake(CatalogLocation(kind="sqlite", path=str(tmp_path / "c.sqlite")), tmp_path)
    src = tmp_path / "in.json"  # no new column: the two inserts do not conflict by DuckDB's rules
    src.write_text("".join(json.dumps({"id": 1000 + i, "v": "x"}) + "\n" for i in range(ROWS)))
    written = tasks.write_files

    def and_another_ingest_commits(task: tasks.WriteTask) -> tasks.WriteResult:
        result = written(task)
        monkeypatch.undo()  # the other ingest runs unhooked
        ingest(location, src)
        return result

    monkeypatch.setattr(job, "write_files", and_another_ingest_commits)
    with pytest.raises(DuckLakeError, match=r"in\.json was ingested by snapshot 3, committed while this job ran"):
        ingest(location, src)
    assert ids(location) == [1, 2] + [1000 + i for i in range(ROWS)]  # once
    assert delete_orphan_files(Catalog.open(location), older_than="0s")["deleted"] == []


def test_a_duckdb_writer_all_along_loses_nothing(pg_location: CatalogLocation, tmp_path: Path) -> None:
    location = new_lake(pg_location, tmp_path)
    src = write_files(tmp_path / "in", 3)
    committed: list[int] = []
    failed: list[str] = []
    stop = threading.Event()

    def writer() -> None:
        con = duck.attach(location, con=duck.connect())
        i = 0
        while not stop.is_set() or i < 5:
            rows = [100_000 + 100 * i + r for r in range(3 if i % 2 else 12)]
            try:
                con.execute(f"INSERT INTO lk.t (id, v) SELECT unnest({rows}), 'w'")
                committed.extend(rows)
            except Exception as exc:  # a refused insert commits nothing: not a lost row
                failed.append(" ".join(str(exc).split()))
            i += 1
        con.close()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        report = ingest(location, src)
    finally:
        stop.set()
        thread.join()
    assert report["rowsWritten"] == 3 * ROWS
    ingested = [1000 * (k + 1) + i for k in range(3) for i in range(ROWS)]
    assert ids(location) == sorted([1, 2] + ingested + committed)
    assert all("conflict" in f.lower() for f in failed), failed  # only DuckDB's conflicts with the new column
    con = duck.attach(location, con=duck.connect())
    con.execute("INSERT INTO lk.t (id, v, extra) VALUES (7, 'after', 1.5)")
    con.execute("CALL ducklake_flush_inlined_data('lk')")
    con.execute("CALL ducklake_merge_adjacent_files('lk')")
    assert (
        con.execute("SELECT count(*), count(DISTINCT id) FROM lk.t").fetchone()
        == (len(committed) + len(ingested) + 3,) * 2
    )
    con.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("point, committed", [("before_commit", False), ("in_commit", False), ("after_commit", True)])
def test_killed_before_during_and_after_the_commit(
    make_location, tmp_path: Path, kind: str, point: str, committed: bool
) -> None:
    location = new_lake(make_location(kind), tmp_path)
    src = write_files(tmp_path / "in", 2)
    rows_before = duck.observe_table(location, "t")
    catalog = catalog_manifest(location, str(tmp_path / "data") + "/")
    args = ("ingest", "main.t", "--no-spark", "-p", f"path={src}")
    killed_at(point, run_job_command(catalog, str(tmp_path), *args), str(tmp_path))

    ingested = [1000 + i for i in range(ROWS)] + [2000 + i for i in range(ROWS)]
    assert ids(location) == [1, 2] + (ingested if committed else [])
    if not committed:  # every snapshot reads as before: no column, no row, no file
        assert duck.same_as_before(duck.observe_table(location, "t"), rows_before)
    orphans = delete_orphan_files(Catalog.open(location), older_than="0s")["deleted"]
    assert len(orphans) == (0 if committed else 1)  # the killed job's file, never committed
    if committed:
        with pytest.raises(DuckLakeError, match="already ingested"):
            ingest(location, src)
    else:
        assert ingest(location, src)["rowsWritten"] == 2 * ROWS  # nothing of the killed run counts
    con = duck.attach(location, con=duck.connect())
    con.execute("INSERT INTO lk.t (id, v) VALUES (9999, 'after')")
    con.execute("CALL ducklake_merge_adjacent_files('lk')")
    assert con.execute("SELECT count(*) FROM lk.t").fetchone() == (2 + 2 * ROWS + 1,)
    con.close()
