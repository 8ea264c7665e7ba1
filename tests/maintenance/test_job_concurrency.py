"""DuckDB writes while our jobs run: a delete that lands between the job's plan and its
commit is never lost (the job refuses and removes its files); an insert is kept."""

from __future__ import annotations

import pytest

from ducklake_jobs import file_rewrite
from ducklake_jobs import flush as flush_job
from ducklake_jobs import rewrite_deletes as rewrite_job
from ducklake_operator import storage
from ducklake_operator.catalog import Catalog
from ducklake_operator.errors import CommitConflict
from support import duck


@pytest.mark.parametrize(
    "where, deleted", [("id = 5", 1), ("id BETWEEN 0 AND 7", 8)], ids=["inlined-delete", "delete-file"]
)
def test_delete_during_rewrite_is_kept(catalog: Catalog, location, monkeypatch, where: str, deleted: int) -> None:
    con = duck.attach(location)
    con.execute("CREATE TABLE lk.t(id INTEGER)")
    con.execute("INSERT INTO lk.t SELECT * FROM range(100)")
    con.execute("DELETE FROM lk.t WHERE id >= 10")
    written: list[str] = []
    original = file_rewrite.rewrite_files  # what the job calls

    def rewrite_then_delete(task):
        out = original(task)
        written.append(task.output)
        con.execute(f"DELETE FROM lk.t WHERE {where}")  # lands while we are writing
        return out

    monkeypatch.setattr(rewrite_job, "rewrite_files", rewrite_then_delete)
    with pytest.raises(CommitConflict):
        rewrite_job.rewrite_deletes(catalog, "main", "t", delete_threshold=0.5)
    assert written and not any(storage.exists(p) for p in written)
    assert con.execute("SELECT count(*) FROM lk.t").fetchone() == (10 - deleted,)


def test_inlined_delete_during_flush_is_kept(catalog: Catalog, location, monkeypatch) -> None:
    con = duck.attach(location)
    con.execute("CREATE TABLE lk.t(id INTEGER)")
    con.execute("INSERT INTO lk.t VALUES (1), (2), (3)")
    written: list[str] = []
    original = flush_job._write_rows

    def write_then_delete(con_, work, *args):
        original(con_, work, *args)
        written.extend(work.planned)
        con.execute("DELETE FROM lk.t WHERE id = 2")

    monkeypatch.setattr(flush_job, "_write_rows", write_then_delete)
    with pytest.raises(CommitConflict, match=r"snapshot \d+ \(inlined_delete:1\) changed its input files"):
        flush_job.flush_inlined_data(catalog)
    assert written and not any(storage.exists(p) for p in written)
    assert con.execute("SELECT list(id ORDER BY id) FROM lk.t").fetchone() == ([1, 3],)
    monkeypatch.undo()
    assert flush_job.flush_inlined_data(catalog)["rowsFlushed"] == 3  # the deleted row goes with a delete file
    assert con.execute("SELECT list(id ORDER BY id) FROM lk.t").fetchone() == ([1, 3],)


def test_insert_during_flush_stays_inlined(catalog: Catalog, location, monkeypatch) -> None:
    con = duck.attach(location)
    con.execute("CREATE TABLE lk.t(id INTEGER)")
    con.execute("INSERT INTO lk.t VALUES (1), (2)")
    original = flush_job._write_rows

    def write_then_insert(*args):
        original(*args)
        con.execute("INSERT INTO lk.t VALUES (3)")

    monkeypatch.setattr(flush_job, "_write_rows", write_then_insert)
    assert flush_job.flush_inlined_data(catalog)["rowsFlushed"] == 2
    assert con.execute("SELECT list(id ORDER BY id), count(*) FROM lk.t").fetchone() == ([1, 2, 3], 3)
    t = catalog.state().table("main", "t")
    assert len(t.data_files) == 1 and t.data_files[0].record_count == 2  # the late row is still inlined


def test_job_plans_again_after_a_conflict(catalog: Catalog, location, monkeypatch) -> None:
    """Through the entry point, a compaction refused because DuckDB deleted from an input
    plans again from the new snapshot: the delete is kept and the other files are merged."""
    from ducklake_jobs import compact as compact_job
    from ducklake_jobs.job_template import run_operation

    con = duck.attach(location)
    con.execute("CREATE TABLE lk.t(id INTEGER)")
    for k in range(4):
        con.execute(f"INSERT INTO lk.t SELECT i FROM range({k * 50}, {k * 50 + 50}) t(i)")
    original, calls = file_rewrite.rewrite_files, []  # what the job calls

    def delete_once(task):
        calls.append(task)
        if len(calls) == 1:
            con.execute("DELETE FROM lk.t WHERE id BETWEEN 0 AND 20")  # a delete file on the first input
        return original(task)

    monkeypatch.setattr(compact_job, "rewrite_files", delete_once)
    result = run_operation(catalog, "compact", "main.t", {"applyDeletes": False})
    assert result["replanned"] == 1 and result["filesRead"] == 3  # the file with deletes is left out
    assert con.execute("SELECT count(*), min(id) FROM lk.t").fetchone() == (179, 21)
