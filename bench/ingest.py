"""ingest throughput: our job vs DuckDB adding the columns and inserting the files' rows.

Makes one empty table ``lk.t(id BIGINT, ts TIMESTAMP, v VARCHAR)`` (SQLite catalog, local data
path; ``--partition-by``: partitioned, as DuckDB's ``SET PARTITIONED BY`` takes the keys) and
about --mb MB of input in --files files of each format of --formats (``json`` lines,
``csv``, ``parquet``), written by DuckDB's COPY ... TO from range(): records of the table's
columns and three new fields (``n`` BIGINT, ``s`` VARCHAR, ``d`` DOUBLE), so an ingest must add
three columns. Then, --runs times, alternating on fresh copies of the table:

* DuckDB, the counterpart the ingest tests compare against (tests/maintenance/
  test_ingest_vs_duckdb.py): in one transaction, ``ALTER TABLE lk.t ADD COLUMN`` for each new
  field, then ``INSERT INTO lk.t BY NAME SELECT * FROM read_json/read_csv/read_parquet(...)``;
* for JSON and CSV, DuckDB's same insert with ``sample_size = -1``: its readers type a column
  from a sample of the first records and change a later value that does not fit it (``2.5``
  read into a BIGINT as 2 from JSON, 3 from CSV; tests/maintenance/test_ingest_vs_duckdb.py),
  where every record typed first keeps it, as the ingest job does. Its ratio to the plain
  insert is the bound keeping every value sets on a reader of text;
* the ``ingest`` job in-process, and on Spark local[2] (with and without session start-up).

After every run both tables must hold the same columns and rows (count, sums, a hash of every
value), else it stops. Prints min/median/max seconds, MB/s of input at the median, the ratio of
the medians to DuckDB's, CPU seconds of this process (DuckDB's and the in-process job's), and
the disk's sequential write+read rate as the physical limit.

    python bench/ingest.py [--mb 1000 --files 20 --formats json,csv,parquet --runs 3] [--no-spark]
                           [--partition-by 'month(ts)']
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import duckdb  # noqa: E402
from bench.compaction import copy, median  # noqa: E402
from bench.physical import print_limits  # noqa: E402
from bench.rewrite import cpu_timed, spread_line  # noqa: E402
from bench.spark_start import spark_start_seconds  # noqa: E402

from ducklake_jobs.job_template import run_operation  # noqa: E402
from ducklake_jobs.task_runners import Runner, run_in_process, run_on_spark  # noqa: E402
from ducklake_operator.catalog import Catalog, CatalogLocation  # noqa: E402
from support import duck  # noqa: E402

FORMATS = {
    "json": ("json", "FORMAT JSON"),
    "csv": ("csv", "FORMAT CSV, HEADER"),
    "parquet": ("parquet", "FORMAT PARQUET"),
}
NEW_COLUMNS = (("n", "BIGINT"), ("s", "VARCHAR"), ("d", "DOUBLE"))
# the table's columns and the new fields; text that reads as neither number nor date
RECORD = (
    "SELECT i AS id, TIMESTAMP '2024-01-01' + INTERVAL (hash(i) % 31622400) SECOND AS ts, "
    "'v' || ((i * 7919) % 1000003) AS v, i * 3 AS n, 'x' || md5(i::VARCHAR) AS s, "
    "((hash(i) % 100000000) / 1000.0)::DOUBLE AS d FROM range({start}, {stop}) r(i)"
)
READERS = {"json": "read_json", "csv": "read_csv", "parquet": "read_parquet"}
SAMPLED = ("json", "csv")  # formats whose reader types a column from a sample of the records
CHECK = (
    "SELECT count(*), sum(id), sum(n), sum(epoch_us(ts)), sum(length(v) + length(s)), sum(round(d * 1000)::BIGINT), "
    "sum(hash(id, ts, v, n, s, d)) FROM lk.t"
)


def make_table(root: str, partition_by: str = "") -> CatalogLocation:
    """The empty table every run ingests into (copied fresh for each); ``partition_by``: its
    keys as DuckDB's ``SET PARTITIONED BY`` takes them (none: unpartitioned)."""
    location = CatalogLocation(kind="sqlite", path=os.path.join(root, "c.sqlite"))
    Catalog.create(location, os.path.join(root, "data") + "/").close()
    duck.run_workload(
        location,
        ["CALL lk.set_option('data_inlining_row_limit', 0)", "CREATE TABLE lk.t(id BIGINT, ts TIMESTAMP, v VARCHAR)"]
        + ([f"ALTER TABLE lk.t SET PARTITIONED BY ({partition_by})"] if partition_by else []),
    )
    return location


def make_input(directory: str, fmt: str, mb: int, files: int) -> tuple[int, int]:
    """``files`` files of about ``mb`` MB together in ``directory``; their rows and bytes."""
    ext, options = FORMATS[fmt]
    os.makedirs(directory)
    con = duckdb.connect()
    try:
        probe = os.path.join(directory, f"_probe.{ext}")  # bytes per row of this format
        con.execute(f"COPY ({RECORD.format(start=0, stop=100_000)}) TO '{probe}' ({options})")
        per_row = os.path.getsize(probe) / 100_000
        os.remove(probe)
        rows = max(1, int(mb * 1_000_000 / files / per_row))
        for k in range(files):
            path = os.path.join(directory, f"part-{k:05d}.{ext}")
            con.execute(f"COPY ({RECORD.format(start=k * rows, stop=(k + 1) * rows)}) TO '{path}' ({options})")
    finally:
        con.close()
    size = sum(os.path.getsize(os.path.join(directory, f)) for f in os.listdir(directory))
    return rows * files, size


def fresh(base: str, name: str) -> CatalogLocation:
    shutil.rmtree(os.path.join(os.path.dirname(base), name), ignore_errors=True)
    return copy(base, name)


def table_of(location: CatalogLocation) -> tuple[dict[str, str], tuple[Any, ...]]:
    """The table's columns (name -> DuckDB type) and ``CHECK`` of its rows, as DuckDB reads them."""
    con = duck.attach(location, con=duck.connect())
    try:
        types = {r[0]: r[1] for r in con.execute("DESCRIBE lk.t").fetchall()}
        row = con.execute(CHECK).fetchone()
        assert row is not None
        return types, tuple(row)
    finally:
        con.close()


def duckdb_ingest(
    base: str, source: str, fmt: str, every_record: bool = False
) -> tuple[tuple[float, float], CatalogLocation]:
    """DuckDB's insert of the files; ``every_record``: its reader types the columns from every
    record (``sample_size = -1``), not from a sample of the first."""
    location = fresh(base, "duckdb")
    con = duck.attach(location)
    pattern = os.path.join(source, f"*.{FORMATS[fmt][0]}")
    options = ", sample_size = -1" if every_record else ""
    statements = [
        "BEGIN",
        *(f"ALTER TABLE lk.t ADD COLUMN {name} {sql_type}" for name, sql_type in NEW_COLUMNS),
        f"INSERT INTO lk.t BY NAME SELECT * FROM {READERS[fmt]}('{pattern}'{options})",
        "COMMIT",
    ]
    try:
        seconds = cpu_timed(lambda: [con.execute(sql) for sql in statements])
    finally:
        con.close()
    return seconds, location


def our_ingest(
    base: str, name: str, source: str, fmt: str, runner: Runner, rows: int
) -> tuple[tuple[float, float], CatalogLocation]:
    location = fresh(base, name)
    catalog = Catalog.open(location)
    report: dict[str, Any] = {}
    try:
        params = {"path": source, "format": fmt}
        seconds = cpu_timed(lambda: report.update(run_operation(catalog, "ingest", "main.t", params, runner=runner)))
    finally:
        catalog.close()
    if report.get("committedSnapshot") is None or report.get("rowsWritten") != rows:
        raise SystemExit(f"ingest ({name}) did not ingest the {rows} rows: {report}")
    return seconds, location


def same_rows(
    what: str, location: CatalogLocation, expected: tuple[dict[str, str], tuple[Any, ...]], rows: int
) -> None:
    got = table_of(location)
    if got != expected or got[1][0] != rows:
        raise SystemExit(f"{what} differs from DuckDB's ingest ({rows} rows in the input):\n  {got}\n  {expected}")


def bench_format(
    work: str, base: str, fmt: str, args: argparse.Namespace, spark_start_s: float | None
) -> dict[str, float]:
    """The runs of one format; the medians' MB/s of input, by contender."""
    source = os.path.join(work, f"in-{fmt}")
    t0 = time.perf_counter()
    rows, size = make_input(source, fmt, args.mb, args.files)
    mb = size / 1e6
    print(f"\n{fmt}: {args.files} files, {rows} records, {mb:.0f} MB (written in {time.perf_counter() - t0:.0f} s)")
    theirs, every, own, spark = [], [], [], []
    sampled = fmt in SAMPLED
    for run in range(args.runs):  # alternating, each on a fresh copy of the empty table
        seconds, location = duckdb_ingest(base, source, fmt)
        theirs.append(seconds)
        expected = table_of(location)
        if expected[1][0] != rows:
            raise SystemExit(f"DuckDB inserted {expected[1][0]} rows of {rows}")
        if sampled:
            seconds, location = duckdb_ingest(base, source, fmt, every_record=True)
            every.append(seconds)
            same_rows("DuckDB's insert typed from every record", location, expected, rows)
        seconds, location = our_ingest(base, "ours", source, fmt, run_in_process, rows)
        own.append(seconds)
        same_rows("ingest in-process", location, expected, rows)
        line = f"run {run + 1}: DuckDB {theirs[-1][0]:.2f} s, ours in-process {own[-1][0]:.2f} s"
        if spark_start_s is not None:
            seconds, location = our_ingest(base, "spark", source, fmt, run_on_spark, rows)
            spark.append(seconds[0])
            same_rows("ingest on Spark", location, expected, rows)
            line += f", ours on Spark {spark[-1]:.2f} s"
        print(line, flush=True)
        for name in ("duckdb", "ours", "spark"):
            shutil.rmtree(os.path.join(work, name), ignore_errors=True)
    duck_s, own_s = median([w for w, _ in theirs]), median([w for w, _ in own])
    spread_line(f"{fmt}: DuckDB ALTER ADD COLUMN + INSERT {READERS[fmt]}", theirs, mb)
    if sampled:
        spread_line(f"{fmt}: the same, every record typed (sample_size -1)", every, mb, duck_s)
        bounds = [t[0] / e[0] for t, e in zip(theirs, every, strict=True)]
        print(
            f"{fmt + ': the bound keeping every value sets':<52} median {median(bounds):.2f} "
            f"(min {min(bounds):.2f}, max {max(bounds):.2f})",
            flush=True,
        )
    spread_line(f"{fmt}: ingest, in-process", own, mb, duck_s)
    if spark_start_s is not None:
        spread_line(f"{fmt}: ingest, Spark local[2] incl. start", [spark_start_s + s for s in spark], mb, duck_s)
        spread_line(f"{fmt}: ingest, Spark local[2] excl. start", spark, mb, duck_s)
    if sampled:
        every_s = median([w for w, _ in every])
        against = [("in-process", own_s)]
        if spark_start_s is not None:
            against += [("Spark excl. start", median(spark)), ("Spark incl. start", spark_start_s + median(spark))]
        print(
            f"{fmt + ': ours against the every-record insert':<52} "
            + ", ".join(f"{name} {every_s / s:.2f}" for name, s in against),
            flush=True,
        )
    shutil.rmtree(source, ignore_errors=True)
    rates = {f"{fmt}: DuckDB": mb / duck_s, f"{fmt}: ingest, in-process": mb / own_s}
    if spark:
        rates[f"{fmt}: ingest, Spark local[2] excl. start"] = mb / median(spark)
    return rates


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=1000, help="input of each format, about")
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--formats", "--format", default="json", help="json, csv, parquet, or several: json,csv")
    parser.add_argument("--runs", type=int, default=3, help="runs of each contender, alternating")
    parser.add_argument("--no-spark", action="store_true", help="DuckDB and in-process only")
    parser.add_argument("--partition-by", default="", help="the table's keys, as DuckDB takes them: 'month(ts)'")
    args = parser.parse_args()
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    if unknown := [f for f in formats if f not in FORMATS]:
        parser.error(f"unknown format {', '.join(unknown)} (json, csv, parquet)")
    os.environ["DUCKLAKE_SPARK_MASTER"] = "local[2]"
    work = tempfile.mkdtemp(prefix="bench-ingest-")
    base = os.path.join(work, "base")
    os.makedirs(base)
    make_table(base, args.partition_by)
    spark_start_s = None
    if not args.no_spark:
        spark_start_s = spark_start_seconds()  # once per process: every "incl. start" figure adds it
    rates: dict[str, float] = {}
    try:
        for fmt in formats:
            rates.update(bench_format(work, base, fmt, args, spark_start_s))
        print()
        print_limits(work, rates)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
