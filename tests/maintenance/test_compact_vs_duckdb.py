"""compact vs DuckDB's ducklake_merge_adjacent_files on twin tables: same rows at every
snapshot, same rowids, same count/min/max, and DuckDB keeps working on our output."""

from __future__ import annotations

import pytest

from ducklake_jobs import file_rewrite
from ducklake_jobs.compact import compact
from ducklake_jobs.job_template import run_operation
from ducklake_jobs.task_runners import run_in_process, run_on_spark
from ducklake_operator.catalog import Catalog
from support import duck
from support.dump import dump

WORKLOAD = [
    "CALL lk.set_option('target_file_size', '1MB')",
    "CREATE TABLE lk.t(id INTEGER, v VARCHAR, f DOUBLE, s STRUCT(a INTEGER, b VARCHAR[]), d DATE)",
    *[
        f"INSERT INTO lk.t SELECT i, 'v' || i, i / 3, {{'a': i, 'b': ['x' || i]}}, DATE '2024-01-01' + i::INTEGER "
        f"FROM range({k * 40}, {k * 40 + 40}) t(i)"
        for k in range(4)
    ],
    "UPDATE lk.t SET v = 'upd' WHERE id = 130",  # an update: a file with embedded row ids
    "ALTER TABLE lk.t ALTER id SET TYPE BIGINT",  # promotion: new schema version
    *[
        f"INSERT INTO lk.t SELECT i, 'w' || i, NULL, NULL, NULL FROM range({k * 40}, {k * 40 + 40}) t(i)"
        for k in range(4, 7)
    ],
    "DELETE FROM lk.t WHERE id BETWEEN 200 AND 210",  # this file keeps its delete file: not merged
]


def build(location, data_path: str) -> None:
    duck.run_workload(location, WORKLOAD, data_path)


def observe(location) -> dict:
    con = duck.attach(location, con=duck.connect())
    try:
        latest = duck.scalar(con, "SELECT max(snapshot_id) FROM ducklake_snapshots('lk')")
        return {
            "now": con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall(),
            "agg": con.execute("SELECT count(*), min(id), max(id), min(v), max(v), max(d) FROM lk.t").fetchone(),
            "history": {
                v: con.execute(f"SELECT rowid, * FROM lk.t AT (VERSION => {v}) ORDER BY rowid").fetchall()
                for v in range(2, latest + 1)
            },
        }
    finally:
        con.close()


@pytest.mark.parametrize(
    "kind, runner",
    [("sqlite", run_in_process), ("postgres", run_in_process), ("sqlite", run_on_spark)],
    ids=["sqlite", "postgres", "sqlite-spark"],
)
def test_compact_matches_merge_adjacent_files(make_location, tmp_path, kind: str, runner) -> None:
    theirs, ours = make_location(kind), make_location(kind)
    build(theirs, str(tmp_path / "a") + "/")
    build(ours, str(tmp_path / "b") + "/")
    before = observe(ours)
    con = duck.attach(theirs)
    con.execute("CALL ducklake_merge_adjacent_files('lk')")
    con.close()
    result = compact(Catalog.open(ours), "main", "t", runner=runner, apply_deletes=False)  # DuckDB's rules exactly
    assert result["groups"] == 2 and result["filesWritten"] == 2 and result["committedSnapshot"] is not None

    after_ours, after_theirs = observe(ours), observe(theirs)
    assert after_ours["now"] == before["now"] == after_theirs["now"]
    assert after_ours["agg"] == after_theirs["agg"]
    for v, rows in before["history"].items():  # time travel to every earlier snapshot
        assert after_ours["history"][v] == rows, v
    # the same catalog rows as DuckDB's merge, but for sizes, paths, and the order in which
    # the new files of different groups take their ids
    a, b = dump(theirs), dump(ours)
    begin = {r[0]: r[2] for r in a["ducklake_data_file"]}, {r[0]: r[2] for r in b["ducklake_data_file"]}
    cols = lambda rows: sorted(r[1:5] + r[8:9] + r[11:] for r in rows)  # noqa: E731
    assert cols(a["ducklake_data_file"]) == cols(b["ducklake_data_file"])
    for side, rows in enumerate((a["ducklake_file_column_stats"], b["ducklake_file_column_stats"])):
        begin[side]["stats"] = sorted((begin[side][r[0]],) + r[1:3] + r[4:] for r in rows)
    assert begin[0]["stats"] == begin[1]["stats"]
    assert [r[0] for r in a["ducklake_files_scheduled_for_deletion"]] == [
        r[0] for r in b["ducklake_files_scheduled_for_deletion"]
    ]
    assert [r[1] for r in a["ducklake_snapshot_changes"]] == [r[1] for r in b["ducklake_snapshot_changes"]]
    assert a["ducklake_snapshot"][-1][2:] == b["ducklake_snapshot"][-1][2:]

    # DuckDB keeps working on our output: insert, delete, and its own compaction
    con = duck.attach(ours)
    con.execute("INSERT INTO lk.t (id, v) VALUES (9999, 'late')")
    con.execute("DELETE FROM lk.t WHERE id < 5")
    con.execute("CALL ducklake_merge_adjacent_files('lk')")
    assert duck.scalar(con, "SELECT count(*) FROM lk.t") == len(before["now"]) - 5 + 1
    con.close()
    # DuckDB's merge found nothing to do: in each schema version one file has deletes (ids 0-119:
    # the 5 just deleted, inlined; 120-159: the update's; 200-239: the delete file) and the
    # other is alone. Ours applies deletes by default: one group per schema version, all four
    # files (280 rows), every delete carried over (no snapshot expired), none dropped.
    again = compact(Catalog.open(ours), "main", "t")
    assert (again["groups"], again["filesRead"], again["rowsRead"]) == (2, 4, 280)
    assert (again["deleteFilesWritten"], again["deletedRowsDropped"]) == (2, 0)


@pytest.mark.parametrize(
    "where, deleted", [("id = 10", 1), ("id BETWEEN 10 AND 39", 30)], ids=["inlined-delete", "delete-file"]
)
def test_concurrent_delete_wins(catalog: Catalog, location, monkeypatch, where: str, deleted: int) -> None:
    """A DuckDB delete committed after our plan: the compaction is refused, its files removed,
    and the delete is not lost."""
    import os

    import ducklake_jobs.compact as job

    con = duck.attach(location)
    con.execute("CREATE TABLE lk.t(id INTEGER)")
    for k in range(3):
        con.execute(f"INSERT INTO lk.t SELECT i FROM range({k * 50}, {k * 50 + 50}) t(i)")
    written = []
    original = file_rewrite.rewrite_files  # what the job calls

    def merge_then_delete(*args, **kwargs):
        out = original(*args, **kwargs)
        written.append(out.task.output)
        con.execute(f"DELETE FROM lk.t WHERE {where}")  # lands while we are writing
        return out

    monkeypatch.setattr(job, "rewrite_files", merge_then_delete)
    with pytest.raises(Exception, match=r"conflict with snapshot|snapshot \d+ \(\w+:1\) changed its input files"):
        compact(catalog, "main", "t")
    assert written and not any(os.path.exists(p) for p in written)
    assert con.execute("SELECT count(*), count(*) FILTER (WHERE id = 10) FROM lk.t").fetchone() == (150 - deleted, 0)


PARTITIONED = [
    "CALL lk.set_option('target_file_size', '1MB')",
    "CREATE TABLE lk.p(id INTEGER, cat VARCHAR, ts TIMESTAMP)",
    "ALTER TABLE lk.p SET PARTITIONED BY (cat, year(ts))",
    *[
        f"INSERT INTO lk.p SELECT i, ['a', 'b/x', NULL][i % 3 + 1], TIMESTAMP '2023-06-01' + INTERVAL (i * 5) DAY "
        f"FROM range({k * 60}, {k * 60 + 60}) t(i)"
        for k in range(4)
    ],
    "ALTER TABLE lk.p SET PARTITIONED BY (cat)",  # a new spec: never merged with the old one
    *[
        f"INSERT INTO lk.p SELECT i, ['a', 'b/x'][i % 2 + 1], NULL FROM range({k * 60}, {k * 60 + 60}) t(i)"
        for k in range(4, 6)
    ],
]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_compact_partitioned_table_matches_duckdb(make_location, tmp_path, kind: str) -> None:
    theirs, ours = make_location(kind), make_location(kind)
    for location, name in ((theirs, "a"), (ours, "b")):
        duck.run_workload(location, PARTITIONED, str(tmp_path / name) + "/")
    # a partitioned insert hands out row ids to its partitions in thread order, so the twins'
    # rowids may differ: each side is compared with itself, rows without rowids across
    before, before_theirs = duck.observe_table(ours, "p"), duck.observe_table(theirs, "p")
    con = duck.attach(theirs)
    con.execute("CALL ducklake_merge_adjacent_files('lk')")
    con.close()
    result = compact(Catalog.open(ours), "main", "p", apply_deletes=False)
    assert result["groups"] > 2
    assert duck.same_as_before(duck.observe_table(ours, "p"), before)
    assert duck.same_as_before(duck.observe_table(theirs, "p"), before_theirs)
    assert sorted(r[1:] for r in before["now"]) == sorted(r[1:] for r in before_theirs["now"])
    a, b = dump(theirs), dump(ours)
    files = lambda d: sorted((r[1:5] + r[8:9] + r[12:] for r in d["ducklake_data_file"]), key=repr)  # noqa: E731
    assert files(a) == files(b)
    values = lambda d: sorted((r[1:] for r in d["ducklake_file_partition_value"]), key=repr)  # noqa: E731
    assert values(a) == values(b)
    # outputs stay in their partition's hive directory
    for r in b["ducklake_data_file"]:
        if r[3] is None:
            assert r[5].startswith(("cat=", "ducklake-")) and r[5].count("/") in (1, 2)
    con = duck.attach(ours)
    assert con.execute("SELECT count(*) FROM lk.p WHERE cat = 'b/x'").fetchone() == (
        sum(1 for r in before["now"] if r[2] == "b/x"),
    )


def test_compact_sorted_table_keeps_row_ids(catalog: Catalog, location) -> None:
    """Output in the table's latest sort order, row ids embedded: every row keeps its rowid
    now and in time travel (DuckDB 1.5.5's own sorted merge renumbers them)."""
    import pyarrow.parquet as pq

    con = duck.attach(location)
    con.execute("CREATE TABLE lk.s(id INTEGER, v VARCHAR)")
    con.execute("ALTER TABLE lk.s SET SORTED BY (v DESC NULLS FIRST, id)")
    for k in range(3):
        con.execute(
            f"INSERT INTO lk.s SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE 'v' || (i * 7 % 13) END "
            f"FROM range({k * 30}, {k * 30 + 30}) t(i)"
        )
    con.close()
    before = duck.observe_table(location, "s")
    result = compact(catalog, "main", "s")
    assert result["filesWritten"] == 1 and result["sorted"] is True
    assert duck.same_as_before(duck.observe_table(location, "s"), before)
    t = catalog.state().table("main", "s")
    (f,) = t.data_files
    assert f.row_id_start is None
    path = f"{catalog.state().data_path}main/s/{f.path}"
    rows = pq.read_table(path).to_pylist()
    keys = [(r["v"] is not None, r["v"] or "", r["id"]) for r in rows]
    expected = sorted(sorted(sorted(keys, key=lambda k: k[2]), key=lambda k: k[1], reverse=True), key=lambda k: k[0])
    assert keys == expected  # v DESC NULLS FIRST, then id
    assert {r["_ducklake_internal_row_id"] for r in rows} == set(range(90))


def test_compact_without_sorting_keeps_row_id_order(catalog: Catalog, location) -> None:
    """``sort: false`` (a policy's ``compaction.sort``): contiguous files of a sorted table
    are merged in row-id order, their row ids positional again (no embedded column)."""
    import pyarrow.parquet as pq

    con = duck.attach(location)
    con.execute("CREATE TABLE lk.s(id INTEGER, v VARCHAR)")
    con.execute("ALTER TABLE lk.s SET SORTED BY (v DESC)")
    for k in range(3):
        con.execute(f"INSERT INTO lk.s SELECT i, 'v' || i FROM range({k * 30}, {k * 30 + 30}) t(i)")
    con.close()
    before = duck.observe_table(location, "s")
    result = run_operation(catalog, "compact", "main.s", {"sort": False})
    assert result["filesWritten"] == 1 and result["sorted"] is None
    assert duck.same_as_before(duck.observe_table(location, "s"), before)
    (f,) = catalog.state().table("main", "s").data_files
    assert f.row_id_start == 0
    table = pq.read_table(f"{catalog.state().data_path}main/s/{f.path}")
    assert "_ducklake_internal_row_id" not in table.column_names
    con = duck.attach(location)
    by_row_id = [r[0] for r in con.execute("SELECT id FROM lk.s ORDER BY rowid").fetchall()]
    con.close()
    assert table.column("id").to_pylist() == by_row_id  # the file is in row-id order, not resorted
    assert by_row_id != sorted(by_row_id, key=lambda i: f"v{i}", reverse=True)  # which sorting would change


def test_sort_key_on_a_renamed_column(catalog: Catalog, location) -> None:
    """Files written before a rename hold the old column name, which the latest sort key does
    not know: those groups are merged in row-id order (and the report says so)."""
    con = duck.attach(location)
    con.execute("CREATE TABLE lk.r(id INTEGER, v VARCHAR)")
    con.execute("ALTER TABLE lk.r SET SORTED BY (v DESC)")
    for k in range(2):
        con.execute(f"INSERT INTO lk.r SELECT i, 'v' || i FROM range({k * 20}, {k * 20 + 20}) t(i)")
    con.execute("ALTER TABLE lk.r RENAME COLUMN v TO w")
    for k in range(2, 4):
        con.execute(f"INSERT INTO lk.r SELECT i, 'w' || i FROM range({k * 20}, {k * 20 + 20}) t(i)")
    con.close()
    before = duck.observe_table(location, "r")
    result = compact(catalog, "main", "r")
    assert result["filesWritten"] == 2 and result["sorted"] is False
    assert duck.same_as_before(duck.observe_table(location, "r"), before)


@pytest.mark.parametrize(
    "kind, runner",
    [("sqlite", run_in_process), ("postgres", run_in_process), ("sqlite", run_on_spark)],
    ids=["sqlite", "postgres", "sqlite-spark"],
)
def test_compact_applies_deletes(make_location, tmp_path, kind: str, runner) -> None:
    """Files with deletes are merged too: rows deleted at or before the oldest snapshot are
    dropped, later deletes move to a delete file of the merged file with their snapshots,
    so every snapshot still readable sees exactly what it saw (DuckDB's merge would leave
    all four files alone)."""
    location = make_location(kind)
    con = duck.attach(location, data_path=str(tmp_path / "d") + "/")
    con.execute("CREATE TABLE lk.t(id INTEGER, v VARCHAR)")
    for k in range(4):
        con.execute(f"INSERT INTO lk.t SELECT i, 'v' || i FROM range({k * 100}, {k * 100 + 100}) t(i)")  # snapshots 2-5
    con.execute("DELETE FROM lk.t WHERE id < 10")  # 6: a delete file
    con.execute("DELETE FROM lk.t WHERE id = 10")  # 7: the same file again: a delete file with snapshots
    con.execute("DELETE FROM lk.t WHERE id = 150")  # 8: an inlined file deletion
    con.execute("UPDATE lk.t SET v = 'u' WHERE id = 250")  # 9: an inlined deletion and an inlined row
    con.execute("CALL ducklake_expire_snapshots('lk', versions => [0, 1, 2, 3, 4, 5, 6])")
    con.close()
    before = duck.observe_table(location, "t")
    assert sorted(before["history"]) == [7, 8, 9]

    result = compact(Catalog.open(location), "main", "t", runner=runner)
    assert result["filesRead"] == 4 and result["filesWritten"] == 1 and result["deleteFilesWritten"] == 1
    assert result["deletedRowsDropped"] == 11  # deleted at snapshots 6 and 7: no snapshot left can see them
    assert duck.same_as_before(duck.observe_table(location, "t"), before)
    t = Catalog.open(location).state().table("main", "t")
    (merged,) = t.data_files
    (deletes,) = t.delete_files
    assert merged.record_count == 389 and merged.row_id_start is None
    assert (deletes.data_file_id, deletes.delete_count, deletes.begin_snapshot, deletes.partial_max) == (
        merged.data_file_id,
        2,
        8,
        9,
    )

    con = duck.attach(location)  # DuckDB keeps working: counts, deletes, its own maintenance
    assert con.execute("SELECT count(*), min(id), max(id) FROM lk.t").fetchone() == (389 - 2 + 1, 11, 399)
    con.execute("DELETE FROM lk.t WHERE id BETWEEN 300 AND 310")
    con.execute("CALL ducklake_flush_inlined_data('lk')")
    con.execute("CALL ducklake_rewrite_data_files('lk', 't', delete_threshold => 0.01)")
    con.execute("CALL ducklake_merge_adjacent_files('lk')")
    assert con.execute("SELECT count(*), count(*) FILTER (WHERE v = 'u') FROM lk.t").fetchone() == (388 - 11, 1)


def test_update_output_keeps_its_row_ids(catalog: Catalog, location) -> None:
    """An UPDATE's output file carries the old row ids, yet DuckDB gives it a row_id_start:
    next to a file that looks contiguous with it, the merge must still embed the ids
    (DuckDB 1.5.5's own merge renumbers those rows here)."""
    con = duck.attach(location)
    con.execute("CREATE TABLE lk.t(id INTEGER, v VARCHAR)")
    con.execute("INSERT INTO lk.t SELECT i, 'v' || i FROM range(50) t(i)")
    con.execute("INSERT INTO lk.t VALUES (1101, 'x')")  # inlined: row id 50
    con.execute("UPDATE lk.t SET v = 'u' || id WHERE id % 4 = 0")  # 13 rows > 10: a file with ids 0, 4, ...
    flush_rows_then_merge = duck.observe_table(location, "t")
    from ducklake_jobs.flush import flush_inlined_data

    flush_inlined_data(catalog)  # row 50 becomes a file right before the update's (row_id_start 50 + 1 = 51)
    assert duck.same_as_before(duck.observe_table(location, "t"), flush_rows_then_merge)
    result = compact(catalog, "main", "t", apply_deletes=False)
    assert result["filesRead"] == 2
    assert duck.same_as_before(duck.observe_table(location, "t"), flush_rows_then_merge)
    merged = [f for f in catalog.state().table("main", "t").data_files if f.record_count == 14]
    assert len(merged) == 1 and merged[0].row_id_start is None
