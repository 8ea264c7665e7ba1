"""SIGKILL each data-writing job (compact, rewriteDeletes, flushInlinedData, repartition) before, during
and after its commit: the table is consistent every time (DuckDB reads the same rows), and
the files that never got committed are orphans that deleteOrphanFiles removes. And lose
each job's COMMIT on the wire (rewriteColumnType and ingest too: their kills are tested
with their jobs): the job learns whether it landed."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ducklake_jobs.housekeeping import delete_orphan_files
from ducklake_jobs.job_template import run_operation
from ducklake_operator.catalog import Catalog
from ducklake_operator.errors import CatalogUnavailable
from support import duck
from support.job_program import catalog_manifest, killed_at, run_job_command
from support.pg_fault_proxy import Mode, PgFaultProxy

SETUP = {
    "compact": [f"INSERT INTO lk.t SELECT i, 'v' || i FROM range({k * 100}, {k * 100 + 100}) t(i)" for k in range(4)],
    "rewriteDeletes": [
        "INSERT INTO lk.t SELECT i, 'v' || i FROM range(0, 400) t(i)",
        "DELETE FROM lk.t WHERE id >= 10",
    ],
    "flushInlinedData": [
        "INSERT INTO lk.t VALUES (1, 'a'), (2, 'b')",
        "INSERT INTO lk.t VALUES (3, 'c')",
        "DELETE FROM lk.t WHERE id = 2",
    ],
    "repartition": [
        *(f"INSERT INTO lk.t SELECT i, 'v' || (i % 3) FROM range({k * 100}, {k * 100 + 100}) t(i)" for k in range(2)),
        "ALTER TABLE lk.t SET PARTITIONED BY (v)",
    ],
}
# files a committed run leaves referenced (live data files), and files an uncommitted run leaves behind
OUTCOME = {"compact": (1, 1), "rewriteDeletes": (1, 1), "flushInlinedData": (1, 2), "repartition": (3, 3)}


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("operation", list(SETUP))
@pytest.mark.parametrize("point, committed", [("before_commit", False), ("in_commit", False), ("after_commit", True)])
def test_kill_during_job(make_location, tmp_path, kind: str, operation: str, point: str, committed: bool) -> None:
    """On PostgreSQL a kill inside the commit leaves the server to roll the transaction back
    when the connection drops; on SQLite the journal does."""
    location = make_location(kind)
    data = str(tmp_path / "data") + "/"
    Catalog.create(location, data)
    con = duck.attach(location)
    con.execute("CREATE TABLE lk.t(id INTEGER, v VARCHAR)")
    for sql in SETUP[operation]:
        con.execute(sql)
    rows = con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall()
    files_before = len(Catalog.open(location).state().table("main", "t").data_files)
    con.close()
    args = (
        [operation]
        + (["main.t", "--no-spark"] if operation != "flushInlinedData" else [])
        + (["-p", "deleteThreshold=0.5"] if operation == "rewriteDeletes" else [])
    )
    killed_at(point, run_job_command(catalog_manifest(location, data), str(tmp_path), *args), str(tmp_path))

    catalog = Catalog.open(location)
    live_files, orphans_left = OUTCOME[operation]
    files = catalog.state().table("main", "t").data_files
    assert len(files) == (live_files if committed else files_before)
    con = duck.attach(location)
    assert con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall() == rows
    con.close()
    orphans = delete_orphan_files(catalog, older_than="0s")["deleted"]
    assert len(orphans) == (0 if committed else orphans_left)  # what the killed job wrote but never committed
    con = duck.attach(location, con=duck.connect())
    assert con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall() == rows
    con.execute("INSERT INTO lk.t VALUES (1000, 'after')")
    con.execute("CALL ducklake_flush_inlined_data('lk')")
    con.execute("CALL ducklake_merge_adjacent_files('lk')")
    assert con.execute("SELECT count(*) FROM lk.t").fetchone() == (len(rows) + 1,)


@pytest.mark.parametrize("operation", list(SETUP))
@pytest.mark.parametrize("mode", ["before", "after"])
def test_job_whose_commit_is_lost_on_the_wire(pg_server, pg_location, tmp_path, operation: str, mode: Mode) -> None:
    """The job's COMMIT to a PostgreSQL catalog is lost (a TCP proxy drops it before or
    after the server gets it): the job finds out which, and either reports its snapshot or
    fails cleanly with its files deleted. No orphans either way."""
    Catalog.create(pg_location, str(tmp_path / "data") + "/")
    duck.run_workload(pg_location, ["CREATE TABLE lk.t(id INTEGER, v VARCHAR)", *SETUP[operation]])
    con = duck.attach(pg_location)
    rows = con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall()
    con.close()
    direct = Catalog.open(pg_location)
    before = direct.snapshot().snapshot_id
    proxy = PgFaultProxy(pg_server.host, pg_server.port)
    proxied = Catalog.open(replace(pg_location, host="127.0.0.1", port=proxy.port))
    try:
        proxy.arm(mode)
        table = None if operation == "flushInlinedData" else "main.t"
        params = {"deleteThreshold": 0.5} if operation == "rewriteDeletes" else {}
        if mode == "after":
            report = run_operation(proxied, operation, table, params)
            assert report.get("committedSnapshot", report.get("committedSnapshots")) in (before + 1, [before + 1])
        else:
            with pytest.raises(CatalogUnavailable, match="was not committed"):
                run_operation(proxied, operation, table, params)
            assert direct.snapshot().snapshot_id == before
        assert proxy.fired.is_set()
    finally:
        proxied.close()
        proxy.close()
    assert delete_orphan_files(direct, older_than="0s")["deleted"] == []
    con = duck.attach(pg_location, con=duck.connect())
    assert con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall() == rows
    con.close()


def test_expiry_whose_commit_is_lost(pg_server, pg_location, tmp_path) -> None:
    """Housekeeping is not a snapshot commit: a lost COMMIT is a clear, retryable error, and
    running it again finishes the work."""
    Catalog.create(pg_location, str(tmp_path / "data") + "/")
    duck.run_workload(
        pg_location, ["CREATE TABLE lk.t(id INTEGER)"] + [f"INSERT INTO lk.t VALUES ({i})" for i in range(4)]
    )
    direct = Catalog.open(pg_location)
    snapshots = len(direct.snapshots())
    proxy = PgFaultProxy(pg_server.host, pg_server.port)
    proxied = Catalog.open(replace(pg_location, host="127.0.0.1", port=proxy.port))
    try:
        proxy.arm("before", marker=b"DELETE FROM ducklake_snapshot ")
        with pytest.raises(
            CatalogUnavailable, match="expireSnapshots: the catalog database failed: .*running it again is safe"
        ):
            run_operation(proxied, "expireSnapshots", None, {"retainLast": 1})
        assert proxy.fired.is_set() and len(direct.snapshots()) == snapshots  # nothing expired
        assert len(run_operation(proxied, "expireSnapshots", None, {"retainLast": 1})["expired"]) == snapshots - 1
    finally:
        proxied.close()
        proxy.close()
    assert len(direct.snapshots()) == 1


# the heavy jobs: what each does to the table, and how DuckDB reads it either way
HEAVY: dict[str, tuple[list[str], str]] = {
    "rewriteColumnType": (
        ["INSERT INTO lk.t SELECT i, (i * 7)::VARCHAR FROM range(0, 300) t(i)", "DELETE FROM lk.t WHERE id < 5"],
        "SELECT rowid, id, CAST(v AS VARCHAR) FROM lk.t ORDER BY rowid",
    ),
    "ingest": (
        ["INSERT INTO lk.t SELECT i, 'v' || i FROM range(0, 10) t(i)"],
        "SELECT rowid, id, v FROM lk.t ORDER BY rowid",
    ),
}


def _heavy_params(operation: str, tmp_path: Path) -> dict[str, Any]:
    if operation == "rewriteColumnType":
        return {"column": "v", "type": "int64"}
    source = tmp_path / "in.json"
    source.write_text("".join(json.dumps({"id": i, "v": f"new{i}", "extra": i * 0.5}) + "\n" for i in range(100, 150)))
    return {"path": str(source)}


@pytest.mark.parametrize("operation", list(HEAVY))
@pytest.mark.parametrize("mode", ["before", "after"])
def test_heavy_job_whose_commit_is_lost_on_the_wire(
    pg_server, pg_location, tmp_path, operation: str, mode: Mode
) -> None:
    """As above, for the jobs whose one snapshot also changes the table's columns (a column's
    type; ingest's evolved columns): landed means the new columns and all the rows, not landed
    means neither, and the job says which."""
    setup, select = HEAVY[operation]
    Catalog.create(pg_location, str(tmp_path / "data") + "/")
    duck.run_workload(pg_location, ["CREATE TABLE lk.t(id BIGINT, v VARCHAR)", *setup])
    con = duck.attach(pg_location)
    rows = con.execute(select).fetchall()
    columns = con.execute("SELECT column_name, column_type FROM (DESCRIBE lk.t)").fetchall()
    con.close()
    direct = Catalog.open(pg_location)
    before = direct.snapshot().snapshot_id
    params = _heavy_params(operation, tmp_path)
    proxy = PgFaultProxy(pg_server.host, pg_server.port)
    proxied = Catalog.open(replace(pg_location, host="127.0.0.1", port=proxy.port))
    try:
        proxy.arm(mode)
        if mode == "after":
            assert run_operation(proxied, operation, "main.t", params)["committedSnapshot"] == before + 1
        else:
            with pytest.raises(CatalogUnavailable, match="was not committed"):
                run_operation(proxied, operation, "main.t", params)
            assert direct.snapshot().snapshot_id == before
        assert proxy.fired.is_set()
    finally:
        proxied.close()
        proxy.close()
    assert delete_orphan_files(direct, older_than="0s")["deleted"] == []
    con = duck.attach(pg_location, con=duck.connect())
    now = con.execute(select).fetchall()
    types = con.execute("SELECT column_name, column_type FROM (DESCRIBE lk.t)").fetchall()
    con.close()
    if mode == "before":
        assert (now, types) == (rows, columns)
    elif operation == "rewriteColumnType":
        assert now == rows and types == [("id", "BIGINT"), ("v", "BIGINT")]
    else:
        assert now == rows + [(10 + i, 100 + i, f"new{100 + i}") for i in range(50)]
        assert types == [*columns, ("extra", "DOUBLE")]
