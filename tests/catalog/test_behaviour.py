"""Catalog library behaviour on both backends: refusals, atomicity, reading what DuckDB wrote."""

from __future__ import annotations

import os

import pytest
import sqlalchemy as sa

from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.catalog.read_state import load_catalog_state
from ducklake_operator.errors import (
    AlreadyExists,
    CatalogUnavailable,
    SchemaNotFound,
    SpecError,
    TableNotFound,
    UnsupportedCatalog,
)
from ducklake_operator.model.changes import CreateSchema, CreateTable, DropSchema, DropTable, RenameTable
from ducklake_operator.model.types import Field, parse_type
from support import duck
from support.dump import dump
from support.pgserver import free_port

INT = parse_type("int32")


def test_adopt_refuses_other_format_versions(catalog: Catalog) -> None:
    snapshot, version = catalog.health()  # the periodic health check's read
    assert (snapshot.snapshot_id, version) == (catalog.snapshot().snapshot_id, "1.0")
    with catalog.engine.begin() as conn:
        conn.execute(sa.text("UPDATE ducklake_metadata SET value = '0.3' WHERE key = 'version'"))
    before = dump(catalog.location)
    with pytest.raises(UnsupportedCatalog) as err:
        Catalog.open(catalog.location)
    assert "'0.3'" in str(err.value) and "AUTOMATIC_MIGRATION" in str(err.value)
    with pytest.raises(UnsupportedCatalog):
        catalog.commit([CreateTable("main", "t", (Field("a", INT),))])
    with pytest.raises(UnsupportedCatalog):  # a catalog migrated under a running operator
        catalog.health()
    assert dump(catalog.location) == before


def test_adopt_accepts_a_catalog_duckdb_created(make_location, tmp_path) -> None:
    location = make_location("postgres")
    con = duck.attach(location, data_path=str(tmp_path) + "/")
    con.execute("CREATE TABLE lk.t(a INTEGER)")
    con.close()
    catalog = Catalog.open(location, expected_data_path=str(tmp_path) + "/")
    assert catalog.state().table("main", "t") is not None
    with pytest.raises(SpecError, match="stores data_path"):
        Catalog.open(location, expected_data_path="/elsewhere/")


def test_unreachable_database_is_a_clear_error_without_credentials() -> None:
    location = CatalogLocation(
        kind="postgres", host="127.0.0.1", port=free_port(), database="nope", user="u", password="s3cret-pw"
    )
    with pytest.raises(CatalogUnavailable) as err:
        Catalog.open(location)
    assert "127.0.0.1" in str(err.value) and "s3cret-pw" not in str(err.value)
    assert "s3cret-pw" not in repr(location)


def test_wrong_password_is_unavailable_and_does_not_leak(pg_server) -> None:
    import psycopg2

    admin = psycopg2.connect(host=pg_server.host, port=pg_server.port, user="postgres", dbname="postgres")
    admin.autocommit = True
    admin.cursor().execute(
        "DO $$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname='pwuser') THEN CREATE ROLE pwuser LOGIN PASSWORD 'right'; END IF; END$$"
    )
    admin.close()
    # trust auth accepts any password, so a missing database stands in for a refused login
    location = CatalogLocation(
        kind="postgres",
        host=pg_server.host,
        port=pg_server.port,
        database="missing_db",
        user="pwuser",
        password="wrong-pw",
    )
    with pytest.raises(CatalogUnavailable) as err:
        Catalog.open(location)
    assert "wrong-pw" not in str(err.value)


@pytest.mark.parametrize("name", ["", "  padded", "new\nline", "nul\x00byte"])
def test_invalid_identifiers_write_nothing(catalog: Catalog, name: str) -> None:
    before = dump(catalog.location)
    with pytest.raises(SpecError):
        catalog.commit([CreateTable("main", name, (Field("a", INT),))])
    with pytest.raises(SpecError):
        catalog.commit([CreateTable("main", "ok", (Field(name, INT),))])
    assert dump(catalog.location) == before


def test_duplicate_columns_are_refused_case_insensitively(catalog: Catalog) -> None:
    with pytest.raises(SpecError, match="duplicate column name"):
        catalog.commit([CreateTable("main", "t", (Field("Id", INT), Field("id", INT)))])
    with pytest.raises(SpecError, match="s.X: duplicate"):
        catalog.commit([CreateTable("main", "t", (Field("s", parse_type("STRUCT(x INT, X INT)")),))])


def test_a_failing_change_rolls_back_the_whole_commit(catalog: Catalog) -> None:
    catalog.commit([CreateTable("main", "exists", (Field("a", INT),))])
    before = dump(catalog.location)
    with pytest.raises(AlreadyExists):
        catalog.commit(
            [
                CreateSchema("fresh"),
                CreateTable("fresh", "t", (Field("a", INT),)),
                CreateTable("main", "EXISTS", (Field("a", INT),)),
            ]
        )
    assert dump(catalog.location) == before
    with pytest.raises(SchemaNotFound):
        catalog.commit([CreateTable("nope", "t", (Field("a", INT),))])
    with pytest.raises(TableNotFound):
        catalog.commit([DropTable(999, "main.ghost")])
    assert dump(catalog.location) == before


def test_names_are_taken_as_duckdb_folds_them(catalog: Catalog) -> None:
    """DuckDB folds ASCII letters only: beside its table "Ça_i", "ÇA_I" is taken and "ça_I"
    is not; the catalog refuses and allows the same, also among many names in one commit."""
    duck.run_workload(catalog.location, ['CREATE TABLE lk."Ça_i"(a INTEGER)', "CREATE TABLE lk.Items(a INTEGER)"])
    before = dump(catalog.location)
    for taken in ("ÇA_I", "ITEMS", "items"):
        with pytest.raises(AlreadyExists):
            catalog.commit([CreateTable("main", f"free_{i}", (Field("a", INT),)) for i in range(20)]
                           + [CreateTable("main", taken, (Field("a", INT),))])  # fmt: skip
        assert dump(catalog.location) == before
    catalog.commit([CreateTable("main", "ça_I", (Field("a", INT),))])
    con = duck.attach(catalog.location)
    assert {r[0] for r in con.execute("SHOW TABLES FROM lk").fetchall()} == {"Items", "ça_I", "Ça_i"}


def test_names_fold_as_duckdb_whatever_the_databases_collation(pg_server, data_path) -> None:
    """A PostgreSQL catalog in a Turkish database, whose ``lower`` turns "I" into a dotless
    ı: DuckDB's "ITEMS" still takes the name "items"."""
    name = f"lake_tr_{os.getpid()}"
    pg_server.create_database(name, icu_locale="tr-TR")
    location = CatalogLocation(kind="postgres", host=pg_server.host, port=pg_server.port, database=name,
                               user=pg_server.user)  # fmt: skip
    catalog = Catalog.create(location, data_path)
    try:
        with catalog.engine.connect() as conn:
            assert conn.execute(sa.text("SELECT lower('I')")).scalar() == "ı"  # the premise
        duck.run_workload(location, ['CREATE TABLE lk."ITEMS"(a INTEGER)'])
        with pytest.raises(AlreadyExists):
            catalog.commit([CreateTable("main", "items", (Field("a", INT),))])
        tid = catalog.state().table("main", "ITEMS").table_id
        catalog.commit([CreateTable("main", "other", (Field("a", INT),))])
        with pytest.raises(AlreadyExists):
            catalog.commit([RenameTable(catalog.state().table("main", "other").table_id, "main.other", "Items")])
        catalog.commit([RenameTable(tid, "main.ITEMS", "items")])  # its own name, other letters' case
    finally:
        catalog.close()


def test_drop_schema_needs_cascade_when_not_empty(catalog: Catalog) -> None:
    catalog.commit([CreateSchema("s"), CreateTable("s", "t", (Field("a", INT),))])
    schema_id = catalog.state().schemas["s"].schema_id
    with pytest.raises(SpecError, match="not empty"):
        catalog.commit([DropSchema(schema_id, "s")])
    result = catalog.commit([DropSchema(schema_id, "s", cascade=True)])
    assert result.changes_made and result.changes_made.startswith("dropped_schema:")
    assert "s" not in catalog.state().schemas and not catalog.state().tables
    con = duck.attach(catalog.location)
    assert con.execute(
        "SELECT count(*) FROM duckdb_schemas() WHERE database_name = 'lk' AND schema_name = 's'"
    ).fetchone() == (0,)


def test_rename_checks_the_name_it_planned_against(catalog: Catalog) -> None:
    catalog.commit([CreateTable("main", "t", (Field("a", INT),)), CreateTable("main", "u", (Field("a", INT),))])
    tid = catalog.state().table("main", "t").table_id
    with pytest.raises(AlreadyExists):
        catalog.commit([RenameTable(tid, "main.t", "U")])
    catalog.commit([RenameTable(tid, "main.t", "t2")])
    from ducklake_operator.errors import CommitConflict

    with pytest.raises(CommitConflict, match="now called 't2'"):
        catalog.commit([RenameTable(tid, "main.t", "t3")])


def test_reads_everything_duckdb_writes(catalog: Catalog) -> None:
    con = duck.attach(catalog.location)
    con.execute("CREATE TABLE lk.p(id INTEGER, cat VARCHAR, ts TIMESTAMP)")
    con.execute("ALTER TABLE lk.p SET PARTITIONED BY (cat, year(ts))")
    con.execute("ALTER TABLE lk.p SET SORTED BY (id DESC NULLS FIRST)")
    con.execute(
        "INSERT INTO lk.p SELECT i, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END, TIMESTAMP '2024-01-01' + INTERVAL (i) DAY FROM range(400) t(i)"
    )
    con.execute("DELETE FROM lk.p WHERE id BETWEEN 10 AND 60")
    con.execute("INSERT INTO lk.p VALUES (1000, 'c', NULL)")  # inlined
    state = catalog.state()
    p = state.table("main", "p")
    assert p is not None
    assert [(f.key_index, f.transform) for f in p.partition.fields] == [(0, "identity"), (1, "year")]
    assert [(f.expression, f.direction, f.null_order) for f in p.sort.fields] == [("id", "DESC", "NULLS_FIRST")]
    expected_files = duck.scalar(con, "SELECT count(*) FROM ducklake_list_files('lk', 'p')")
    assert len(p.data_files) == expected_files
    assert all(f.partition_values for f in p.data_files)
    deleted = sum(d.delete_count for d in p.delete_files)
    assert sum(f.record_count for f in p.data_files) - deleted == 400 - 51
    assert p.stats is not None and p.stats.record_count == 401 and p.stats.next_row_id == 401
    assert {c.column_id for c in p.columns} <= set(p.stats.columns)
    assert p.inlined_tables and p.inlined_tables[-1].name.startswith("ducklake_inlined_data_")
    from ducklake_operator.catalog.inlined import load_inlined_rows

    with catalog.engine.connect() as conn:
        rows = load_inlined_rows(conn, p, state.snapshot.snapshot_id)
    assert [r["id"] for r in rows] == [1000]


def test_reading_many_tables_takes_a_fixed_number_of_queries(catalog: Catalog) -> None:
    def count_queries() -> int:
        statements: list[str] = []
        listener = lambda *args: statements.append(args[2])  # noqa: E731
        sa.event.listen(catalog.engine, "before_cursor_execute", listener)
        try:
            with catalog.engine.connect() as conn:
                state = load_catalog_state(conn)
        finally:
            sa.event.remove(catalog.engine, "before_cursor_execute", listener)
        assert state.tables
        return len(statements)

    catalog.commit(
        [CreateTable("main", f"t{i}", (Field("a", INT), Field("s", parse_type("STRUCT(x INT)")))) for i in range(3)]
    )
    few = count_queries()
    catalog.commit([CreateTable("main", f"u{i}", (Field("a", INT),)) for i in range(300)])
    assert len(catalog.state().tables) == 303
    assert count_queries() == few <= 20


def test_a_commit_of_many_tables_sends_a_statement_per_catalog_table(catalog: Catalog) -> None:
    """Tables created in one commit (a storm merged by the CommitBatcher) share their inserts:
    one per catalog table, whatever their number; each adds only its inlined-data table's
    DDL. DuckDB reads every table, column and tag."""

    def statements_of(changes: list[CreateTable]) -> list[str]:
        sent: list[str] = []
        listener = lambda *args: sent.append(args[2])  # noqa: E731
        sa.event.listen(catalog.engine, "before_cursor_execute", listener)
        try:
            catalog.commit(changes)
        finally:
            sa.event.remove(catalog.engine, "before_cursor_execute", listener)
        return sent

    def tables(prefix: str, n: int) -> list[CreateTable]:
        columns = (Field("a", INT), Field("s", parse_type("STRUCT(x INT, y VARCHAR[])"), comment="nested"))
        return [CreateTable("main", f"{prefix}{i}", columns, tags=(("owner", f"team{i}"),)) for i in range(n)]

    few, many = statements_of(tables("few", 3)), statements_of(tables("many", 30))
    ddl = [s for s in many if s.lstrip().upper().startswith("CREATE TABLE")]
    assert len(ddl) == 30
    assert len(many) - len(few) == 27
    con = duck.attach(catalog.location)
    assert duck.scalar(con, "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'lk'") == 33
    assert duck.scalar(con, "SELECT count(*) FROM duckdb_columns() WHERE database_name = 'lk'") == 66
    assert con.execute("SELECT comment, tags FROM duckdb_tables() WHERE table_name = 'many29'").fetchone() == (
        None,
        {"owner": "team29"},
    )
    assert con.execute(
        "SELECT comment FROM duckdb_columns() WHERE table_name = 'many29' AND column_name = 's'"
    ).fetchone() == ("nested",)
    con.execute("INSERT INTO lk.many29 VALUES (1, {'x': 2, 'y': ['z']})")
    assert con.execute("SELECT a, s FROM lk.many29").fetchall() == [(1, {"x": 2, "y": ["z"]})]


def test_catalog_in_its_own_postgres_schema(pg_location, data_path) -> None:
    """METADATA_SCHEMA: everything, dynamic inlined tables included, lives in that schema."""
    from dataclasses import replace

    from ducklake_operator.catalog.inlined import load_inlined_rows

    location = replace(pg_location, schema="lake_meta")
    catalog = Catalog.create(location, data_path)
    catalog.commit([CreateTable("main", "t", (Field("a", INT),))])
    con = duck.attach(location)
    con.execute("INSERT INTO lk.t VALUES (7)")  # inlined
    state = catalog.state()
    table = state.table("main", "t")
    assert table is not None
    with catalog.engine.connect() as conn:
        assert [r["a"] for r in load_inlined_rows(conn, table, state.snapshot.snapshot_id)] == [7]
