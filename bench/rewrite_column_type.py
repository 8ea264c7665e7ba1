"""Heavy type change throughput: our rewriteColumnType job (varchar -> int64) vs DuckDB writing
the same table with the column cast (``CREATE TABLE ... AS SELECT ... CAST``).

Builds one table of about --mb MB in --files Parquet files (SQLite catalog, local data path),
copies it, and converts: DuckDB's CTAS, ours in-process, ours on Spark local[2] (with and
without session start-up). Prints MB/s of input for each, the ratio to DuckDB, and the
disk's sequential write+read rate as the physical limit. (The half of bench/rewrite.py the
issue asks for that is not repartition.)

    python bench/rewrite_column_type.py [--mb 1000 --files 100 --target 256MB]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.compaction import copy, disk_rate  # noqa: E402

from ducklake_jobs.rewrite_column_type import rewrite_column_type  # noqa: E402
from ducklake_jobs.runtime import Runner, run_in_process, run_on_spark  # noqa: E402
from ducklake_operator.catalog import Catalog, CatalogLocation  # noqa: E402
from ducklake_operator.model.types import parse_type  # noqa: E402
from support import duck  # noqa: E402


def build(root: str, mb: int, files: int, target: str) -> tuple[CatalogLocation, int]:
    """main.t(id, v varchar holding integers, payload, d) in ``files`` inserts."""
    location = CatalogLocation(kind="sqlite", path=os.path.join(root, "c.sqlite"))
    Catalog.create(location, os.path.join(root, "data") + "/")
    con = duck.attach(location)
    con.execute(f"CALL lk.set_option('target_file_size', '{target}')")  # the job's file groups
    con.execute("CALL lk.set_option('data_inlining_row_limit', 0)")
    con.execute("CREATE TABLE lk.t(id BIGINT, v VARCHAR, payload VARCHAR, d DATE)")
    rows = max(20, int(mb * 1_000_000 / files / 60))  # ~60 bytes per row in Parquet with random payloads
    for k in range(files):
        con.execute(
            "INSERT INTO lk.t SELECT i, (i * 7919 % 1000003)::VARCHAR, md5(i::VARCHAR) || md5((i * 7)::VARCHAR), "
            f"DATE '2020-01-01' + (i % 1000)::INTEGER FROM range({k * rows}, {(k + 1) * rows}) t(i)"
        )
    table = Catalog(location).state().table("main", "t")
    assert table is not None
    con.close()
    return location, sum(f.file_size_bytes for f in table.data_files)


def ours(location: CatalogLocation, runner: Runner) -> float:
    t0 = time.perf_counter()
    report = rewrite_column_type(
        Catalog.open(location), "main", "t", column=("v",), new_type=parse_type("int64"), runner=runner
    )
    assert report["committedSnapshot"] is not None and report["valuesNulled"] == 0
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=1000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--target", default="256MB", help="target_file_size: the job's output file (Spark task) size")
    args = parser.parse_args()
    os.environ["DUCKLAKE_SPARK_MASTER"] = "local[2]"
    work = tempfile.mkdtemp(prefix="bench-rewrite-")
    base = os.path.join(work, "base")
    os.makedirs(base)
    t0 = time.perf_counter()
    location, size = build(base, args.mb, args.files, args.target)
    mb = size / 1e6
    print(f"table: {args.files} files, {mb:.0f} MB of Parquet (built in {time.perf_counter() - t0:.0f} s)")

    theirs = copy(base, "duckdb")
    con = duck.attach(theirs)
    t0 = time.perf_counter()
    con.execute("CREATE TABLE lk.t2 AS SELECT id, CAST(v AS BIGINT) AS v, payload, d FROM lk.t")
    duck_s = time.perf_counter() - t0
    con.close()
    print(f"DuckDB CREATE TABLE AS SELECT CAST:        {duck_s:7.2f} s  {mb / duck_s:8.1f} MB/s")

    own_s = ours(copy(base, "ours"), run_in_process)
    print(
        f"rewriteColumnType, in-process:             {own_s:7.2f} s  {mb / own_s:8.1f} MB/s  ratio {duck_s / own_s:.2f}"
    )

    spark = copy(base, "spark")
    t0 = time.perf_counter()
    from ducklake_jobs.session import spark_session

    spark_session()
    start_s = time.perf_counter() - t0
    run_s = ours(spark, run_on_spark)
    total = start_s + run_s
    print(
        f"rewriteColumnType, Spark local[2] + start: {total:7.2f} s  {mb / total:8.1f} MB/s  ratio {duck_s / total:.2f}"
    )
    print(
        f"rewriteColumnType, Spark local[2]:         {run_s:7.2f} s  {mb / run_s:8.1f} MB/s  ratio {duck_s / run_s:.2f}"
    )
    print(f"disk sequential write+read:                {disk_rate(work):8.1f} MB/s (physical limit)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
