"""The clause a sorted table's partitions are written with, one partition at a time: plain
comparisons (DuckDB skips a row group whose min and max exclude them, and skipped far fewer
for ``IS NOT DISTINCT FROM``), NULL keys as ``IS NULL``, and the rows it selects."""

from __future__ import annotations

import duckdb

from ducklake_jobs.parquet_writer import key_match


def test_plain_comparisons_and_null_keys() -> None:
    assert key_match(("__p0", "__p1"), (3, None)) == ("__p0 = $__p0 AND __p1 IS NULL", {"__p0": 3})
    assert key_match((), ()) == ("true", {})


def test_the_rows_it_selects() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT i, NULLIF(i % 3, 0) AS __p0, 'x' || (i % 2) AS __p1 FROM range(12) r(i)")
    for values in con.execute("SELECT DISTINCT __p0, __p1 FROM t").fetchall():
        where, params = key_match(("__p0", "__p1"), values)
        got = con.execute(f"SELECT i FROM t WHERE {where} ORDER BY i", params).fetchall()
        expected = con.execute(
            "SELECT i FROM t WHERE __p0 IS NOT DISTINCT FROM ? AND __p1 IS NOT DISTINCT FROM ? ORDER BY i", list(values)
        ).fetchall()
        assert got == expected and got, values
