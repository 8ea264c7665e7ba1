"""Plan+apply latency of a one-column change vs DuckDB's ALTER TABLE, same PostgreSQL catalog.

Two shapes: one table of 200 columns, and a catalog of 1,000 tables (the change is on one
of them). Each round adds one column through a manifest (plan against fresh state, commit)
and one through DuckDB's ``ALTER TABLE ... ADD COLUMN`` on a twin table.

    python bench/evolution.py [--rounds 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import Any

import duckdb

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from ducklake_operator.api.load import parse_manifest  # noqa: E402
from ducklake_operator.api.v1alpha1.table import TableSpec
from ducklake_operator.catalog import Catalog, CatalogLocation  # noqa: E402
from ducklake_operator.model.changes import CreateTable  # noqa: E402
from ducklake_operator.model.types import Field, parse_type  # noqa: E402
from ducklake_operator.use_cases import apply_plan  # noqa: E402
from support import duck  # noqa: E402
from support.pgserver import PgServer  # noqa: E402


def manifest(name: str, columns: list[dict[str, Any]]) -> TableSpec:
    spec = parse_manifest(
        {
            "kind": "DuckLakeTable",
            "metadata": {"name": name},
            "spec": {"catalogRef": {"name": "lake"}, "name": name, "columns": columns},
        }
    )
    assert isinstance(spec, TableSpec)
    return spec


def measure(
    catalog: Catalog,
    con: duckdb.DuckDBPyConnection,
    table: str,
    twin: str,
    base_columns: list[dict[str, Any]],
    rounds: int,
) -> tuple[float, float]:
    ours, theirs = [], []
    columns = list(base_columns)
    for i in range(rounds):
        columns.append({"name": f"added_{i}", "type": "int64"})
        spec = manifest(table, columns)
        t0 = time.perf_counter()
        result = apply_plan(catalog, spec)  # reads state, plans, commits
        ours.append(time.perf_counter() - t0)
        assert result.commit is not None
        t0 = time.perf_counter()
        con.execute(f"ALTER TABLE lk.{twin} ADD COLUMN added_{i} BIGINT")
        theirs.append(time.perf_counter() - t0)
    return statistics.median(ours) * 1000, statistics.median(theirs) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    server, data = PgServer.start(), tempfile.TemporaryDirectory(prefix="bench-lake-")
    try:
        for shape in ("200 columns", "1000 tables"):
            db = "bench_" + shape.replace(" ", "_")
            server.create_database(db)
            location = CatalogLocation(
                kind="postgres", host=server.host, port=server.port, database=db, user=server.user
            )
            catalog = Catalog.create(location, os.path.join(data.name, db) + "/")
            con = duck.attach(location)
            if shape == "200 columns":
                cols = [{"name": f"c{i}", "type": "int32" if i % 2 else "varchar"} for i in range(200)]
                apply_plan(catalog, manifest("wide", cols))
                con.execute(
                    "CREATE TABLE lk.wide_d("
                    + ", ".join(f"c{i} {'INTEGER' if i % 2 else 'VARCHAR'}" for i in range(200))
                    + ")"
                )
                table, twin = "wide", "wide_d"
            else:
                cols = [{"name": "id", "type": "int64"}, {"name": "v", "type": "varchar"}]
                fields = tuple(Field(c["name"], parse_type(c["type"])) for c in cols)
                for chunk in range(0, 1000, 100):
                    catalog.commit([CreateTable("main", f"t{i}", fields) for i in range(chunk, chunk + 100)])
                con.execute("CREATE TABLE lk.t_d(id BIGINT, v VARCHAR)")
                table, twin = "t500", "t_d"
            m_ours, m_theirs = measure(catalog, con, table, twin, cols, args.rounds)
            print(
                f"{shape:>12}: plan+apply median {m_ours:7.2f} ms | DuckDB ALTER median {m_theirs:7.2f} ms | ratio {m_ours / m_theirs:.2f}"
            )
            con.close()
            catalog.close()
    finally:
        server.stop()
        data.cleanup()


if __name__ == "__main__":
    main()
