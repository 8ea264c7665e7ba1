"""The library and DuckDB 1.5.5 on the same catalog, both directions, on SQLite and PostgreSQL."""

from __future__ import annotations

import duckdb
import pytest

from ducklake_operator.catalog import Catalog
from ducklake_operator.model.changes import CreateSchema, CreateTable, DropTable, RenameTable, SetTags
from ducklake_operator.model.types import Field, parse_type, to_duckdb_sql
from support import duck

ALL_TYPES = [
    "boolean",
    "int8",
    "int16",
    "int32",
    "int64",
    "int128",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "uint128",
    "float32",
    "float64",
    "decimal(10,2)",
    "decimal(38,6)",
    "varchar",
    "blob",
    "json",
    "uuid",
    "date",
    "time",
    "timetz",
    "timestamp",
    "timestamptz",
    "timestamp_s",
    "timestamp_ms",
    "timestamp_ns",
    "interval",
    "int32[]",
    "STRUCT(a INTEGER, b VARCHAR)",
    "MAP(VARCHAR, INTEGER)",
    "STRUCT(inner STRUCT(x BIGINT, y DOUBLE[]), tags MAP(VARCHAR, STRUCT(v INTEGER)))",
    "STRUCT(a INTEGER)[]",
]


def fields(types: list[str]) -> tuple[Field, ...]:
    return tuple(Field(f"c{i}", parse_type(t)) for i, t in enumerate(types))


def library_describe(catalog: Catalog, schema: str, table: str, snapshot: int | None = None) -> list[tuple]:
    """(name, DuckDB type, null) rebuilt from the library's read of the catalog."""
    from ducklake_operator.model.types import ListOf, MapOf, Struct, from_catalog_name

    def to_type(col):
        if col.type_name == "struct":
            return Struct(tuple(Field(c.name, to_type(c)) for c in col.children))
        if col.type_name == "list":
            return ListOf(to_type(col.children[0]))
        if col.type_name == "map":
            return MapOf(to_type(col.children[0]), to_type(col.children[1]))
        return from_catalog_name(col.type_name)

    t = catalog.table(schema, table, snapshot)
    return [(c.name, to_duckdb_sql(to_type(c)), "YES" if c.nullable else "NO") for c in t.columns]


def normalise_describe(rows: list[tuple]) -> list[tuple]:
    return [(n, t.replace('"', ""), null) for n, t, null in rows]


def test_duckdb_works_on_a_catalog_the_library_created(catalog: Catalog, data_path: str) -> None:
    con = duck.attach(catalog.location)
    con.execute("CREATE TABLE lk.events(id INTEGER NOT NULL, name VARCHAR, payload STRUCT(a INTEGER, b VARCHAR[]))")
    con.execute("INSERT INTO lk.events SELECT i, 'n' || i, {'a': i, 'b': ['x']} FROM range(100) t(i)")
    con.execute("DELETE FROM lk.events WHERE id < 10")
    con.execute("ALTER TABLE lk.events ADD COLUMN extra BIGINT DEFAULT 7")
    con.execute("ALTER TABLE lk.events RENAME name TO label")
    con.execute("CREATE SCHEMA lk.s2")
    con.execute("CREATE TABLE lk.s2.t(x DOUBLE)")
    con.execute("COMMENT ON TABLE lk.events IS 'the events'")
    assert con.execute("SELECT count(*), sum(extra) FROM lk.events").fetchone() == (90, 630)

    state = catalog.state()
    assert set(state.schemas) == {"main", "s2"}
    assert set(state.tables) == {("main", "events"), ("s2", "t")}
    for schema, table in state.tables:
        expected = normalise_describe(duck.describe(con, f"lk.{schema}.{table}"))
        assert normalise_describe(library_describe(catalog, schema, table)) == expected
    events = state.table("main", "events")
    assert events is not None and events.comment == "the events"
    assert sum(f.record_count for f in events.data_files) == 100
    ours = [(s.snapshot_id, s.schema_version, s.author, s.commit_message) for s in catalog.snapshots()]
    theirs = [
        tuple(r[i] for i in (0, 2, 4, 5))
        for r in con.execute("FROM ducklake_snapshots('lk') ORDER BY snapshot_id").fetchall()
    ]
    assert ours == theirs


def test_library_tables_take_duckdb_data_of_every_type(catalog: Catalog) -> None:
    result = catalog.commit([CreateTable("main", "wide", fields(ALL_TYPES))], message="create wide")
    assert result.snapshot_id == 1
    con = duck.attach(catalog.location)
    assert normalise_describe(duck.describe(con, "lk.wide")) == normalise_describe(
        library_describe(catalog, "main", "wide")
    )
    # NULL rows go through inlining, a real row of the simple columns through a Parquet file.
    con.execute("INSERT INTO lk.wide (c0) VALUES (NULL), (true)")
    con.execute("INSERT INTO lk.wide (c3, c15) SELECT i, 'v' || i FROM range(50) t(i)")
    assert con.execute("SELECT count(*), count(c3), max(c15) FROM lk.wide").fetchone() == (52, 50, "v9")
    assert duck.scalar(con, "SELECT snapshot_id FROM ducklake_snapshots('lk') ORDER BY snapshot_id DESC LIMIT 1") == 3


def test_time_travel_shows_the_right_tables_at_every_snapshot(catalog: Catalog) -> None:
    s1 = catalog.commit([CreateTable("main", "a", fields(["int32"]))]).snapshot_id
    con = duck.attach(catalog.location)
    con.execute("INSERT INTO lk.a VALUES (1), (2)")
    s3 = catalog.commit([CreateSchema("s"), CreateTable("s", "b", fields(["varchar"]))]).snapshot_id
    t_a = catalog.state().table("main", "a")
    s4 = catalog.commit([RenameTable(t_a.table_id, "main.a", "a2")]).snapshot_id
    s5 = catalog.commit([DropTable(catalog.state().table("s", "b").table_id, "s.b")]).snapshot_id
    con = duck.attach(catalog.location, con=duck.connect())

    def tables_at(v: int | None) -> set[str]:
        names = set()
        for schema, table in [("main", "a"), ("main", "a2"), ("s", "b")]:
            try:
                con.execute(f'SELECT count(*) FROM lk."{schema}"."{table}" AT (VERSION => {v})').fetchone()
                names.add(f"{schema}.{table}")
            except duckdb.CatalogException:
                pass  # the table does not exist at v
        return names

    assert tables_at(s1) == {"main.a"}
    assert tables_at(s3) == {"main.a", "s.b"}
    assert tables_at(s4) == {"main.a2", "s.b"}
    assert tables_at(s5) == {"main.a2"}
    assert con.execute(f"SELECT count(*) FROM lk.a2 AT (VERSION => {s5})").fetchone() == (2,)
    assert con.execute(f"SELECT count(*) FROM lk.a AT (VERSION => {s1})").fetchone() == (0,)
    # The library reads the same history.
    assert set(catalog.state(s3).tables) == {("main", "a"), ("s", "b")}
    assert set(catalog.state(s4).tables) == {("main", "a2"), ("s", "b")}
    assert set(catalog.state(s5).tables) == {("main", "a2")}


def test_identifiers_are_data(catalog: Catalog) -> None:
    evil = 'x"; DROP TABLE ducklake_snapshot; --'
    catalog.commit(
        [
            CreateSchema("we ird"),
            CreateTable("we ird", evil, (Field("it's", parse_type("int32")), Field('q"q', parse_type("varchar")))),
        ]
    )
    state = catalog.state()
    table = state.table("we ird", evil)
    assert table is not None and [c.name for c in table.columns] == ["it's", 'q"q']
    assert table.path == table.table_uuid + "/"  # DuckDB's directory for such a name
    con = duck.attach(catalog.location)
    quoted = '"' + evil.replace('"', '""') + '"'
    con.execute(f"""INSERT INTO lk."we ird".{quoted} VALUES (1, 'a')""")
    assert con.execute(f'SELECT * FROM lk."we ird".{quoted}').fetchall() == [(1, "a")]
    snaps = con.execute("SELECT changes FROM ducklake_snapshots('lk') ORDER BY snapshot_id").fetchall()
    assert snaps[1][0] == {"schemas_created": ["we ird"], "tables_created": [f'"we ird".{quoted}']}


def test_comments_and_tags_are_what_duckdb_shows(catalog: Catalog) -> None:
    catalog.commit(
        [CreateTable("main", "t", (Field("a", parse_type("int32"), comment="the a"),), tags=(("comment", "tbl"),))]
    )
    con = duck.attach(catalog.location)
    row = con.execute("SELECT comment FROM duckdb_tables() WHERE database_name='lk' AND table_name='t'").fetchone()
    assert row == ("tbl",)
    assert con.execute(
        "SELECT comment FROM duckdb_columns() WHERE database_name='lk' AND table_name='t'"
    ).fetchone() == ("the a",)
    table_id = catalog.state().table("main", "t").table_id
    catalog.commit([SetTags(table_id, "main.t", (("comment", "changed"), ("owner", "team-a")))])
    con = duck.attach(catalog.location, con=duck.connect())
    assert con.execute(
        "SELECT comment FROM duckdb_tables() WHERE database_name='lk' AND table_name='t'"
    ).fetchone() == ("changed",)
    assert catalog.state().table("main", "t").tags == {"comment": "changed", "owner": "team-a"}
    # A no-op tag change creates no snapshot.
    before = catalog.snapshot().snapshot_id
    assert catalog.commit([SetTags(table_id, "main.t", (("owner", "team-a"),))]).snapshot_id is None
    assert catalog.snapshot().snapshot_id == before


@pytest.mark.parametrize(
    "statement",
    [
        "CREATE TABLE lk.t2(a INTEGER)",
        "ALTER TABLE lk.t ADD COLUMN b VARCHAR",
        "INSERT INTO lk.t VALUES (1)",
    ],
)
def test_duckdb_keeps_working_after_library_commits(catalog: Catalog, statement: str) -> None:
    con = duck.attach(catalog.location)  # attached before the library's commit
    catalog.commit([CreateTable("main", "t", fields(["int32"]))])
    con.execute(statement)
    con.execute("CREATE TABLE lk.after(z INTEGER)")
    assert {t for (_, t) in catalog.state().tables} >= {"t", "after"}
