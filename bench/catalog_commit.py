"""Median latency of committing one table creation: the library vs DuckDB's CREATE TABLE.

Both against the same PostgreSQL catalog, connections already open. Starts a throwaway
PostgreSQL server (as the tests do) unless --host/--port point at one.

    python bench/catalog_commit.py [--n 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from ducklake_operator.catalog import Catalog, CatalogLocation  # noqa: E402
from ducklake_operator.model.changes import CreateTable  # noqa: E402
from ducklake_operator.model.types import Field, parse_type  # noqa: E402
from support import duck  # noqa: E402
from support.pgserver import PgServer  # noqa: E402

COLUMNS = (
    Field("id", parse_type("int64")),
    Field("name", parse_type("varchar")),
    Field("amount", parse_type("decimal(18,2)")),
    Field("ts", parse_type("timestamptz")),
    Field("payload", parse_type("STRUCT(a INTEGER, b VARCHAR[])")),
)
DDL = "(id BIGINT, name VARCHAR, amount DECIMAL(18,2), ts TIMESTAMPTZ, payload STRUCT(a INTEGER, b VARCHAR[]))"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200)
    args = parser.parse_args()
    server, data = PgServer.start(), tempfile.TemporaryDirectory(prefix="bench-lake-")
    try:
        server.create_database("bench")
        location = CatalogLocation(
            kind="postgres", host=server.host, port=server.port, database="bench", user=server.user
        )
        catalog = Catalog.create(location, data.name + "/")
        con = duck.attach(location)
        catalog.commit([CreateTable("main", "warmup", COLUMNS)])
        con.execute(f"CREATE TABLE lk.warmup_d{DDL}")

        ours, theirs = [], []
        for i in range(args.n):  # alternate so both see the same catalog size
            t0 = time.perf_counter()
            catalog.commit([CreateTable("main", f"lib_{i}", COLUMNS)], message="bench")
            ours.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            con.execute(f"CREATE TABLE lk.duck_{i}{DDL}")
            theirs.append(time.perf_counter() - t0)
        m_ours, m_theirs = statistics.median(ours) * 1000, statistics.median(theirs) * 1000
        print(f"commits per side:            {args.n}")
        print(
            f"library  CreateTable median: {m_ours:.2f} ms  (p90 {statistics.quantiles(ours, n=10)[-1] * 1000:.2f} ms)"
        )
        print(
            f"DuckDB   CREATE TABLE median: {m_theirs:.2f} ms  (p90 {statistics.quantiles(theirs, n=10)[-1] * 1000:.2f} ms)"
        )
        print(f"ratio library/DuckDB:        {m_ours / m_theirs:.2f}")
    finally:
        server.stop()
        data.cleanup()


if __name__ == "__main__":
    main()
