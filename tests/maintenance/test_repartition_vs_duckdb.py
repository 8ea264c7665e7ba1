"""repartition through DuckDB 1.5.5: after the partitioning changed (none -> month(ts),
identity(a) -> identity(b), month(ts) -> year(ts), year(ts) -> day(ts)), the files written under the earlier spec
are rewritten into the current one. DuckDB reads the same rows and rowids now and at every
earlier snapshot still kept, each row lands in the partition DuckDB's own insert puts it in,
DuckDB prunes by the new partitioning, and DuckDB keeps working on the output (inserts,
deletes, its own merge and rewrite). DuckDB writing during the job loses nothing."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ducklake_jobs import parquet_writer, repartition_task
from ducklake_jobs import repartition as repartition_job
from ducklake_jobs.housekeeping import delete_orphan_files
from ducklake_jobs.job_template import run_operation
from ducklake_jobs.task_runners import run_on_spark
from ducklake_operator.api.load import parse_manifest
from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.catalog.job_commits import find_job_commit, job_commits
from ducklake_operator.errors import CommitConflict, SpecError, TableNotFound
from ducklake_operator.model.changes import PartitionColumn, SetPartitioning
from ducklake_operator.model.job_marker import file_marker
from ducklake_operator.model.partitioning import hive_directory
from support import duck, duck_inserter
from support.job_lakes import Lake, new_lake
from support.job_program import NO_SPARK, paused_then_killed, run_document, run_program
from support.manifests import manifest


@dataclass(frozen=True)
class Scenario:
    ts: str  # each row's timestamp, from i
    before: str  # the partitioning the first files are written under ('' for none)
    after: str
    keys: tuple[str, ...]  # hive directory names of the new partitioning
    prune: str  # a filter the new partitioning prunes by
    pruned_to: str  # the hive directory of the files the filter reads
    extra: tuple[str, ...] = ()  # statements after the first two inserts (schema changes)
    ts_name: str = "ts"  # the timestamp column's name after them


SCENARIOS = {
    # one year: months are the year's, so their files hold disjoint time ranges
    "none-to-month": Scenario(
        "TIMESTAMP '2024-01-01' + INTERVAL ((i * 7919) % 8760) HOUR",
        "",
        "month(ts)",
        ("month",),
        "ts >= '2024-03-01' AND ts < '2024-04-01'",
        "month=3",
    ),
    "identity-a-to-b": Scenario(
        "TIMESTAMP '2024-01-01' + INTERVAL (i) MINUTE",
        "a",
        "b",
        ("b",),
        "b = 'b1'",
        "b=b1",
        ("ALTER TABLE lk.t ADD COLUMN c INTEGER DEFAULT 5",),  # files of two schema versions
    ),
    # two years, into years: a coarser spec than the files' (each year's months merge)
    "month-to-year": Scenario(
        "TIMESTAMP '2023-01-01' + INTERVAL ((i * 7919) % 17520) HOUR",
        "month(ts)",
        "year(ts)",
        ("year",),
        "ts >= '2024-01-01' AND ts < '2025-01-01'",
        "year=2024",
    ),
    # one month: days are the month's
    "year-to-day": Scenario(
        "TIMESTAMP '2024-03-01' + INTERVAL ((i * 7919) % 744) HOUR",
        "year(ts)",
        "day(happened)",
        ("day",),
        "happened >= '2024-03-05' AND happened < '2024-03-06'",
        "day=5",
        ("ALTER TABLE lk.t RENAME COLUMN ts TO happened",),  # the key column, renamed: files of both names
        "happened",
    ),
}


def insert(s: Scenario, lo: int, hi: int, ts: str | None = None) -> str:
    return (
        f"INSERT INTO lk.t (id, {ts or s.ts_name}, a, b) SELECT i, {s.ts}, i % 4, 'b' || (i % 3) "
        f"FROM range({lo}, {hi}) t(i)"
    )


def workload(s: Scenario) -> tuple[list[str], list[str]]:
    """Statements before and after the partitioning changes: files with delete files, inlined
    deletions, an update's file (row ids embedded), later deletes on old and new files."""
    first = ["CREATE TABLE lk.t(id INTEGER, ts TIMESTAMP, a INTEGER, b VARCHAR)"]
    first += [f"ALTER TABLE lk.t SET PARTITIONED BY ({s.before})"] if s.before else []
    first += [insert(s, k * 400, k * 400 + 400, "ts") for k in range(2)]
    first += [*s.extra, *(insert(s, k * 400, k * 400 + 400) for k in range(2, 4))]
    first += ["DELETE FROM lk.t WHERE id % 7 = 0"]  # delete files: expired below, so dropped
    then = [
        "DELETE FROM lk.t WHERE id IN (1, 401)",  # inlined deletions: expired too
        "UPDATE lk.t SET b = 'upd' WHERE id BETWEEN 100 AND 160",
        f"ALTER TABLE lk.t SET PARTITIONED BY ({s.after})",
        insert(s, 2000, 2300),  # under the new spec already
        "DELETE FROM lk.t WHERE id % 11 = 0",  # after the change, on old and new files
    ]
    return first, then


def build(location: CatalogLocation, data_path: str, s: Scenario) -> int:
    """The table, with every snapshot before the update expired (so the rows deleted until then,
    and the update's old versions, are invisible everywhere); returns the oldest snapshot left."""
    Catalog.create(location, data_path).close()
    first, then = workload(s)
    duck.run_workload(location, first + then[:1])
    with closing(Catalog.open(location)) as catalog:
        oldest = catalog.snapshot().snapshot_id + 1
        duck.run_workload(location, then[1:])
        run_operation(catalog, "expireSnapshots", None, {"versions": list(range(oldest))})
    return oldest


def observe(location: CatalogLocation) -> dict[str, Any]:
    con = duck.attach(location, con=duck.connect())
    try:
        snapshots = [r[0] for r in con.execute("SELECT snapshot_id FROM ducklake_snapshots('lk')").fetchall()]
        return {
            "now": con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall(),
            "agg": con.execute("SELECT count(*), min(id), max(id), min(b), max(b) FROM lk.t").fetchone(),
            "history": {
                v: con.execute(f"SELECT rowid, * FROM lk.t AT (VERSION => {v}) ORDER BY rowid").fetchall()
                for v in snapshots
            },
        }
    finally:
        con.close()


def files_read(con: Any, where: str) -> int:
    plan = con.execute(f"EXPLAIN ANALYZE SELECT count(*) FROM lk.t WHERE {where}").fetchall()[0][1]
    (line,) = [line for line in plan.splitlines() if "Total Files Read" in line]
    return int(line.split(":")[1].strip(" │"))


def hive_dirs(con: Any, table: str) -> dict[int, str]:
    """id -> the hive directory of the file holding it."""
    return {
        i: os.path.basename(os.path.dirname(f))
        for i, f in con.execute(f"SELECT id, filename FROM lk.{table}").fetchall()
    }


def current_spec(con: Any) -> int:
    return con.execute(
        "SELECT p.partition_id FROM __ducklake_metadata_lk.ducklake_partition_info p "
        "JOIN __ducklake_metadata_lk.ducklake_table t ON t.table_id = p.table_id AND t.table_name = 't' "
        "WHERE p.end_snapshot IS NULL AND t.end_snapshot IS NULL"
    ).fetchone()[0]


def partition_rows(con: Any) -> list[tuple[str, tuple[str | None, ...], int | None]]:
    """Every live data file of lk.t: (path, partition values, partition id)."""
    rows = con.execute(
        "SELECT f.path, list(v.partition_value ORDER BY v.partition_key_index), f.partition_id "
        "FROM __ducklake_metadata_lk.ducklake_data_file f "
        "JOIN __ducklake_metadata_lk.ducklake_table t ON t.table_id = f.table_id AND t.table_name = 't' "
        "AND t.end_snapshot IS NULL "
        "LEFT JOIN __ducklake_metadata_lk.ducklake_file_partition_value v ON v.data_file_id = f.data_file_id "
        "WHERE f.end_snapshot IS NULL GROUP BY ALL"
    ).fetchall()
    return [(path, tuple(values or ()), pid) for path, values, pid in rows]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_repartition_through_duckdb(make_location, tmp_path, kind: str, scenario: str) -> None:
    s = SCENARIOS[scenario]
    location = make_location(kind)
    oldest = build(location, str(tmp_path / "data") + "/", s)
    before = observe(location)
    con = duck.attach(location)
    read_before = files_read(con, s.prune)
    spec = current_spec(con)
    old_files = [path for path, _, pid in partition_rows(con) if pid != spec]
    con.close()

    result = run_operation(Catalog.open(location), "repartition", "main.t", {})
    assert result["committedSnapshot"] == result["committedSnapshots"][0] and result["filesLeft"] == 0
    assert result["partitionedBy"] == s.after and result["filesRead"] == len(old_files) >= 5
    # rows deleted at or before the oldest snapshot (the update's) are gone: by the first
    # delete, the inlined deletions and the update; later deletions are carried over
    dropped = sum(1 for i in range(1600) if i % 7 == 0) + 2 + sum(1 for i in range(100, 161) if i % 7)
    assert oldest > 2 and result["deletedRowsDropped"] == dropped
    assert result["deleteFilesWritten"] > 0

    after = observe(location)
    assert after["now"] == before["now"] and after["agg"] == before["agg"]
    assert list(after["history"]) == list(before["history"]) + [result["committedSnapshot"]]
    for v, rows in before["history"].items():
        assert after["history"][v] == rows, v

    con = duck.attach(location)
    # every file is under the new spec; its values are its hive directory's
    live = partition_rows(con)
    assert {pid for _, _, pid in live} == {spec}
    for path, values, _ in live:
        assert os.path.dirname(path) == hive_directory(list(s.keys), values), path
    # each row is in the partition DuckDB's own insert puts it in
    con.execute("CREATE TABLE lk.u AS SELECT * FROM lk.t LIMIT 0")
    con.execute(f"ALTER TABLE lk.u SET PARTITIONED BY ({s.after})")
    con.execute("INSERT INTO lk.u SELECT * FROM lk.t")
    assert hive_dirs(con, "t") == hive_dirs(con, "u")
    # DuckDB prunes by the new partitioning: it reads that partition's files only
    read_after = files_read(con, s.prune)
    assert read_after == sum(1 for path, _, _ in live if os.path.dirname(path) == s.pruned_to) < read_before
    con.close()
    assert run_operation(Catalog.open(location), "repartition", "main.t", {})["nothingToDo"].startswith(
        f"every live data file is written under the table's current partitioning ({s.after})"
    )

    con = duck.attach(location, con=duck.connect())  # DuckDB keeps working on the output
    con.execute(insert(s, 5000, 5100))
    con.execute("DELETE FROM lk.t WHERE id % 13 = 0")
    con.execute("CALL ducklake_merge_adjacent_files('lk')")
    con.execute("CALL ducklake_rewrite_data_files('lk', 't', delete_threshold => 0.01)")
    expected = sum(1 for r in before["now"] if r[1] % 13) + sum(1 for i in range(5000, 5100) if i % 13)
    assert con.execute("SELECT count(*), count(DISTINCT rowid) FROM lk.t").fetchone() == (expected, expected)
    con.close()
    after_merge = observe(location)
    for v, rows in before["history"].items():
        assert after_merge["history"][v] == rows, v


def test_repartition_on_spark_in_batches(make_location, tmp_path) -> None:
    """Spark local mode, several batches: each commits a snapshot of its own, and every one
    of them reads the same rows."""
    s = SCENARIOS["none-to-month"]
    location = make_location("sqlite")
    build(location, str(tmp_path / "data") + "/", s)
    before = observe(location)
    catalog = Catalog.open(location)
    sizes = sorted(f.file_size_bytes for f in catalog.state().table("main", "t").data_files)
    result = run_operation(catalog, "repartition", "main.t", {"maxBytesPerCommit": sizes[-1] * 2}, runner=run_on_spark)
    assert result["ranOn"] == "spark" and result["filesRead"] == 5 and result["filesLeft"] == 0
    assert result["batches"] == len(result["committedSnapshots"]) >= 2
    after = observe(location)
    assert after["now"] == before["now"]
    for v, rows in before["history"].items():
        assert after["history"][v] == rows, v
    for v in result["committedSnapshots"]:
        assert after["history"][v] == before["now"], v
    assert delete_orphan_files(catalog, older_than="0s")["deleted"] == []


@pytest.mark.parametrize("sorted_by", ["", "id DESC"])
def test_bucket_and_timestamptz_keys(make_location, tmp_path, sorted_by: str) -> None:
    """bucket(N) takes DuckDB's murmur3_32 (the ducklake extension); hour of a TIMESTAMPTZ is
    computed in UTC, as DuckDB computes it in a UTC session. Directories and the catalog's
    partition values are DuckDB's, whether the partitioned COPY wrote the files or (sorted)
    one per partition."""
    location = make_location("sqlite")
    Catalog.create(location, str(tmp_path / "data") + "/").close()
    con = duck.attach(location)
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE TABLE lk.t(id INTEGER, s VARCHAR, tz TIMESTAMPTZ)")
    con.execute(
        "INSERT INTO lk.t SELECT i, 's' || i, TIMESTAMPTZ '2024-03-01 00:00:00+00' + INTERVAL (i * 7) HOUR "
        "FROM range(60) t(i)"
    )
    con.execute("ALTER TABLE lk.t SET PARTITIONED BY (bucket(4, s), hour(tz))")
    if sorted_by:
        con.execute(f"ALTER TABLE lk.t SET SORTED BY ({sorted_by})")
    rows = con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall()
    result = run_operation(Catalog.open(location), "repartition", "main.t", {})
    assert result["partitionedBy"] == "bucket(4, s), hour(tz)" and result["filesRead"] == 1
    assert result["unsortedFiles"] == 0
    assert con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall() == rows
    con.execute("CREATE TABLE lk.u AS SELECT * FROM lk.t LIMIT 0")
    con.execute("ALTER TABLE lk.u SET PARTITIONED BY (bucket(4, s), hour(tz))")
    con.execute("INSERT INTO lk.u SELECT * FROM lk.t")

    def directories(table: str) -> dict[int, str]:
        found = con.execute(f"SELECT id, filename FROM lk.{table}").fetchall()
        return {i: "/".join(f.split("/")[-3:-1]) for i, f in found}  # bucket=<b>/hour=<h>

    def partition_values(table: str) -> dict[int, list[tuple[int, str]]]:
        """Each row's file's values in the catalog, by the row's id."""
        found = con.execute(
            f"SELECT r.id, v.partition_key_index, v.partition_value FROM lk.{table} r "
            "JOIN __ducklake_metadata_lk.ducklake_data_file f ON r.filename LIKE '%/' || f.path "
            "JOIN __ducklake_metadata_lk.ducklake_file_partition_value v USING (data_file_id) ORDER BY ALL"
        ).fetchall()
        by_row: dict[int, list[tuple[int, str]]] = defaultdict(list)
        for i, key, value in found:
            by_row[i].append((key, value))
        return dict(by_row)

    assert directories("t") == directories("u") and len(set(directories("t").values())) > 4
    assert partition_values("t") == partition_values("u") and len(partition_values("t")) == 60


def repartitioned_lake(tmp_path: Path) -> Lake:
    """Three files of main.t, then partitioned by b: each file a batch of its own at
    maxBytesPerCommit 1."""
    return new_lake(
        CatalogLocation(kind="sqlite", path=str(tmp_path / "c.sqlite")),
        str(tmp_path / "data") + "/",
        ["CREATE TABLE lk.t(id INTEGER, b VARCHAR)"]
        + [f"INSERT INTO lk.t SELECT i, 'b' || (i % 3) FROM range({k * 100}, {k * 100 + 100}) t(i)" for k in range(3)]
        + ["ALTER TABLE lk.t SET PARTITIONED BY (b)"],
    )


def test_through_the_job_program_in_batches(tmp_path) -> None:
    """What a DuckLakeJob runs: the program reports each batch's progress and the last batch's
    snapshot; every file it wrote carries the job's marker; run again, it runs nothing."""
    lake = repartitioned_lake(tmp_path)
    rows, before = lake.rows(), lake.snapshot()
    doc = run_document(lake.manifest(), "repartition", "main.t", {"maxBytesPerCommit": 1}, **NO_SPARK)
    run = run_program(doc, str(tmp_path))
    assert run.exit_code == 0, run.stderr
    assert run.result["committedSnapshot"] == before + 3 == lake.snapshot() and lake.rows() == rows
    assert run.result["report"]["committedSnapshots"] == [before + 1, before + 2, before + 3]
    assert [p for p in run.progress if p[0] == "committing"] == [("committing", 3, 3)] * 3
    marker = file_marker(doc["job"]["uid"])
    assert all(marker in path for path, _, _ in partition_rows(duck.attach(lake.location)))
    again = run_program(doc, str(tmp_path))
    assert again.exit_code == 0 and "not run again" in again.result["message"] and lake.snapshot() == before + 3


def test_a_run_killed_between_batches_is_finished_by_its_rerun(tmp_path) -> None:
    """Killed after its first batch committed, the run has not landed: the catalog says so
    (``find_job_commit`` finds no last commit, ``job_commits`` the first), and running the
    same job again does the rest, once."""
    lake = repartitioned_lake(tmp_path)
    rows, before = lake.rows(), lake.snapshot()
    doc = run_document(lake.manifest(), "repartition", "main.t", {"maxBytesPerCommit": 1}, **NO_SPARK)
    uid = doc["job"]["uid"]
    paused_then_killed(doc, str(tmp_path), "after_commit")
    assert lake.snapshot() == before + 1 and lake.rows() == rows
    with closing(Catalog.open(lake.location)) as catalog:
        assert find_job_commit(catalog, uid) is None
        assert [s.snapshot_id for s in job_commits(catalog, uid)] == [before + 1]
    rerun = run_program(doc, str(tmp_path))
    assert rerun.exit_code == 0, rerun.stderr
    assert rerun.result["committedSnapshot"] == lake.snapshot() == before + 3 and lake.rows() == rows
    with closing(Catalog.open(lake.location)) as catalog:
        landed = find_job_commit(catalog, uid)
        assert landed is not None and landed.snapshot_id == before + 3
    again = run_program(doc, str(tmp_path))
    assert "not run again" in again.result["message"] and lake.snapshot() == before + 3


def test_inlined_rows_stay_until_flushed(catalog: Catalog, location) -> None:
    """Inlined rows have no partition: they stay inlined, and are repartitioned once a flush
    wrote them under the spec of their layout."""
    con = duck.attach(location)
    con.execute("CREATE TABLE lk.t(id INTEGER, b VARCHAR)")
    con.execute("INSERT INTO lk.t SELECT i, 'b' || (i % 3) FROM range(100) t(i)")
    con.execute("INSERT INTO lk.t VALUES (1000, 'b1'), (1001, 'b2')")  # inlined
    con.execute("ALTER TABLE lk.t SET PARTITIONED BY (b)")
    rows = con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall()
    result = run_operation(catalog, "repartition", "main.t", {})
    assert result["filesRead"] == 1 and result["filesWritten"] == 3
    assert con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall() == rows
    con.execute("CALL ducklake_flush_inlined_data('lk')")  # written unpartitioned: the spec of their layout
    again = run_operation(catalog, "repartition", "main.t", {})
    assert again["filesRead"] == 1 and again["rowsWritten"] == 2
    assert con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall() == rows
    assert {os.path.dirname(p) for p, _, _ in partition_rows(con)} == {"b=b0", "b=b1", "b=b2"}


def test_nothing_to_do(catalog: Catalog, location) -> None:
    con = duck.attach(location)
    con.execute("CREATE TABLE lk.t(id INTEGER, b VARCHAR)")
    con.execute("INSERT INTO lk.t SELECT i, 'b' || (i % 3) FROM range(100) t(i)")
    latest = catalog.snapshot().snapshot_id
    result = run_operation(catalog, "repartition", "main.t", {})
    assert result["committedSnapshot"] is None and result["filesWritten"] == 0
    assert (
        result["nothingToDo"]
        == "every live data file is written under the table's current partitioning (unpartitioned)"
    )
    con.execute("ALTER TABLE lk.t SET PARTITIONED BY (b)")
    con.execute("INSERT INTO lk.t SELECT i, 'b' || (i % 3) FROM range(100, 200) t(i)")
    dry = run_operation(catalog, "repartition", "main.t", {"dryRun": True})
    assert dry["filesRead"] == 1 and [len(g["files"]) for b in dry["plan"] for g in b["groups"]] == [1]
    assert catalog.snapshot().snapshot_id == latest + 2  # the dry run committed nothing
    con.execute("ALTER TABLE lk.t SET PARTITIONED BY (id)")
    con.execute("ALTER TABLE lk.t SET PARTITIONED BY (b)")  # back to the same keys: files stay as they are
    assert run_operation(catalog, "repartition", "main.t", {"dryRun": True})["filesRead"] == 1


def test_bad_input(catalog: Catalog) -> None:
    """partitionBy naming a column the table does not have is refused by the manifest loader,
    with its field path; a table that does not exist by the job."""
    doc = manifest(
        "DuckLakeTable",
        "t",
        {
            "catalogRef": {"name": "lake"},
            "columns": [{"name": "id", "type": "int32"}],
            "partitionBy": [{"column": "ts", "transform": "month"}],
        },
    )
    with pytest.raises(SpecError, match=r"spec\.partitionBy\[0\]\.column: 'ts' is not a top-level column of the table"):
        parse_manifest(doc)
    with pytest.raises(TableNotFound, match="table main.nope does not exist"):
        run_operation(catalog, "repartition", "main.nope", {})
    with pytest.raises(SpecError, match=r"params.maxBytesPerCommit: 'lots' is not a size"):
        run_operation(catalog, "repartition", "main.t", {"maxBytesPerCommit": "lots"})


# ------------------------------------------------------------------ concurrent DuckDB writers

DURING = {
    # an input gets a delete file, or inlined deletions: the batch is refused and planned again
    "delete-file": ("DELETE FROM lk.t WHERE id BETWEEN 0 AND 40", 1, set(range(41))),
    "inlined-delete": ("DELETE FROM lk.t WHERE id = 5", 1, {5}),
    # an insert is kept (it is written under the new spec, no conflict)
    "insert": ("INSERT INTO lk.t SELECT i, 'b' || (i % 3), i % 2 FROM range(1000, 1050) t(i)", 0, set()),
    # the partitioning changed again: the batch is refused, the next plan is by the newest spec
    "repartitioned": ("ALTER TABLE lk.t SET PARTITIONED BY (g)", 1, set()),
}


@pytest.mark.parametrize("what", list(DURING))
def test_duckdb_writes_during_the_job(catalog: Catalog, location, monkeypatch, what: str) -> None:
    sql, replanned, deleted = DURING[what]
    con = duck.attach(location)
    con.execute("CREATE TABLE lk.t(id INTEGER, b VARCHAR, g INTEGER)")
    for k in range(3):
        con.execute(f"INSERT INTO lk.t SELECT i, 'b' || (i % 3), i % 2 FROM range({k * 100}, {k * 100 + 100}) t(i)")
    con.execute("ALTER TABLE lk.t SET PARTITIONED BY (b)")
    original, calls = repartition_task.write_partition_task, []

    def write_then_duckdb(task):
        calls.append(task)
        written = original(task)
        if len(calls) == 1:
            con.execute(sql)  # lands while the job writes
        return written

    monkeypatch.setattr(repartition_job, "write_partition_task", write_then_duckdb)
    expected = con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall()
    result = run_operation(catalog, "repartition", "main.t", {})
    assert result.get("replanned", 0) == replanned and result["filesLeft"] == 0
    now = con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall()
    after_write = (
        duck.attach(location, con=duck.connect()).execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall()
    )
    assert now == after_write
    if what == "insert":
        assert now[: len(expected)] == expected and len(now) == len(expected) + 50
    else:  # the deletion is kept, nothing else is lost
        assert now == [r for r in expected if r[1] not in deleted]
    if what == "repartitioned":
        assert {os.path.dirname(p).split("=")[0] for p, _, _ in partition_rows(con)} == {"g"}
    assert delete_orphan_files(catalog, older_than="0s")["deleted"] == []  # the refused attempt's files went


def test_a_batch_refused_every_time_commits_nothing(catalog: Catalog, location, monkeypatch) -> None:
    con = duck.attach(location)
    con.execute("CREATE TABLE lk.t(id INTEGER, b VARCHAR)")
    con.execute("INSERT INTO lk.t SELECT i, 'b' || (i % 3) FROM range(300) t(i)")
    con.execute("ALTER TABLE lk.t SET PARTITIONED BY (b)")
    original = repartition_task.write_partition_task
    deletes = iter(range(300))

    def write_then_delete(task):
        con.execute(f"DELETE FROM lk.t WHERE id = {next(deletes)}")
        return original(task)

    monkeypatch.setattr(repartition_job, "write_partition_task", write_then_delete)
    latest = catalog.snapshot().snapshot_id
    with pytest.raises(
        CommitConflict, match=r"repartition of main\.t: snapshot \d+ \(inlined_delete:1\) changed its input"
    ):
        repartition_job.repartition(catalog, "main", "t")
    changes = [s.changes_made for s in catalog.snapshots() if s.snapshot_id > latest]
    assert changes and all(c == "inlined_delete:1" for c in changes)  # only DuckDB's deletes committed
    assert con.execute("SELECT count(*) FROM lk.t").fetchone() == (300 - len(changes),)
    assert delete_orphan_files(catalog, older_than="0s")["deleted"] == []


def test_a_concurrent_duckdb_writer_loses_no_row(make_location, tmp_path) -> None:
    """A DuckDB process inserting in a loop (files and inlined rows) while the partitioning
    changes back and forth and repartition jobs follow it: every insert DuckDB says committed
    is in the table afterwards, the rows before are intact, and after a last job every file
    is under the current partitioning. The partitioning changes as a DuckLakeTable's
    ``partitionBy`` does, by the operator's commit: DuckDB's own ALTER ... SET PARTITIONED BY
    conflicts with every concurrent insert and never got through this writer (20 tries)."""
    location = make_location("postgres")
    initial = [f"INSERT INTO lk.t SELECT 0, i % 10, i FROM range({k * 300}, {k * 300 + 300}) t(i)" for k in range(3)]
    new_lake(location, str(tmp_path / "data") + "/", ["CREATE TABLE lk.t(w INTEGER, i INTEGER, r BIGINT)", *initial])
    stop = tmp_path / "stop"  # the writer inserts until the jobs are done, however long they take
    writer = duck_inserter.start(location.duckdb_attach_target(), "t", 100_000, 9, stop_file=str(stop))
    jobs, con = 0, duck.attach(location)
    try:
        duck_inserter.wait_until_writing(writer, con, "t", 9)
        with closing(Catalog.open(location)) as catalog:
            while writer.poll() is None and jobs < 6:
                key = ("i", "w")[jobs % 2]
                catalog.commit(
                    [SetPartitioning(catalog.table("main", "t").table_id, "main.t", (PartitionColumn(key),))]
                )
                run_operation(catalog, "repartition", "main.t", {})
                jobs += 1
            stop.touch()
            out, _ = writer.communicate(timeout=300)
            run_operation(catalog, "repartition", "main.t", {})
    finally:
        if writer.poll() is None:
            writer.kill()
    committed = json.loads(out)["committed"]
    assert con.execute("SELECT count(*) FROM lk.t WHERE w = 9").fetchone() == (committed,)
    assert con.execute("SELECT count(*), sum(r), count(DISTINCT rowid) FROM lk.t WHERE w = 0").fetchone() == (
        900,
        sum(range(900)),
        900,
    )
    spec = current_spec(con)
    assert {pid for _, _, pid in partition_rows(con)} == {spec}
    con.close()
    assert jobs == 6 and committed > 0  # the writer was inserting all along


# ------------------------------------------------------------------ one pass


def test_each_row_is_read_once_and_written_once(catalog: Catalog, location, monkeypatch) -> None:
    """The job reads each source file in one task only, runs one partitioned COPY per task,
    and writes no Parquet file but its outputs: the files in a task's scratch after its COPY
    are the ones it stores, every row written once, and the report's bytes are the outputs'."""
    con = duck.attach(location)
    con.execute("CREATE TABLE lk.t(id INTEGER, b VARCHAR)")
    for k in range(4):
        con.execute(f"INSERT INTO lk.t SELECT i, 'b' || (i % 3) FROM range({k * 100}, {k * 100 + 100}) t(i)")
    con.execute("DELETE FROM lk.t WHERE id % 10 = 0")  # kept: no snapshot expired
    con.execute("ALTER TABLE lk.t SET PARTITIONED BY (b)")
    rows = con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall()
    sizes = sorted(f.file_size_bytes for f in catalog.state().table("main", "t").data_files)
    copies: list[tuple[list[str], int]] = []  # per COPY: every Parquet file in its scratch after it, rows written
    tasks: list[Any] = []
    write_partitioned, write_task = parquet_writer.write_partitioned, repartition_task.write_partition_task

    def spy_copy(con, select_sql, fields, partition_by, out_dir, *args):
        files = write_partitioned(con, select_sql, fields, partition_by, out_dir, *args)
        scratch = os.path.dirname(out_dir)
        found = [os.path.join(d, f) for d, _, fs in os.walk(scratch) for f in fs if f.endswith(".parquet")]
        assert sorted(found) == sorted(f.written.local_path for f in files)
        copies.append((found, sum(f.written.record_count for f in files)))
        return files

    def spy_task(task):
        tasks.append(task)
        return write_task(task)

    monkeypatch.setattr(repartition_task, "write_partitioned", spy_copy)
    monkeypatch.setattr(repartition_job, "write_partition_task", spy_task)
    result = run_operation(catalog, "repartition", "main.t", {"targetFileSize": sizes[-1] * 2})
    assert result["filesRead"] == 4 and len(tasks) == len(copies) == 2  # two source files per task
    sources = [s.path for task in tasks for s in task.sources]
    assert len(sources) == len(set(sources)) == 4  # each source in one task
    assert result["filesWritten"] == sum(len(found) for found, _ in copies) == 6  # 3 partitions per task
    assert result["rowsWritten"] == sum(n for _, n in copies) == 400  # deleted rows kept, for older snapshots
    live = catalog.state().table("main", "t").data_files
    assert result["bytesWritten"] == sum(f.file_size_bytes for f in live)
    assert result["deleteFilesWritten"] == 6
    assert con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall() == rows


def test_tasks_are_of_about_equal_size(catalog: Catalog, location, monkeypatch) -> None:
    """Five files of one size, at most four a task: runs of about equal size (3 and 2 on two
    cores), not the target's greedy 4 and 1, whose last task ran alone on one core."""
    con = duck.attach(location)
    con.execute("CREATE TABLE lk.t(id INTEGER, b VARCHAR)")
    for k in range(5):
        con.execute(f"INSERT INTO lk.t SELECT i, 'b' || (i % 3) FROM range({k * 100}, {k * 100 + 100}) t(i)")
    con.execute("ALTER TABLE lk.t SET PARTITIONED BY (b)")
    rows = con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall()
    sizes = [f.file_size_bytes for f in catalog.state().table("main", "t").data_files]
    tasks: list[Any] = []
    write_task = repartition_task.write_partition_task

    def spy_task(task):
        tasks.append(task)
        return write_task(task)

    monkeypatch.setattr(repartition_job, "write_partition_task", spy_task)
    result = run_operation(catalog, "repartition", "main.t", {"targetFileSize": max(sizes) * 4})
    counts = sorted(len(task.sources) for task in tasks)
    assert result["filesRead"] == sum(counts) == 5 and len(counts) > 1
    assert counts[-1] - counts[0] <= 1 and counts[-1] <= 4, counts
    assert con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall() == rows


def test_a_sorted_table_keeps_its_order(catalog: Catalog, location) -> None:
    """A partitioned COPY keeps no row order: a table with a sort order gets each partition
    written in it, with the rows deleted later at their positions there."""
    con = duck.attach(location)
    con.execute("CREATE TABLE lk.t(id INTEGER, b VARCHAR, v INTEGER)")
    for k in range(3):
        con.execute(
            f"INSERT INTO lk.t SELECT i, 'b' || (i % 3), (i * 7919) % 1000 FROM range({k * 5000}, {k * 5000 + 5000}) t(i)"
        )
    con.execute("DELETE FROM lk.t WHERE id % 10 = 0")
    con.execute("ALTER TABLE lk.t SET PARTITIONED BY (b)")
    con.execute("ALTER TABLE lk.t SET SORTED BY (v DESC)")
    before = con.execute("SELECT snapshot_id FROM ducklake_snapshots('lk') ORDER BY 1").fetchall()[-1][0]
    rows = con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall()
    result = run_operation(catalog, "repartition", "main.t", {})
    assert result["filesWritten"] == 3 and result["unsortedFiles"] == 0 and result["deleteFilesWritten"] == 3
    assert con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall() == rows
    for f in catalog.state().table("main", "t").data_files:
        path = str(Path(catalog.state().data_path) / "main" / "t" / f.path)
        values = [
            v for (v,) in con.execute(f"SELECT v FROM read_parquet('{path}') ORDER BY file_row_number").fetchall()
        ]
        assert values == sorted(values, reverse=True) and len(values) == 5000, f.path
    old = con.execute(f"SELECT count(*) FROM lk.t AT (VERSION => {before - 3})").fetchone()
    assert old == (15000,)  # the deleted rows, kept at their positions for the snapshots before the delete
