"""What the catalog knows of a run after the fact: a run SIGKILLed after writing its files and
before committing leaves files marked with its job, which DuckDB 1.5.5 and our orphan scan
see as orphans and ``delete_uncommitted_files`` removes (never a file a row refers to), while
DuckDB reads every row throughout; ``find_job_commit`` finds a run's snapshot and nothing
that merely mentions its uid."""

from __future__ import annotations

import json
import uuid
from contextlib import closing

import pytest

from ducklake_jobs.housekeeping import delete_orphan_files
from ducklake_operator.catalog import Catalog
from ducklake_operator.catalog.job_commits import delete_uncommitted_files, find_job_commit
from ducklake_operator.errors import TableNotFound
from ducklake_operator.model.job_marker import JobIdentity, commit_extra_info, file_marker, is_marked
from support import duck
from support.job_lakes import PARTS, Lake, new_lake
from support.job_program import NO_SPARK, paused_then_killed, run_document, run_program


def duckdb_orphans(lake: Lake) -> set[str]:
    con = duck.attach(lake.location, con=duck.connect())
    try:
        rows = con.execute("CALL ducklake_delete_orphaned_files('lk', dry_run => true, cleanup_all => true)")
        return {r[0] for r in rows.fetchall()}
    finally:
        con.close()


def test_a_killed_run_leaves_only_files_that_delete_uncommitted_files_removes(lake: Lake, tmp_path) -> None:
    rows, before, files = lake.rows(), lake.snapshot(), lake.files()
    doc = run_document(lake.manifest(), "compact", "main.t", **NO_SPARK)
    uid = doc["job"]["uid"]
    killed = paused_then_killed(doc, str(tmp_path), "before_commit")
    assert ("writing", PARTS, PARTS) in killed.progress  # written, not committed

    left = lake.files() - files
    assert len(left) == PARTS and all(is_marked(f, file_marker(uid)) for f in left)
    assert lake.snapshot() == before and lake.rows() == rows
    with closing(Catalog.open(lake.location)) as catalog:
        assert find_job_commit(catalog, uid) is None
        # orphans to DuckDB and to our own scan alike
        assert duckdb_orphans(lake) == left
        assert {
            lake.data_path + p for p in delete_orphan_files(catalog, older_than="0s", dry_run=True)["deleted"]
        } == left
        assert delete_uncommitted_files(catalog, "main.t", str(uuid.uuid4())) == 0  # another job's marker
        assert delete_uncommitted_files(catalog, "MAIN.T", uid) == PARTS
    assert lake.files() == files and lake.rows() == rows

    # the same run again lands; its files are the table's now, and nothing of it is deleted
    again = run_program(doc, str(tmp_path))
    assert again.exit_code == 0 and again.result["committedSnapshot"] == before + 1
    committed = lake.files() - files
    assert len(committed) == PARTS and all(is_marked(f, file_marker(uid)) for f in committed)
    with closing(Catalog.open(lake.location)) as catalog:
        assert delete_uncommitted_files(catalog, "main.t", uid) == 0
    assert lake.files() == files | committed and lake.rows() == rows


def test_find_job_commit_reads_only_the_jobs_own_marker(lake: Lake) -> None:
    uid, other = str(uuid.uuid4()), str(uuid.uuid4())
    mentions = [
        f"retried after {uid}",  # free text naming the uid
        commit_extra_info(JobIdentity(other, "other"), {"note": f"after {uid}"}),  # another job's, mentioning it
        '{"ducklakeJob": ' + json.dumps({"uid": uid}),  # truncated JSON
        commit_extra_info(JobIdentity(uid, "mine", "data", 2), {"filesWritten": 1}),  # the job's
        commit_extra_info(JobIdentity(uid, "mine", "data", 3), {"filesWritten": 2}),
    ]
    first = lake.snapshot() + 1
    con = duck.attach(lake.location)
    for i, info in enumerate(mentions):  # commits written by DuckDB, which stores extra info as given
        con.execute("BEGIN")
        con.execute(f"INSERT INTO lk.t VALUES ({10_000 + i}, 0, 'x')")
        con.execute("CALL lk.set_commit_message('someone', 'insert', extra_info => ?)", [info])
        con.execute("COMMIT")
    con.close()
    with closing(Catalog.open(lake.location)) as catalog:
        found = find_job_commit(catalog, uid)
        assert found is not None and found.snapshot_id == first + 3 and found.commit_extra_info == mentions[3]
        later = find_job_commit(catalog, uid, after_snapshot=first + 3)
        assert later is not None and later.snapshot_id == first + 4
        assert find_job_commit(catalog, uid, after_snapshot=first + 4) is None
        assert find_job_commit(catalog, other) is not None and find_job_commit(catalog, "%") is None


def test_table_names_match_as_duckdb_matches_them(location, data_path: str) -> None:
    """ASCII case only: ``Äpfel`` is found as ``ÄPFEL`` but is not ``äpfel`` (two tables to
    DuckDB), on both backends (SQLite's ``lower`` folds ASCII only, PostgreSQL's folds more)."""
    new_lake(location, data_path, ['CREATE TABLE lk."Äpfel"(id INTEGER)', 'INSERT INTO lk."Äpfel" VALUES (1)'])
    with closing(Catalog.open(location)) as catalog:
        assert delete_uncommitted_files(catalog, "main.Äpfel", str(uuid.uuid4())) == 0
        assert delete_uncommitted_files(catalog, "MAIN.ÄPFEL", str(uuid.uuid4())) == 0
        with pytest.raises(TableNotFound):
            delete_uncommitted_files(catalog, "main.äpfel", str(uuid.uuid4()))
