"""Every job (the heavy ones too) on an s3:// data path, against a real S3 API (moto's server
on loopback), with DuckDB reading the same lake through its httpfs extension: the rows never
change, files land in and disappear from the bucket as they should."""

from __future__ import annotations

import json

import pyarrow.fs as pafs
import pytest

from ducklake_jobs.job_template import run_operation
from ducklake_jobs.task_runners import run_on_spark
from ducklake_operator import storage
from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.cli import main
from ducklake_operator.duckdb_client import configure_s3
from support import duck
from support.job_program import catalog_file, catalog_manifest


def duckdb_on(location, data_path: str | None = None):
    """DuckDB attached to the lake on S3 (``data_path``: creating it there)."""
    con = duck.connect()
    configure_s3(con)
    return duck.attach(location, con=con, data_path=data_path)


def rows(location) -> list[tuple]:
    con = duckdb_on(location)
    try:
        return con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall()
    finally:
        con.close()


def bucket_files(root: str) -> set[str]:
    return {f.path[len(root) :] for f in storage.list_files(root)}


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_jobs_on_s3(make_location, s3_bucket: str, kind: str) -> None:
    location, root = make_location(kind), s3_bucket + "lake/"
    con = duckdb_on(location, root)
    con.execute("CREATE TABLE lk.t(id INTEGER, v VARCHAR)")
    for k in range(4):
        con.execute(f"INSERT INTO lk.t SELECT i, 'v' || i FROM range({k * 100}, {k * 100 + 100}) t(i)")
    con.execute("DELETE FROM lk.t WHERE id BETWEEN 300 AND 390")  # a delete file on S3
    con.execute("DELETE FROM lk.t WHERE id = 250")  # an inlined file deletion
    con.execute("INSERT INTO lk.t VALUES (1000, 'inlined')")
    con.close()
    expected = rows(location)
    catalog = Catalog.open(location)
    assert catalog.state().data_path == root

    flushed = run_operation(catalog, "flushInlinedData", None, {})
    assert flushed["rowsFlushed"] == 1 and flushed["deletionsFlushed"] == 1 and rows(location) == expected
    rewritten = run_operation(catalog, "rewriteDeletes", "main.t", {"deleteThreshold": 0.5})
    assert rewritten["filesRead"] == 1 and rewritten["rowsWritten"] == 9 and rows(location) == expected
    compacted = run_operation(catalog, "compact", "main.t", {}, runner=run_on_spark)  # Spark tasks writing to S3
    assert compacted["filesWritten"] == 1 and compacted["filesRead"] >= 3 and rows(location) == expected
    live = {f.path for f in catalog.state().table("main", "t").data_files}
    assert all(p in {x.rsplit("/", 1)[-1] for x in bucket_files(root)} for p in live)

    before = bucket_files(root)
    expired = run_operation(catalog, "expireSnapshots", None, {"olderThan": "0s", "retainLast": 1})
    assert expired["expired"]
    cleaned = run_operation(catalog, "cleanupFiles", None, {"olderThan": "0s"})
    assert cleaned["deleted"] and not (bucket_files(root) & set(cleaned["deleted"]))
    assert bucket_files(root) == before - set(cleaned["deleted"])
    assert rows(location) == expected

    fs, inner = storage.filesystem(root)
    with fs.open_output_stream(inner + "main/t/ducklake-stray.parquet") as out:  # a crashed writer's file
        out.write(b"PAR1")
    with fs.open_output_stream(inner + "../outside.parquet") as out:  # outside the data path: never touched
        out.write(b"PAR1")
    dry = run_operation(catalog, "deleteOrphanFiles", None, {"olderThan": "0s", "dryRun": True})
    assert dry["deleted"] == ["main/t/ducklake-stray.parquet"]
    assert run_operation(catalog, "deleteOrphanFiles", None, {"olderThan": "0s"})["deleted"] == [
        "main/t/ducklake-stray.parquet"
    ]
    assert "main/t/ducklake-stray.parquet" not in bucket_files(root)
    assert fs.get_file_info(s3_bucket[5:] + "outside.parquet").type == pafs.FileType.File
    assert rows(location) == expected

    con = duckdb_on(location)  # DuckDB keeps writing to the lake on S3
    con.execute("INSERT INTO lk.t SELECT i, 'late' FROM range(2000, 2100) t(i)")
    con.execute("CALL ducklake_merge_adjacent_files('lk')")
    assert con.execute("SELECT count(*) FROM lk.t").fetchone() == (len(expected) + 100,)


def test_cli_takes_the_s3_settings_of_the_catalog_manifest(
    tmp_path, s3_server, s3_bucket: str, monkeypatch, capsys
) -> None:
    """``spec.storage.s3`` of the DuckLakeCatalog (endpoint, region) reaches the jobs, their
    Spark tasks and ``ducklake sql``: the environment names no endpoint here."""
    location, root = CatalogLocation(kind="sqlite", path=str(tmp_path / "c.sqlite")), s3_bucket + "lake/"
    con = duckdb_on(location, root)
    con.execute("CREATE TABLE lk.t(id INTEGER)")
    for k in range(3):
        con.execute(f"INSERT INTO lk.t SELECT i FROM range({k * 100}, {k * 100 + 100}) t(i)")
    con.close()
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    s3 = {"endpoint": s3_server.endpoint, "region": "us-east-1", "urlStyle": "path"}
    manifest = catalog_file(catalog_manifest(location, root, storage={"s3": s3}), str(tmp_path))
    capsys.readouterr()
    assert main(["run-job", "compact", "main.t", "-f", manifest]) == 0  # Spark tasks
    report = json.loads(capsys.readouterr().out)
    assert report["filesRead"] == 3 and report["filesWritten"] == 1
    assert main(["sql", "-f", manifest, "SELECT count(*) AS n, sum(id) AS s FROM lake.t"]) == 0
    assert "300" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_heavy_jobs_on_s3(make_location, s3_bucket: str, kind: str) -> None:
    """repartition and rewriteColumnType (its file groups as Spark tasks) on a lake in S3:
    DuckDB reads the new partitioning and type now and the old values at the snapshot
    before, whose files stay in the bucket for it."""
    location, root = make_location(kind), s3_bucket + "lake/"
    con = duckdb_on(location, root)
    con.execute("CREATE TABLE lk.t(id INTEGER, p INTEGER, v VARCHAR)")
    for k in range(3):
        con.execute(f"INSERT INTO lk.t SELECT i, i % 4, (i * 7)::VARCHAR FROM range({k * 100}, {k * 100 + 100}) t(i)")
    con.execute("DELETE FROM lk.t WHERE id < 10")
    con.execute("ALTER TABLE lk.t SET PARTITIONED BY (p)")
    con.close()
    expected = rows(location)
    catalog = Catalog.open(location)
    before = catalog.snapshot().snapshot_id

    moved = run_operation(catalog, "repartition", "main.t", {})
    assert moved["filesRead"] == 3 and moved["filesWritten"] == 4 and rows(location) == expected
    live = catalog.state().table("main", "t").data_files
    assert sorted(f.path.split("/")[0] for f in live) == [f"p={k}" for k in range(4)]  # hive directories on S3
    retyped = run_operation(
        catalog, "rewriteColumnType", "main.t", {"column": "v", "type": "int64"}, runner=run_on_spark
    )
    assert retyped["filesWritten"] == 4
    now_live = catalog.state().table("main", "t").data_files
    assert {f.path for f in now_live}.isdisjoint(f.path for f in live)
    in_bucket = bucket_files(root)
    assert all(f"main/t/{f.path}" in in_bucket for f in (*live, *now_live))  # the replaced ones: for old snapshots

    con = duckdb_on(location)
    assert con.execute("SELECT column_type FROM (DESCRIBE lk.t) WHERE column_name = 'v'").fetchone() == ("BIGINT",)
    assert con.execute("SELECT rowid, id, p, v::VARCHAR FROM lk.t ORDER BY rowid").fetchall() == expected
    assert con.execute(f"SELECT rowid, * FROM lk.t AT (VERSION => {before}) ORDER BY rowid").fetchall() == expected
    plan = con.execute("EXPLAIN ANALYZE SELECT count(*) FROM lk.t WHERE p = 2").fetchall()
    assert "Total Files Read: 1" in plan[0][1]
    con.execute("INSERT INTO lk.t VALUES (5000, 3, 1)")
    con.execute("CALL ducklake_merge_adjacent_files('lk')")
    total = sum(int(r[3]) for r in expected) + 1
    assert con.execute("SELECT count(*), sum(v) FROM lk.t").fetchone() == (len(expected) + 1, total)
    con.close()
