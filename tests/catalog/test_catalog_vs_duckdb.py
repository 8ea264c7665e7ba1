"""Differential tests: the same operation done by DuckDB 1.5.5 and by the library must leave
the same catalog rows (uuids and times masked), on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable

import duckdb
import pytest

from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.model.changes import (
    CreateSchema,
    CreateTable,
    DropSchema,
    DropTable,
    RenameTable,
    SetOption,
    SetTags,
)
from ducklake_operator.model.types import Default, Field, parse_type
from support import duck
from support.dump import dump, inlined_columns

BACKENDS = ["sqlite", "postgres"]


def twin(
    make_location: Callable[[str], CatalogLocation], kind: str, tmp_path, setup_sql: str = ""
) -> tuple[Catalog, Catalog, duckdb.DuckDBPyConnection]:
    """Two catalogs in the same state: (driven by DuckDB, driven by the library, DuckDB conn)."""
    a = Catalog.create(make_location(kind), str(tmp_path / "a") + "/")
    b = Catalog.create(make_location(kind), str(tmp_path / "b") + "/")
    con = duck.attach(a.location, "da")
    if setup_sql:
        for stmt in setup_sql.split(";"):
            if stmt.strip():
                con.execute(stmt.replace("{lk}", "da"))
        con2 = duck.attach(b.location, "db")
        for stmt in setup_sql.split(";"):
            if stmt.strip():
                con2.execute(stmt.replace("{lk}", "db"))
        con2.close()
    return a, b, con


def assert_same_catalog(a: Catalog, b: Catalog) -> None:
    da, db = dump(a.location), dump(b.location)
    da.pop("ducklake_metadata"), db.pop("ducklake_metadata")  # data_path differs by construction
    for name in sorted(set(da) | set(db)):
        assert da.get(name) == db.get(name), f"{name} differs"
    assert inlined_columns(a.location) == inlined_columns(b.location)


@pytest.mark.parametrize("kind", BACKENDS)
def test_new_catalog_matches_duckdb(make_location, kind: str, tmp_path) -> None:
    ours = Catalog.create(make_location(kind), str(tmp_path / "x") + "/")
    theirs_location = make_location(kind)
    con = duck.connect()
    duck.attach(theirs_location, "t", con=con, data_path=str(tmp_path / "x") + "/")
    con.close()
    mine, theirs = dump(ours.location), dump(theirs_location)
    meta_mine = {r[0]: r for r in mine.pop("ducklake_metadata")}
    meta_theirs = {r[0]: r for r in theirs.pop("ducklake_metadata")}
    assert meta_mine.keys() == meta_theirs.keys()
    assert {k: v for k, v in meta_mine.items() if k != "created_by"} == {
        k: v for k, v in meta_theirs.items() if k != "created_by"
    }
    assert mine == theirs
    if kind == "postgres":  # and the physical column types of every table
        assert _pg_columns(ours.location) == _pg_columns(theirs_location)


def _pg_columns(location: CatalogLocation) -> list[tuple]:
    import psycopg2

    conn = psycopg2.connect(host=location.host, port=location.port, user=location.user, dbname=location.database)
    try:
        cur = conn.cursor()
        cur.execute("""SELECT table_name, column_name, data_type, is_nullable, ordinal_position
                       FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1, 5""")
        cols = cur.fetchall()
        cur.execute("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1")
        return cols + cur.fetchall()
    finally:
        conn.close()


CREATE_SQL = (
    "CREATE TABLE {lk}.t1(id INTEGER NOT NULL, name VARCHAR DEFAULT 'x', price DECIMAL(10,2), ts TIMESTAMP, "
    "tags VARCHAR[], s STRUCT(a INTEGER, b VARCHAR), m MAP(VARCHAR, INTEGER), u UUID, tz TIMESTAMPTZ, b BLOB, "
    "iv INTERVAL, tt TIMETZ, ub UBIGINT, f FLOAT, d DATE, h HUGEINT, j JSON, "
    "deep STRUCT(l STRUCT(x INTEGER)[], mm MAP(VARCHAR, STRUCT(v BIGINT))))"
)
CREATE_FIELDS = (
    Field("id", parse_type("int32"), nullable=False),
    Field("name", parse_type("varchar"), default=Default("x")),
    Field("price", parse_type("decimal(10,2)")),
    Field("ts", parse_type("timestamp")),
    Field("tags", parse_type("varchar[]")),
    Field("s", parse_type("STRUCT(a INTEGER, b VARCHAR)")),
    Field("m", parse_type("MAP(VARCHAR, INTEGER)")),
    Field("u", parse_type("uuid")),
    Field("tz", parse_type("timestamptz")),
    Field("b", parse_type("blob")),
    Field("iv", parse_type("interval")),
    Field("tt", parse_type("timetz")),
    Field("ub", parse_type("uint64")),
    Field("f", parse_type("float32")),
    Field("d", parse_type("date")),
    Field("h", parse_type("int128")),
    Field("j", parse_type("json")),
    Field("deep", parse_type("STRUCT(l STRUCT(x INTEGER)[], mm MAP(VARCHAR, STRUCT(v BIGINT)))")),
)


@pytest.mark.parametrize("kind", BACKENDS)
def test_create_table_matches_duckdb(make_location, kind: str, tmp_path) -> None:
    a, b, con = twin(make_location, kind, tmp_path)
    con.execute(CREATE_SQL.replace("{lk}", "da"))
    b.commit([CreateTable("main", "t1", CREATE_FIELDS)], author=None, message=None)
    assert_same_catalog(a, b)


@pytest.mark.parametrize("kind", BACKENDS)
def test_schema_and_table_lifecycle_matches_duckdb(make_location, kind: str, tmp_path) -> None:
    a, b, con = twin(make_location, kind, tmp_path, "CREATE TABLE {lk}.t(a INTEGER, b VARCHAR)")
    ops_sql = [
        "CREATE SCHEMA da.s2",
        "CREATE TABLE da.s2.x(v BIGINT)",
        "ALTER TABLE da.t RENAME TO t_renamed",
        "COMMENT ON TABLE da.t_renamed IS 'hello'",
        "DROP TABLE da.s2.x",
        "DROP SCHEMA da.s2",
    ]
    for sql in ops_sql:
        con.execute(sql)
    t_id = b.state().table("main", "t").table_id
    no_author = dict(author=None, message=None)
    b.commit([CreateSchema("s2")], **no_author)
    b.commit([CreateTable("s2", "x", (Field("v", parse_type("int64")),))], **no_author)
    b.commit([RenameTable(t_id, "main.t", "t_renamed")], **no_author)
    b.commit([SetTags(t_id, "main.t_renamed", (("comment", "hello"),))], **no_author)
    s = b.state()
    b.commit([DropTable(s.table("s2", "x").table_id, "s2.x")], **no_author)
    b.commit([DropSchema(s.schemas["s2"].schema_id, "s2")], **no_author)
    assert_same_catalog(a, b)


@pytest.mark.parametrize("kind", BACKENDS)
def test_options_are_stored_as_duckdb_stores_them(make_location, kind: str, tmp_path) -> None:
    a, b, con = twin(make_location, kind, tmp_path, "CREATE TABLE {lk}.t(a INTEGER)")
    for key, value in [
        ("target_file_size", "'10MB'"),
        ("parquet_version", "2"),
        ("rewrite_delete_threshold", "0.5"),
        ("parquet_compression", "'zstd'"),
        ("data_inlining_row_limit", "50"),
        ("auto_compact", "false"),
    ]:
        con.execute(f"CALL da.set_option('{key}', {value})")
    con.execute("CALL da.set_option('data_inlining_row_limit', 0, table_name => 't')")
    table_id = b.state().table("main", "t").table_id
    result = b.commit(
        [
            SetOption("targetFileSize", "10MB"),
            SetOption("parquetVersion", 2),
            SetOption("rewriteDeleteThreshold", 0.5),
            SetOption("parquetCompression", "zstd"),
            SetOption("dataInliningRowLimit", 50),
            SetOption("autoCompact", False),
            SetOption("dataInliningRowLimit", 0, scope="table", scope_id=table_id, scope_name="main.t"),
        ]
    )
    assert result.snapshot_id is None  # options alone make no snapshot, as in DuckDB
    ours = sorted(r for r in dump(b.location)["ducklake_metadata"] if r[0] not in ("data_path", "created_by"))
    theirs = sorted(r for r in dump(a.location)["ducklake_metadata"] if r[0] not in ("data_path", "created_by"))
    assert ours == theirs
    # and DuckDB reads them back through ducklake_options()
    con_b = duck.attach(b.location, "db")
    options = {(r[0], r[2], r[3]) for r in con_b.execute("FROM ducklake_options('db')").fetchall()}
    assert ("target_file_size", "10000000", "GLOBAL") in options
    assert ("data_inlining_row_limit", "0", "TABLE") in options


@pytest.mark.parametrize("kind", BACKENDS)
def test_inlining_disabled_means_no_inlined_table(make_location, kind: str, tmp_path) -> None:
    a, b, con = twin(make_location, kind, tmp_path, "CALL {lk}.set_option('data_inlining_row_limit', 0)")
    con.execute("CREATE TABLE da.t(a INTEGER)")
    b.commit([CreateTable("main", "t", (Field("a", parse_type("int32")),))], author=None, message=None)
    assert_same_catalog(a, b)
    assert not inlined_columns(b.location)
