"""A compaction's catalog statements do not grow with the table's files: the
same number to read, plan and commit a table of 200 files as one of 2,000 (in 2 and 20 file
groups), on PostgreSQL; DuckDB 1.5.5 reads the same rows, row ids included, afterwards. A
statement per input file (or per group) anywhere in reading, planning or committing fails it."""

from __future__ import annotations

from contextlib import closing
from typing import Any

from ducklake_jobs.compact import compact
from ducklake_operator.catalog import Catalog
from support import duck
from support.catalog_statements import CatalogStatements
from support.many_files import create_many_files_table

FILES_PER_GROUP = 100


def rows(location: Any) -> list[tuple[Any, ...]]:
    con = duck.attach(location, con=duck.connect())
    try:
        return con.execute("SELECT rowid, id, v FROM lk.t ORDER BY rowid").fetchall()
    finally:
        con.close()


def compaction_statements(location: Any, data_path: str, files: int) -> dict[str, Any]:
    """Statements of a dry run and of a run compacting ``files`` tiny files, FILES_PER_GROUP
    to a group; and the checks DuckDB makes of the result."""
    with closing(Catalog.create(location, data_path)) as catalog:
        create_many_files_table(catalog, files, rows_per_file=2)
        before = rows(location)
        sizes = sorted(f.file_size_bytes for f in catalog.table("main", "t").data_files)
        # a group closes once its size reaches the target: at its FILES_PER_GROUP-th file
        target = sizes[-1] * (FILES_PER_GROUP - 1) + 1
        statements = CatalogStatements(catalog)
        with statements.during("dry run"):
            planned = compact(catalog, "main", "t", dry_run=True, target_file_size=target)
        with statements.during("run"):
            report = compact(catalog, "main", "t", target_file_size=target)
        live = len(catalog.table("main", "t").data_files)
    return {
        "groups": (planned["groups"], report["groups"], report["filesWritten"], live),
        "statements": dict(statements.by_phase),
        "same rows": rows(location) == before and len(before) == files * 2,
    }


def test_compaction_statements_do_not_grow_with_files(make_location, tmp_path) -> None:
    small = compaction_statements(make_location("postgres"), str(tmp_path / "small") + "/", 200)
    large = compaction_statements(make_location("postgres"), str(tmp_path / "large") + "/", 2000)
    assert small["groups"] == (2, 2, 2, 2)
    assert large["groups"] == (20, 20, 20, 20)
    assert small["same rows"] and large["same rows"]
    assert small["statements"] == large["statements"], (small["statements"], large["statements"])
    # reading and planning is a fixed number of queries; the commit a fixed few more
    assert small["statements"]["dry run"] < 30
    assert small["statements"]["run"] < small["statements"]["dry run"] + 40
