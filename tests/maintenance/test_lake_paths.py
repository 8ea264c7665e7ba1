"""Every reader resolves catalog paths as DuckDB 1.5.5 does: schemas and tables with
absolute paths (DuckDB has no SQL for them, but reads and writes them when the catalog rows
say so), and a lake whose data moved, attached with OVERRIDE_DATA_PATH (DuckDB never
rewrites the stored data path). deleteOrphanFiles deletes exactly the orphan, as DuckDB's
``ducklake_delete_orphaned_files`` would, and never a live file; DuckDB reads every row
afterwards."""

from __future__ import annotations

import os
import shutil

import pytest
import sqlalchemy as sa

from ducklake_jobs.compact import compact
from ducklake_jobs.housekeeping import cleanup_files, delete_orphan_files
from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.catalog.connect import create_engine
from ducklake_operator.catalog.tables import CATALOG_TABLES as T
from ducklake_operator.use_cases import destroy_catalog
from support import duck

TABLES = ("s_abs.t1", "main.t2", "main.t3", "main.t4")


def set_path(location: CatalogLocation, table: str, key: str, value: object, path: str) -> None:
    """Give a schema or table row an absolute path, as another writer may have."""
    engine = create_engine(location)
    with engine.begin() as conn:
        t = T[table]
        conn.execute(t.update().where(t.c[key] == value).values(path=path, path_is_relative=False))
    engine.dispose()


def parquet_files(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".parquet")}


def plant_orphan(path: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    duck.connect().execute(f"COPY (SELECT 1 AS x) TO '{path}' (FORMAT parquet)")
    return path


def duckdb_orphans(location: CatalogLocation, data_path: str | None = None, moved: bool = False) -> list[str]:
    con = duck.connect()
    extra = ", OVERRIDE_DATA_PATH true" if moved else ""
    con.execute(f"ATTACH '{location.duckdb_attach_target()}' AS lk (DATA_PATH '{data_path}'{extra})")
    try:
        return sorted(
            r[0]
            for r in con.execute(
                "FROM ducklake_delete_orphaned_files('lk', dry_run => true, cleanup_all => true)"
            ).fetchall()
        )
    finally:
        con.close()


def rows(location: CatalogLocation, tables: tuple[str, ...], data_path: str | None = None) -> dict[str, list[tuple]]:
    con = duck.connect()
    extra = f" (DATA_PATH '{data_path}', OVERRIDE_DATA_PATH true)" if data_path else ""
    con.execute(f"ATTACH '{location.duckdb_attach_target()}' AS lk{extra}")
    try:
        return {t: con.execute(f"SELECT rowid, * FROM lk.{t} ORDER BY rowid").fetchall() for t in tables}
    finally:
        con.close()


def write_files(con, table: str) -> None:
    """Files, a merge (its sources scheduled for deletion) and a delete file."""
    for k in range(3):
        con.execute(f"INSERT INTO lk.{table} SELECT i FROM range({k * 10}, {k * 10 + 10}) t(i)")
    con.execute("CALL ducklake_merge_adjacent_files('lk')")
    con.execute(f"DELETE FROM lk.{table} WHERE id < 3")
    con.execute(f"INSERT INTO lk.{table} SELECT i FROM range(100, 110) t(i)")


def test_absolute_schema_and_table_paths(catalog: Catalog, location: CatalogLocation, data_path: str, tmp_path) -> None:
    outside = str(tmp_path / "outside") + "/"
    con = duck.attach(location)
    con.execute("CALL lk.set_option('data_inlining_row_limit', 0)")
    con.execute("CREATE SCHEMA lk.s_abs")
    for t in TABLES:
        con.execute(f"CREATE TABLE lk.{t}(id INTEGER)")
    table_ids = dict(con.execute("SELECT table_name, table_id FROM ducklake_table_info('lk')").fetchall())
    con.close()
    set_path(location, "ducklake_schema", "schema_name", "s_abs", data_path + "elsewhere/s/")  # t1: relative under it
    set_path(location, "ducklake_table", "table_id", table_ids["t2"], data_path + "abs_t2/")  # under the data path
    set_path(location, "ducklake_table", "table_id", table_ids["t3"], outside + "t3/")  # outside the data path
    con = duck.attach(location, con=duck.connect())
    for t in TABLES:
        write_files(con, t)
    con.close()
    assert parquet_files(data_path + "abs_t2/") and parquet_files(outside + "t3/")
    before = rows(location, TABLES)
    orphan = plant_orphan(data_path + "main/t4/ducklake-orphan.parquet")

    assert duckdb_orphans(location, data_path) == [orphan]
    assert delete_orphan_files(catalog, older_than="0s")["deleted"] == ["main/t4/ducklake-orphan.parquet"]
    assert rows(location, TABLES) == before

    for t in TABLES:  # the jobs write into and schedule from the same directories as DuckDB
        schema, name = t.split(".")
        assert compact(catalog, schema, name, apply_deletes=True)["committedSnapshot"]
    engine = create_engine(location)
    with engine.connect() as conn:
        sched = T["ducklake_files_scheduled_for_deletion"]
        stored = {(r.path, r.path_is_relative) for r in conn.execute(sa.select(sched.c.path, sched.c.path_is_relative))}
    engine.dispose()
    # as DuckDB stores them: relative to the data path when under it, else absolute
    assert any(p.startswith("elsewhere/s/t1/") and rel for p, rel in stored)
    assert any(p.startswith("abs_t2/") and rel for p, rel in stored)
    assert any(p.startswith(outside + "t3/") and not rel for p, rel in stored)
    assert rows(location, TABLES) == before
    assert delete_orphan_files(catalog, older_than="0s")["deleted"] == [] == duckdb_orphans(location, data_path)
    cleanup_files(catalog, older_than="0s")
    assert rows(location, TABLES) == before  # the scheduled files went, the live ones stayed

    live = parquet_files(data_path) | parquet_files(outside)
    assert destroy_catalog(catalog).files_deleted == len(live)  # catalog deletion finds every file
    assert parquet_files(data_path) == set() == parquet_files(outside)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_lake_moved_with_override_data_path(make_location, tmp_path, kind: str) -> None:
    location = make_location(kind)
    old, new = str(tmp_path / "old") + "/", str(tmp_path / "new") + "/"
    Catalog.create(location, old).close()
    duck.run_workload(
        location,
        ["CALL lk.set_option('data_inlining_row_limit', 0)", "CREATE SCHEMA lk.s", "CREATE TABLE lk.s.t(id INTEGER)"],
    )
    con = duck.attach(location, con=duck.connect())
    write_files(con, "s.t")
    con.close()
    shutil.move(old, new)
    con = duck.connect()  # DuckDB keeps writing where the lake is now
    con.execute(f"ATTACH '{location.duckdb_attach_target()}' AS lk (DATA_PATH '{new}', OVERRIDE_DATA_PATH true)")
    con.execute("INSERT INTO lk.s.t SELECT i FROM range(200, 210) t(i)")
    con.close()
    before = rows(location, ("s.t",), new)
    orphan = plant_orphan(new + "s/t/ducklake-orphan.parquet")

    moved = Catalog.open(location, expected_data_path=new, override_data_path=True)
    assert moved.state().data_path == new
    assert duckdb_orphans(location, new, moved=True) == [orphan]
    assert delete_orphan_files(moved, older_than="0s")["deleted"] == ["s/t/ducklake-orphan.parquet"]
    assert rows(location, ("s.t",), new) == before

    assert compact(moved, "s", "t", apply_deletes=True)["committedSnapshot"]  # writes where the lake is now
    assert rows(location, ("s.t",), new) == before
    cleanup_files(moved, older_than="0s")
    assert rows(location, ("s.t",), new) == before
    assert delete_orphan_files(moved, older_than="0s")["deleted"] == [] == duckdb_orphans(location, new, moved=True)
    assert not os.path.exists(old)
    moved.close()


def test_moved_lake_keeps_files_of_absolute_paths(make_location, tmp_path) -> None:
    """A table whose absolute path lay under the old data path: its rows still name the old
    place, but its files moved with the lake. DuckDB 1.5.5's own orphan scan lists those
    live files; ours keeps them (moving the lake back, DuckDB reads every row)."""
    location = make_location("sqlite")
    old, new = str(tmp_path / "old") + "/", str(tmp_path / "new") + "/"
    Catalog.create(location, old).close()
    duck.run_workload(location, ["CALL lk.set_option('data_inlining_row_limit', 0)", "CREATE TABLE lk.t(id INTEGER)"])
    set_path(location, "ducklake_table", "table_name", "t", old + "abs_t/")
    con = duck.attach(location, con=duck.connect())
    write_files(con, "t")
    con.close()
    before = rows(location, ("t",))
    shutil.move(old, new)
    files = parquet_files(new)
    assert files and set(duckdb_orphans(location, new, moved=True)) & files  # DuckDB would delete live files

    moved = Catalog.open(location, expected_data_path=new, override_data_path=True)
    assert delete_orphan_files(moved, older_than="0s")["deleted"] == []
    moved.close()
    assert parquet_files(new) == files
    shutil.move(new, old)
    assert rows(location, ("t",)) == before
