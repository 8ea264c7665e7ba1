"""rewriteDeletes vs DuckDB's ducklake_rewrite_data_files on twin tables: same rows and rowids
now and at every earlier snapshot, same catalog rows (but for paths and sizes), and DuckDB
keeps working on our output."""

from __future__ import annotations

import pytest

from ducklake_jobs.rewrite_deletes import rewrite_deletes
from ducklake_jobs.task_runners import run_in_process, run_on_spark
from ducklake_operator.catalog import Catalog
from support import duck
from support.dump import dump

WORKLOAD = [
    "CREATE TABLE lk.t(id INTEGER, v VARCHAR, d DECIMAL(10, 2), s STRUCT(a INTEGER, b VARCHAR[]))",
    *[
        f"INSERT INTO lk.t SELECT i, 'v' || i, i / 4, {{'a': i, 'b': ['x' || i]}} FROM range({k * 100}, {k * 100 + 100}) t(i)"
        for k in range(4)
    ],
    "DELETE FROM lk.t WHERE id BETWEEN 0 AND 95",  # file 1: 96% deleted, one delete file
    "DELETE FROM lk.t WHERE id BETWEEN 100 AND 150",  # file 2: two deletes -> delete file with snapshots
    "DELETE FROM lk.t WHERE id BETWEEN 151 AND 198",
    "UPDATE lk.t SET v = 'upd' WHERE id = 250",  # file 3: one inlined deletion + an update file
    "DELETE FROM lk.t WHERE id BETWEEN 300 AND 399",  # file 4: all rows gone -> file ended, no delete file
    "ALTER TABLE lk.t ADD COLUMN extra INTEGER DEFAULT 7",
    "INSERT INTO lk.t SELECT i, 'n' || i, 0, NULL, i FROM range(1000, 1100) t(i)",
    "DELETE FROM lk.t WHERE id BETWEEN 1000 AND 1098",  # a file of the new schema version
]


def build(location, data_path: str, extra: list[str] | None = None) -> None:
    if extra is None:
        extra = []
    duck.run_workload(location, WORKLOAD + extra, data_path)


def observe(location, table: str = "t") -> dict:
    con = duck.attach(location, con=duck.connect())
    try:
        latest = duck.scalar(con, "SELECT max(snapshot_id) FROM ducklake_snapshots('lk')")
        return {
            "now": con.execute(f"SELECT rowid, * FROM lk.{table} ORDER BY rowid").fetchall(),
            "agg": con.execute(f"SELECT count(*), min(id), max(id), min(v), max(v) FROM lk.{table}").fetchone(),
            "history": {
                v: con.execute(f"SELECT rowid, * FROM lk.{table} AT (VERSION => {v}) ORDER BY rowid").fetchall()
                for v in range(2, latest + 1)
            },
        }
    finally:
        con.close()


def file_rows(rows: list[tuple]) -> list[tuple]:
    """data file rows without id, path, size and footer (they differ by nature; DuckDB gives
    the new files of several groups their ids in another order)."""
    return sorted(r[1:5] + r[7:9] + r[11:] for r in rows)


def stats_rows(dumped: dict) -> list[tuple]:
    """column stats keyed by their file's row (not its id), without column_size_bytes."""
    files = {r[0]: r[1:5] + r[8:9] for r in dumped["ducklake_data_file"]}
    return sorted((files[r[0]],) + r[1:3] + r[4:] for r in dumped["ducklake_file_column_stats"])


@pytest.mark.parametrize(
    "kind, runner, threshold",
    [
        ("sqlite", run_in_process, None),
        ("postgres", run_in_process, None),
        ("postgres", run_in_process, 0.005),
        ("sqlite", run_on_spark, 0.005),
    ],
    ids=["sqlite", "postgres", "postgres-low-threshold", "sqlite-spark"],
)
def test_rewrite_matches_rewrite_data_files(make_location, tmp_path, kind: str, runner, threshold) -> None:
    theirs, ours = make_location(kind), make_location(kind)
    build(theirs, str(tmp_path / "a") + "/")
    build(ours, str(tmp_path / "b") + "/")
    before = observe(ours)
    con = duck.attach(theirs)
    con.execute(
        "CALL ducklake_rewrite_data_files('lk', 't'" + (f", delete_threshold => {threshold})" if threshold else ")")
    )
    con.close()
    result = rewrite_deletes(Catalog.open(ours), "main", "t", delete_threshold=threshold, runner=runner)
    assert result["committedSnapshot"] is not None
    assert result["filesRead"] == (4 if threshold else 3)

    after_ours, after_theirs = observe(ours), observe(theirs)
    assert after_ours["now"] == before["now"] == after_theirs["now"]
    assert after_ours["agg"] == after_theirs["agg"]
    for v, rows in before["history"].items():
        assert after_ours["history"][v] == rows == after_theirs["history"][v], v
    a, b = dump(theirs), dump(ours)
    assert file_rows(a["ducklake_data_file"]) == file_rows(b["ducklake_data_file"])
    assert sorted(r[:5] + r[8:9] for r in a["ducklake_delete_file"]) == sorted(
        r[:5] + r[8:9] for r in b["ducklake_delete_file"]
    )
    assert stats_rows(a) == stats_rows(b)
    ts = lambda rows: [r[:3] for r in rows]  # noqa: E731  (file_size_bytes differs with the files)
    assert ts(a["ducklake_table_stats"]) == ts(b["ducklake_table_stats"])
    assert a["ducklake_table_column_stats"] == b["ducklake_table_column_stats"]
    assert (
        a["ducklake_snapshot_changes"][-1][1:] == b["ducklake_snapshot_changes"][-1][1:]
        or a["ducklake_snapshot_changes"][-1][1] == b["ducklake_snapshot_changes"][-1][1]
    )
    assert (
        a["ducklake_files_scheduled_for_deletion"] == b["ducklake_files_scheduled_for_deletion"]
    )  # nothing new scheduled

    con = duck.attach(ours)  # DuckDB keeps working on our output
    con.execute("DELETE FROM lk.t WHERE id = 99")
    con.execute("INSERT INTO lk.t (id, v) VALUES (5000, 'late')")
    con.execute("CALL ducklake_merge_adjacent_files('lk')")
    con.execute("CALL ducklake_rewrite_data_files('lk', 't', delete_threshold => 0.0001)")
    assert con.execute("SELECT count(*), count(*) FILTER (WHERE id = 99) FROM lk.t").fetchone() == (
        len(before["now"]),
        0,
    )


@pytest.mark.parametrize("runner", [run_in_process, run_on_spark], ids=["in-process", "spark"])
def test_files_of_every_size_lose_the_same_rows_as_duckdb(make_location, tmp_path, runner) -> None:
    """Deleted rows are a bitmap per file, of the power of two at or above the file's row
    count: files of 2, 5, 100, 5,000 and 70,000 rows (five lengths in one task) with
    deletions at their first, last and middle positions, from delete files with and without
    snapshots, lose the rows DuckDB's rewrite drops, and keep their row ids."""
    sizes = [2, 5, 100, 5000, 70000]
    workload = ["CREATE TABLE lk.t(id BIGINT, v VARCHAR)"]
    start = 0
    for n in sizes:
        workload.append(f"INSERT INTO lk.t SELECT i, 'v' || i FROM range({start}, {start + n}) t(i)")
        last, middle = start + n - 1, start + n // 2
        workload.append(f"DELETE FROM lk.t WHERE id IN ({start}, {last}) AND {n} > 2")
        workload.append(f"DELETE FROM lk.t WHERE id = {middle} OR (id BETWEEN {start} AND {last} AND id % 7 = 3)")
        start += n
    theirs, ours = make_location("sqlite"), make_location("sqlite")
    for location, path in ((theirs, "a"), (ours, "b")):
        duck.run_workload(
            location, ["CALL lk.set_option('data_inlining_row_limit', 0)", *workload], str(tmp_path / path) + "/"
        )
    before = observe(ours)
    con = duck.attach(theirs)
    con.execute("CALL ducklake_rewrite_data_files('lk', 't', delete_threshold => 0)")
    con.close()
    result = rewrite_deletes(Catalog.open(ours), "main", "t", delete_threshold=0, runner=runner)
    assert result["filesRead"] == len(sizes)
    after_ours, after_theirs = observe(ours), observe(theirs)
    assert after_ours["now"] == before["now"] == after_theirs["now"]
    ids = {r[1] for r in after_ours["now"]}
    assert len(ids) < sum(sizes) - 2 * len(sizes) and not ids & {107, 5106, 5107, 75106} and 0 in ids
    for v, rows in before["history"].items():
        assert after_ours["history"][v] == rows == after_theirs["history"][v], v


def test_nothing_to_rewrite_commits_nothing(catalog: Catalog, location) -> None:
    con = duck.attach(location)
    con.execute("CREATE TABLE lk.t(id INTEGER)")
    con.execute("INSERT INTO lk.t SELECT * FROM range(100)")
    con.execute("DELETE FROM lk.t WHERE id < 50")
    latest = catalog.snapshot().snapshot_id
    assert rewrite_deletes(catalog, "main", "t", dry_run=True)["filesRead"] == 0
    dry = rewrite_deletes(catalog, "main", "t", delete_threshold=0.5, dry_run=True)
    assert [g["deleted_rows"] for g in dry["plan"]] == [50] and catalog.snapshot().snapshot_id == latest
    result = rewrite_deletes(catalog, "main", "t", delete_threshold=0.5)
    assert result["filesRead"] == 1 and result["rowsWritten"] == 50
    assert catalog.snapshot().snapshot_id == latest + 1
    assert con.execute("SELECT count(*), min(id), min(rowid) FROM lk.t").fetchone() == (50, 50, 50)


@pytest.mark.parametrize("inlined_row", [False, True])
def test_table_stats_recomputed_when_delete_free(make_location, tmp_path, inlined_row: bool) -> None:
    """DuckDB recomputes the gross counters once no delete is left; live inlined rows count."""
    extra = [
        "INSERT INTO lk.t SELECT * FROM range(100)",
        "INSERT INTO lk.t SELECT * FROM range(100, 200)",
        *(["INSERT INTO lk.t VALUES (1000)"] if inlined_row else []),
        "DELETE FROM lk.t WHERE id < 97",
    ]
    stats = []
    for side in ("theirs", "ours"):
        location = make_location("sqlite")
        con = duck.attach(location, data_path=str(tmp_path / side) + "/")
        con.execute("CREATE TABLE lk.t(id INTEGER)")
        for sql in extra:
            con.execute(sql)
        if side == "theirs":
            con.execute("CALL ducklake_rewrite_data_files('lk', 't')")
        con.close()
        if side == "ours":
            rewrite_deletes(Catalog.open(location), "main", "t")
        stats.append([r[:3] for r in dump(location)["ducklake_table_stats"]])
    assert stats[0] == stats[1] == [(1, 104 if inlined_row else 103, 201 if inlined_row else 200)]
