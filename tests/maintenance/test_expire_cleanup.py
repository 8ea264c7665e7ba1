"""Snapshot expiry and file cleanup, differential against DuckDB 1.5.5's own functions."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest

from ducklake_jobs.housekeeping import cleanup_files, delete_orphan_files, expire
from ducklake_operator.catalog import Catalog
from ducklake_operator.maintenance.expiry import parse_snapshot_time, plan_expiry
from ducklake_operator.model.durations import parse_duration
from support import duck
from support.dump import dump

WORKLOAD = [
    "CREATE TABLE lk.t(id INTEGER, v VARCHAR)",
    "INSERT INTO lk.t SELECT i, 'a' || i FROM range(100) t(i)",
    "INSERT INTO lk.t SELECT i, 'b' || i FROM range(100, 200) t(i)",
    "DELETE FROM lk.t WHERE id < 30",
    "DELETE FROM lk.t WHERE id BETWEEN 30 AND 40",  # rewrites the delete file
    "UPDATE lk.t SET v = 'u' WHERE id = 150",
    "CREATE TABLE lk.gone(x INTEGER)",
    "INSERT INTO lk.gone SELECT i FROM range(50) t(i)",
    "DROP TABLE lk.gone",
    "INSERT INTO lk.t SELECT i, 'c' || i FROM range(200, 300) t(i)",
    "CALL ducklake_merge_adjacent_files('lk')",
    "ALTER TABLE lk.t ADD COLUMN w INTEGER",
    "INSERT INTO lk.t VALUES (1000, 'x', 1)",
]


def build(location, data_path: str) -> None:
    duck.run_workload(location, WORKLOAD, data_path)


def rows(location) -> list[tuple]:
    con = duck.attach(location, con=duck.connect())
    try:
        return con.execute("SELECT * FROM lk.t ORDER BY id").fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("versions", [[1, 2, 3], [4, 5, 6, 7, 8, 9], list(range(1, 13))])
def test_expire_matches_duckdb(make_location, tmp_path, kind: str, versions: list[int]) -> None:
    theirs, ours = make_location(kind), make_location(kind)
    build(theirs, str(tmp_path / "a") + "/")
    build(ours, str(tmp_path / "b") + "/")
    before = rows(ours)
    con = duck.attach(theirs)
    con.execute(f"CALL ducklake_expire_snapshots('lk', versions => {versions})")
    con.close()
    catalog = Catalog.open(ours)
    latest = catalog.snapshot().snapshot_id
    result = expire(catalog, versions=versions)
    assert result["expired"] == [v for v in versions if v != latest] and result["dryRun"] is False
    a, b = dump(theirs), dump(ours)
    a.pop("ducklake_metadata"), b.pop("ducklake_metadata")
    for side in (a, b):  # a delete file holds its data file's path (a uuid): its size may differ by a byte
        side["ducklake_delete_file"] = [r[:9] + r[11:] for r in side.get("ducklake_delete_file", [])]
    for name in sorted(set(a) | set(b)):
        assert a.get(name) == b.get(name), name
    assert rows(ours) == before  # the current table is untouched
    # DuckDB can still work on it, and time travel to a kept snapshot works
    con = duck.attach(ours)
    con.execute("INSERT INTO lk.t VALUES (2000, 'after', 2)")
    con.execute(f"SELECT count(*) FROM lk.t AT (VERSION => {max(versions) + 1})").fetchone()


def test_dry_run_and_limits(catalog: Catalog, location) -> None:
    con = duck.attach(location)
    con.execute("CREATE TABLE lk.t(a INTEGER)")
    for i in range(5):
        con.execute(f"INSERT INTO lk.t VALUES ({i})")
    con.close()
    before = dump(location)
    planned = expire(catalog, older_than="0s", retain_last=2, dry_run=True)
    assert planned["dryRun"] and planned["expired"] == [0, 1, 2, 3, 4] and dump(location) == before
    assert expire(catalog, retain_last=100)["expired"] == []  # never the latest, keeps N
    with pytest.raises(Exception, match="olderThan and/or retainLast"):
        expire(catalog)


def test_plan_expiry_is_pure() -> None:
    now = datetime(2026, 1, 10, tzinfo=UTC)
    snaps = [(i, now - timedelta(days=10 - i)) for i in range(10)]
    assert plan_expiry(snaps, now=now, older_than=timedelta(days=5)).expire == (0, 1, 2, 3, 4)
    assert plan_expiry(snaps, now=now, older_than=timedelta(days=5), retain_last=7).expire == (0, 1, 2)
    assert plan_expiry(snaps, now=now, older_than=timedelta(days=0)).expire == tuple(range(9))  # never the latest
    assert parse_duration("3d") == timedelta(days=3) and parse_duration("2 days") == timedelta(days=2)
    assert parse_snapshot_time("2026-11-22 03:46:41.313055+00").tzinfo is not None


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_cleanup_deletes_scheduled_files_like_duckdb(make_location, tmp_path, kind: str) -> None:
    theirs, ours = make_location(kind), make_location(kind)
    dirs = {"a": str(tmp_path / "a") + "/", "b": str(tmp_path / "b") + "/"}
    build(theirs, dirs["a"])
    build(ours, dirs["b"])
    for location in (theirs, ours):
        con = duck.attach(location)
        con.execute("CALL ducklake_expire_snapshots('lk', versions => [1, 2, 3, 4, 5, 6])")
        con.close()

    def files(root: str) -> list[str]:
        return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)

    catalog = Catalog.open(ours)
    assert cleanup_files(catalog, older_than="1h")["deleted"] == []  # scheduled just now: within the grace period
    dry = cleanup_files(catalog, older_than="0s", dry_run=True)
    assert dry["deleted"] and all(os.path.exists(dirs["b"] + p) for p in dry["deleted"])
    result = cleanup_files(catalog, older_than="0s")
    con = duck.attach(theirs)
    con.execute("CALL ducklake_cleanup_old_files('lk', cleanup_all => true)")
    con.close()
    assert len(files(dirs["a"])) == len(files(dirs["b"])) and not any(
        os.path.exists(dirs["b"] + p) for p in result["deleted"]
    )
    assert (
        dump(ours)["ducklake_files_scheduled_for_deletion"]
        == []
        == dump(theirs)["ducklake_files_scheduled_for_deletion"]
    )
    assert rows(ours) == rows(theirs)


def test_orphans_are_found_only_under_the_data_path(catalog: Catalog, location, data_path: str, tmp_path) -> None:
    con = duck.attach(location)
    con.execute("CREATE TABLE lk.t(a INTEGER)")
    con.execute("INSERT INTO lk.t SELECT i FROM range(100) t(i)")
    con.close()
    orphan = os.path.join(data_path, "main", "t", "ducklake-orphan.parquet")
    with open(orphan, "wb") as fh:
        fh.write(b"PAR1")
    outside = tmp_path / "outside.parquet"
    outside.write_bytes(b"PAR1")
    os.symlink(outside, os.path.join(data_path, "main", "t", "link.parquet"))
    assert delete_orphan_files(catalog, older_than="1h")["deleted"] == []  # too young
    dry = delete_orphan_files(catalog, older_than="0s", dry_run=True)
    assert dry["deleted"] == ["main/t/ducklake-orphan.parquet"] and os.path.exists(orphan)
    delete_orphan_files(catalog, older_than="0s")
    assert not os.path.exists(orphan) and outside.exists()
    con = duck.attach(location, con=duck.connect())
    assert con.execute("SELECT count(*), sum(a) FROM lk.t").fetchone() == (100, 4950)  # referenced files untouched


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_orphans_match_duckdb(make_location, tmp_path, kind: str) -> None:
    """The files deleteOrphanFiles picks are the ones DuckDB's ducklake_delete_orphaned_files
    picks: stray Parquet files anywhere under the data path, never a data or delete file of
    any version, a scheduled file, or a file that is not Parquet."""
    location, data = make_location(kind), str(tmp_path / "data") + "/"
    con = duck.attach(location, data_path=data)
    con.execute("CREATE TABLE lk.t(a INTEGER)")
    for k in range(3):
        con.execute(f"INSERT INTO lk.t SELECT i FROM range({k * 100}, {k * 100 + 100}) t(i)")
    con.execute("DELETE FROM lk.t WHERE a < 50")  # a delete file
    con.execute("CALL ducklake_merge_adjacent_files('lk')")  # scheduled files
    con.execute("UPDATE lk.t SET a = -a WHERE a BETWEEN 200 AND 240")  # an ended file's successor
    for rel in (
        "main/t/ducklake-stray.parquet",
        "main/other/x.parquet",
        "y.parquet",
        "main/t/notes.txt",
        "main/t/z.puffin",
    ):
        os.makedirs(os.path.dirname(data + rel), exist_ok=True)
        with open(data + rel, "wb") as fh:
            fh.write(b"PAR1")
    theirs = {
        os.path.relpath(r[0], data)
        for r in con.execute(
            "SELECT * FROM ducklake_delete_orphaned_files('lk', dry_run => true, cleanup_all => true)"
        ).fetchall()
    }
    con.close()
    ours = set(delete_orphan_files(Catalog.open(location), older_than="0s", dry_run=True)["deleted"])
    assert ours == theirs == {"main/t/ducklake-stray.parquet", "main/other/x.parquet", "y.parquet"}
