"""The per-file lists of a job's scan go into the query text as literals (file_rewrite.sql_list):
DuckDB reads them back exactly, quotes and all."""

from __future__ import annotations

import duckdb

from ducklake_jobs.file_rewrite import sql_list


def test_list_literals_read_back_exactly() -> None:
    paths = ["/data/a.parquet", "/data/it's here/b.parquet", 's3://bucket/"x"/c.parquet', "/data/$1.parquet"]
    numbers = [0, 161290, -3, 2**62]
    con = duckdb.connect()
    try:
        assert con.execute(f"SELECT {sql_list(paths)}, {sql_list(numbers)}").fetchone() == (paths, numbers)
        assert con.execute(f"SELECT typeof({sql_list(numbers)})").fetchone() == ("BIGINT[]",)
    finally:
        con.close()
