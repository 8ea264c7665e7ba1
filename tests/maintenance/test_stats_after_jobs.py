"""After each data-writing job, DuckDB's answers that may come from the table's statistics
(``SELECT min(c), max(c)`` alone, ``count(*)``: docs/ducklake-format.md §2.7) equal a full
scan's; and rewriteDeletes leaves the table statistics DuckDB's ducklake_rewrite_data_files
leaves on a twin lake."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from ducklake_jobs.compact import compact
from ducklake_jobs.flush import flush_inlined_data
from ducklake_jobs.repartition import repartition
from ducklake_jobs.rewrite_column_type import rewrite_column_type
from ducklake_jobs.rewrite_deletes import rewrite_deletes
from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.model.types import parse_type
from support import duck
from support.dump import dump
from support.stats_oracle import assert_answers_exact, file_stats

TABLE = "CREATE TABLE lk.t(id INTEGER, s VARCHAR, f DOUBLE, ts TIMESTAMP, n INTEGER, p INTEGER)"


def rows(lo: int, hi: int) -> str:
    """Rows whose extremes (and only NULLs of n) are among the ids deleted below."""
    return (
        f"INSERT INTO lk.t SELECT i, (i * 7)::VARCHAR, i / 4, TIMESTAMP '2024-01-01' + INTERVAL (i) DAY, "
        f"CASE WHEN i % 10 <> 3 THEN i END, i % 3 FROM range({lo}, {hi}) t(i)"
    )


DELETE = "DELETE FROM lk.t WHERE id < 25 OR id >= 85 OR n IS NULL"

# job -> (statements after CREATE TABLE, the job)
JOBS: dict[str, tuple[list[str], Callable[[Catalog], Any]]] = {
    "rewriteDeletes": (
        [rows(0, 100), DELETE],
        lambda c: rewrite_deletes(c, "main", "t", delete_threshold=0.1),
    ),
    "compact": (
        [rows(0, 30), rows(30, 60), rows(60, 100), DELETE],
        lambda c: compact(c, "main", "t"),
    ),
    "flushInlinedData": (
        ["CALL lk.set_option('data_inlining_row_limit', 200)", rows(0, 50), rows(50, 100), DELETE],
        lambda c: flush_inlined_data(c, "main", "t"),
    ),
    "repartition": (
        [rows(0, 50), rows(50, 100), DELETE, "ALTER TABLE lk.t SET PARTITIONED BY (p)"],
        lambda c: repartition(c, "main", "t"),
    ),
    "rewriteColumnType": (
        [rows(0, 50), rows(50, 100), DELETE],
        lambda c: rewrite_column_type(c, "main", "t", column=("s",), new_type=parse_type("int64")),
    ),
}


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("job", list(JOBS))
def test_answers_from_statistics_are_exact_after_job(
    make_location: Callable[[str], CatalogLocation], tmp_path: Path, kind: str, job: str
) -> None:
    location = make_location(kind)
    statements, run = JOBS[job]
    duck.run_workload(location, [TABLE, *statements], str(tmp_path / "data") + "/")
    with closing(Catalog.open(location)) as catalog:
        report = run(catalog)
    assert report.get("committedSnapshot") or report.get("committedSnapshots")
    assert_answers_exact(location)


# Twin lakes: the table statistics our rewriteDeletes leaves are DuckDB's. Each scenario's
# rows are deleted so that DuckDB's recompute changes them; its inlined rows hold no float
# (DuckDB 1.5.5's rewrite fails on a SQLite catalog with one: isnan(VARCHAR)) and no text
# DuckDB would write escaped on PostgreSQL.
SCENARIOS: dict[str, list[str]] = {
    # NULLs, NaN and extremes only in deleted rows; a list, a struct, a blob, a HUGEINT (no
    # bounds), a column added after the first insert (no row) and dropped ones: a dropped
    # column takes the rewritten files' statistics alone, or keeps its row without them
    "files": [
        "CREATE TABLE lk.t(id INTEGER, n INTEGER, f DOUBLE, s STRUCT(a INTEGER, b VARCHAR[]), bl BLOB, "
        "h HUGEINT, gone INTEGER, gone2 INTEGER, nulls INTEGER)",
        "INSERT INTO lk.t SELECT i, CASE WHEN i >= 10 THEN i END, CASE WHEN i = 5 THEN 'nan' ELSE i / 2 END, "
        "{'a': i, 'b': ['x' || i]}, ('b' || i)::BLOB, i, i, i, CASE WHEN i < 50 THEN i END FROM range(0, 100) t(i)",
        "INSERT INTO lk.t SELECT i, i, 'nan', {'a': i, 'b': []}, NULL, i, i, i, NULL FROM range(100, 200) t(i)",
        "ALTER TABLE lk.t ADD COLUMN extra INTEGER DEFAULT 7",
        "ALTER TABLE lk.t DROP COLUMN gone",
        "INSERT INTO lk.t SELECT i, i, i, NULL, NULL, i, i, NULL, i FROM range(200, 300) t(i)",
        "ALTER TABLE lk.t DROP COLUMN gone2",
        "DELETE FROM lk.t WHERE id < 50 OR id >= 250",
    ],
    # live inlined rows folded in: extremes, NULLs, a boolean below the files' (its text as
    # each backend stores it), rows of an older layout
    "inlined": [
        "CREATE TABLE lk.t(id INTEGER, v VARCHAR, d DECIMAL(10, 2), ts TIMESTAMPTZ, b BOOLEAN, dropped INTEGER)",
        "INSERT INTO lk.t SELECT i, 'v' || i, i / 4, TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i) HOUR, true, i "
        "FROM range(0, 100) t(i)",
        "INSERT INTO lk.t VALUES (-7, NULL, -1.25, TIMESTAMPTZ '1999-12-31 23:00:00+00', false, 1)",
        "ALTER TABLE lk.t DROP COLUMN dropped",
        "INSERT INTO lk.t VALUES (700, 'zz', 99.5, NULL, NULL)",
        "INSERT INTO lk.t VALUES (701, 'deleted', 1000, NULL, NULL)",
        "DELETE FROM lk.t WHERE id < 50 OR id = 701",
    ],
    # live inlined rows and a column DuckDB does not fold: nothing changes
    "inlined-struct": [
        "CREATE TABLE lk.t(id INTEGER, s STRUCT(a INTEGER))",
        "INSERT INTO lk.t SELECT i, {'a': i} FROM range(0, 100) t(i)",
        "INSERT INTO lk.t VALUES (500, {'a': 500})",
        "DELETE FROM lk.t WHERE id < 50",
    ],
    # the second rewrite recomputes although the file the first ended keeps its inlined deletion
    "ended-file-deletion": [
        "CREATE TABLE lk.t(id INTEGER)",
        "INSERT INTO lk.t SELECT i FROM range(0, 100) t(i)",
        "INSERT INTO lk.t SELECT i FROM range(100, 200) t(i)",
        "DELETE FROM lk.t WHERE id < 50",
        "DELETE FROM lk.t WHERE id = 60",  # inlined
        "REWRITE",
        "DELETE FROM lk.t WHERE id >= 150",
    ],
    # every row deleted: no file is left, the statistics are unknown
    "emptied": [
        "CREATE TABLE lk.t(id INTEGER, v VARCHAR)",
        "INSERT INTO lk.t SELECT i, 'v' || i FROM range(0, 100) t(i)",
        "DELETE FROM lk.t WHERE id < 99",
        "DELETE FROM lk.t WHERE id = 99",
    ],
}


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_rewrite_deletes_leaves_duckdbs_table_stats(
    make_location: Callable[[str], CatalogLocation], tmp_path: Path, kind: str, scenario: str
) -> None:
    theirs, ours = make_location(kind), make_location(kind)
    parts: list[list[str]] = [[]]  # each followed by both rewrites
    for sql in SCENARIOS[scenario]:
        if sql == "REWRITE":
            parts.append([])
        else:
            parts[-1].append(sql)
    for part in parts:
        duck.run_workload(theirs, part, str(tmp_path / "theirs") + "/")
        duck.run_workload(ours, part, str(tmp_path / "ours") + "/")
        con = duck.attach(theirs)
        con.execute("CALL ducklake_rewrite_data_files('lk', 't', delete_threshold => 0.1)")
        con.close()
        with closing(Catalog.open(ours)) as catalog:
            rewrite_deletes(catalog, "main", "t", delete_threshold=0.1)
    a, b = dump(theirs), dump(ours)
    assert a["ducklake_table_column_stats"] == b["ducklake_table_column_stats"]
    assert [r[:3] for r in a["ducklake_table_stats"]] == [r[:3] for r in b["ducklake_table_stats"]]
    assert file_stats(theirs) == file_stats(ours)
    assert_answers_exact(ours)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_rewrite_deletes_recomputes_where_duckdb_fails(
    make_location: Callable[[str], CatalogLocation], tmp_path: Path, kind: str
) -> None:
    """Inlined rows of a layout without a later column, and (on SQLite) of a float column:
    DuckDB 1.5.5's rewrite fails on them; ours recomputes exactly."""
    location = make_location(kind)
    duck.run_workload(
        location,
        [
            "CREATE TABLE lk.t(id INTEGER, f DOUBLE)",
            "INSERT INTO lk.t SELECT i, i FROM range(0, 100) t(i)",
            "INSERT INTO lk.t VALUES (-5, 'nan')",
            "ALTER TABLE lk.t ADD COLUMN extra INTEGER DEFAULT 7",
            "INSERT INTO lk.t VALUES (600, -1, 3)",
            "DELETE FROM lk.t WHERE id BETWEEN 0 AND 49",
        ],
        str(tmp_path / "data") + "/",
    )
    with closing(Catalog.open(location)) as catalog:
        assert rewrite_deletes(catalog, "main", "t", delete_threshold=0.1)["committedSnapshot"] is not None
    stats = dump(location)
    assert [r[:2] for r in stats["ducklake_table_stats"]] == [(1, 52)]
    assert [(r[1], bool(r[2]), r[3], r[4], r[5]) for r in stats["ducklake_table_column_stats"]] == [
        (1, False, None, "-5", "600"),
        (2, False, True, None, None),  # NaN among the inlined rows: no bounds
    ]
    assert_answers_exact(location)
