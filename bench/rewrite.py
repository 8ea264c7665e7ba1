"""Heavy-weight rewrites: our jobs vs DuckDB doing the same with CREATE TABLE AS SELECT.

Builds one table of about --mb MB in --files Parquet files (SQLite catalog, local data path;
timestamps spread over one year in every file, so each file holds every month), copies it
once per contender, and prints MB/s of input for each, the ratio to DuckDB, and the disk's
sequential write+read rate as the physical limit:

* repartition from none to month(ts): DuckDB inserting the table into a table partitioned by
  month(ts) (what a DuckDB user does today), ours in-process, ours on Spark local[2] (with and
  without session start-up), in --runs paired rounds (ratios: median, min, max); and in each
  round DuckDB's own partitioned COPY of the rows without and with both lineage columns,
  whose ratio is the bound keeping lineage sets on ours;
* the varchar -> int64 column type rewrite of ``v``: DuckDB's CREATE TABLE AS SELECT ... CAST
  vs the ``rewriteColumnType`` job, the same three ways; both sides write files of --target
  (``target_file_size``: the job's file groups, one Spark task each); and DuckDB's CTAS with the
  job's own conversion (only integer text converts, checked per value), whose ratio to the
  plain CAST is the bound that check sets on ours.

    python bench/rewrite.py [--mb 1000 --files 100 --target 256MB] [--runs 3] [--only repartition|retype]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.compaction import copy, data_files, fresh_copy, median, spread  # noqa: E402
from bench.physical import print_limits  # noqa: E402
from bench.spark_start import spark_start_seconds  # noqa: E402

from ducklake_jobs.job_template import run_operation  # noqa: E402
from ducklake_jobs.retype_task import TaskColumn, converted_value  # noqa: E402
from ducklake_jobs.task_runners import Runner, run_in_process, run_on_spark  # noqa: E402
from ducklake_operator.catalog import Catalog, CatalogLocation  # noqa: E402
from ducklake_operator.model.types import parse_type  # noqa: E402
from support import duck  # noqa: E402

COLUMNS = "id BIGINT, ts TIMESTAMP, v VARCHAR, payload VARCHAR, f DOUBLE"


def build(root: str, mb: int, files: int) -> tuple[CatalogLocation, int]:
    """``lk.t``: ``files`` inserts of random-order timestamps over 2024, digits as text (``v``,
    for the type rewrite), a payload and a double; returns its location and Parquet bytes."""
    location = CatalogLocation(kind="sqlite", path=os.path.join(root, "c.sqlite"))
    Catalog.create(location, os.path.join(root, "data") + "/")
    con = duck.attach(location)
    con.execute("CALL lk.set_option('data_inlining_row_limit', 0)")
    con.execute(f"CREATE TABLE lk.t({COLUMNS})")
    rows = max(20, int(mb * 1_000_000 / files / 62))  # ~62 bytes per row in Parquet
    for k in range(files):
        con.execute(
            "INSERT INTO lk.t SELECT i, TIMESTAMP '2024-01-01' + INTERVAL (hash(i) % 31622400) SECOND, "
            "((i * 7919) % 1000000007)::VARCHAR, md5(i::VARCHAR), random() "
            f"FROM range({k * rows}, {(k + 1) * rows}) t(i)"
        )
    table = Catalog(location).state().table("main", "t")
    assert table is not None
    con.close()
    return location, sum(f.file_size_bytes for f in table.data_files)


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def line(what: str, seconds: float, mb: float, duckdb_s: float | None = None) -> None:
    ratio = f"  ratio to DuckDB {duckdb_s / seconds:.2f}" if duckdb_s else ""
    print(f"{what:<52} {seconds:7.2f} s  {mb / seconds:8.1f} MB/s{ratio}", flush=True)


def repartition(base: str, mb: float, spark_start_s: float, runs: int) -> dict[str, float]:
    """none -> month(ts), ``runs`` rounds, each DuckDB then ours in-process then ours on Spark
    on fresh copies (paired: the shared machine's load hits each alike); medians of the
    rounds' times and of their ratios, with min and max of the ratios."""

    def duckdb_insert(name: str) -> float:
        con = duck.attach(copy(base, name))
        con.execute(f"CREATE TABLE lk.t2({COLUMNS})")
        con.execute("ALTER TABLE lk.t2 SET PARTITIONED BY (month(ts))")
        seconds = timed(lambda: con.execute("INSERT INTO lk.t2 SELECT * FROM lk.t"))
        con.close()
        shutil.rmtree(os.path.dirname(con_path(name, base)), ignore_errors=True)
        return seconds

    def ours(name: str, runner: Runner) -> float:
        location = copy(base, name)
        duck.run_workload(location, ["ALTER TABLE lk.t SET PARTITIONED BY (month(ts))"])
        catalog = Catalog.open(location)
        seconds = timed(lambda: run_operation(catalog, "repartition", "main.t", {}, runner=runner))
        catalog.close()
        shutil.rmtree(os.path.dirname(con_path(name, base)), ignore_errors=True)
        return seconds

    def lineage_cost(name: str) -> tuple[float, float]:
        """DuckDB's own partitioned COPY of the table's rows, without and then with both
        lineage columns (what the job writes and DuckDB's insert does not): their ratio bounds
        ours against DuckDB's insert, whatever else the job does."""
        with fresh_copy(base, name) as location:
            con = duck.attach(location)
            out = os.path.join(os.path.dirname(con_path(name, base)), "copy")

            def written(lineage: str) -> float:
                shutil.rmtree(out, ignore_errors=True)
                sql = (
                    f"COPY (SELECT *{lineage}, month(ts) AS m FROM lk.t) TO '{out}' (FORMAT parquet, PARTITION_BY (m))"
                )
                return timed(lambda: con.execute(sql))

            plain = written("")
            lineage = written(", rowid AS _ducklake_internal_row_id, snapshot_id AS _ducklake_internal_snapshot_id")
            con.close()
        return plain, lineage

    rounds, costs = [], []
    for r in range(runs):
        rounds.append(
            (
                duckdb_insert(f"duckdb-repartition-{r}"),
                ours(f"ours-repartition-{r}", run_in_process),
                ours(f"spark-repartition-{r}", run_on_spark),
            )
        )
        costs.append(lineage_cost(f"lineage-cost-{r}"))
    duck_s = statistics.median(d for d, _, _ in rounds)
    line("repartition, DuckDB INSERT INTO month(ts) table", duck_s, mb)
    plain_s, lineage_s = (statistics.median(c[i] for c in costs) for i in (0, 1))
    print(
        f"{'repartition, DuckDB COPY PARTITION_BY, rows only':<52} {plain_s:7.2f} s\n"
        f"{'repartition, the same with both lineage columns':<52} {lineage_s:7.2f} s  the bound they set on "
        f"ours: median {statistics.median(p / w for p, w in costs):.2f} "
        f"(min {min(p / w for p, w in costs):.2f}, max {max(p / w for p, w in costs):.2f})",
        flush=True,
    )
    for what, ratios, seconds in (
        ("ours in-process", [d / o for d, o, _ in rounds], [o for _, o, _ in rounds]),
        (
            "ours Spark local[2] incl. start",
            [d / (s + spark_start_s) for d, _, s in rounds],
            [s + spark_start_s for *_, s in rounds],
        ),
        ("ours Spark local[2] excl. start", [d / s for d, _, s in rounds], [s for *_, s in rounds]),
    ):
        median = statistics.median(seconds)
        print(
            f"{'repartition, ' + what:<52} {median:7.2f} s  {mb / median:8.1f} MB/s  ratio to DuckDB "
            f"median {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})",
            flush=True,
        )
    return {
        "repartition, DuckDB INSERT": mb / duck_s,
        "repartition, ours in-process": mb / statistics.median(o for _, o, _ in rounds),
        "repartition, ours Spark local[2] excl. start": mb / statistics.median(s for *_, s in rounds),
    }


def con_path(name: str, base: str) -> str:
    """The catalog file of the copy ``name`` of ``base`` (``bench.compaction.copy``)."""
    return os.path.join(os.path.dirname(base), name, "c.sqlite")


def column_type_rewrite(base: str, mb: float, spark_start_s: float, target: str, runs: int = 1) -> dict[str, float]:
    """varchar -> int64 of ``v``, into files of ``target``; ``runs`` times each, alternating
    DuckDB, ours in-process and ours on Spark on fresh copies (min/median/max). CPU seconds
    of this process beside DuckDB's and the in-process figures: a fairer pairing than the
    wall clock when the machine is shared."""

    def with_target(name: str) -> CatalogLocation:
        shutil.rmtree(os.path.join(os.path.dirname(base), name), ignore_errors=True)
        location = copy(base, name)
        duck.run_workload(location, [f"CALL lk.set_option('target_file_size', '{target}')"])
        return location

    def duckdb_ctas(value: str = "CAST(v AS BIGINT)") -> tuple[float, float]:
        con = duck.attach(with_target("duckdb-retype"))
        seconds = cpu_timed(
            lambda: con.execute(f"CREATE TABLE lk.t2 AS SELECT id, ts, {value} AS v, payload, f FROM lk.t")
        )
        con.close()
        return seconds

    # the job's own conversion: only integer text becomes an integer (DuckDB's CAST also takes
    # '2.5' as 3 and '1e3' as 1000), checked per value; in DuckDB's CTAS it bounds ours
    column = TaskColumn((0,), parse_type("varchar"), parse_type("int64"))
    checked = converted_value(column, "v", "fail")

    def ours(name: str, runner: Runner) -> tuple[float, float]:
        catalog = Catalog.open(with_target(name))
        params = {"column": "v", "type": "int64"}
        report: dict[str, object] = {}
        seconds = cpu_timed(
            lambda: report.update(run_operation(catalog, "rewriteColumnType", "main.t", params, runner=runner))
        )
        assert report["committedSnapshot"] is not None and report["valuesNulled"] == 0, report
        catalog.close()
        return seconds

    theirs, strict, own, spark = [], [], [], []
    for _ in range(runs):
        theirs.append(duckdb_ctas())
        strict.append(duckdb_ctas(checked))
        own.append(ours("ours-retype", run_in_process))
        spark.append(ours("spark-retype", run_on_spark)[0])
    duck_s = median([w for w, _ in theirs])
    spread_line("varchar -> int64, DuckDB CREATE TABLE AS SELECT CAST", theirs, mb)
    spread_line("varchar -> int64, the same with the job's conversion", strict, mb, duck_s)
    bounds = [t[0] / c[0] for t, c in zip(theirs, strict, strict=True)]
    print(
        f"{'varchar -> int64, the bound the checks set on ours':<52} median {median(bounds):.2f} "
        f"(min {min(bounds):.2f}, max {max(bounds):.2f})",
        flush=True,
    )
    spread_line("varchar -> int64, ours in-process", own, mb, duck_s)
    spread_line("varchar -> int64, ours Spark local[2] incl. start", [spark_start_s + s for s in spark], mb, duck_s)
    spread_line("varchar -> int64, ours Spark local[2] excl. start", spark, mb, duck_s)
    return {
        "varchar -> int64, DuckDB CTAS": mb / duck_s,
        "varchar -> int64, ours in-process": mb / median([w for w, _ in own]),
        "varchar -> int64, ours Spark local[2] excl. start": mb / median(spark),
    }


def cpu_timed(fn: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds (every thread of this process) of ``fn``."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def spread_line(
    what: str, runs: list[tuple[float, float]] | list[float], mb: float, duckdb_s: float | None = None
) -> None:
    """min/median/max wall seconds, MB/s at the median, its ratio to DuckDB's median, and the
    median CPU seconds when measured."""
    walls = [r[0] if isinstance(r, tuple) else r for r in runs]
    cpus = [r[1] for r in runs if isinstance(r, tuple)]
    ratio = f"  ratio to DuckDB {duckdb_s / median(walls):.2f}" if duckdb_s else ""
    cpu = f"  CPU {median(cpus):.2f} s" if cpus else ""
    print(f"{what:<52} {spread(walls, mb)}{ratio}{cpu}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=1000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--target", default="256MB", help="target_file_size of the type rewrite (both sides)")
    parser.add_argument("--runs", type=int, default=3, help="paired rounds of each rewrite, contenders alternating")
    parser.add_argument("--only", choices=("repartition", "retype"), help="one of the two rewrites")
    args = parser.parse_args()
    os.environ["DUCKLAKE_SPARK_MASTER"] = "local[2]"
    work = tempfile.mkdtemp(prefix="bench-rewrite-")
    base = os.path.join(work, "base")
    os.makedirs(base)
    t0 = time.perf_counter()
    _, size = build(base, args.mb, args.files)
    mb = size / 1e6
    print(f"table: {args.files} files, {mb:.0f} MB of Parquet (built in {time.perf_counter() - t0:.0f} s)")
    spark_start_s = spark_start_seconds()  # once per process: both jobs' "incl. start" figures add it
    rates: dict[str, float] = {}
    if args.only != "retype":
        rates.update(repartition(base, mb, spark_start_s, args.runs))
    if args.only != "repartition":
        rates.update(column_type_rewrite(base, mb, spark_start_s, args.target, args.runs))
    print_limits(work, rates, data_files(base))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
