"""Differential: every kind of change, applied by our planner to one catalog and by DuckDB's
ALTER TABLE to a twin, must leave the same catalog rows and the same query results.

Both catalogs start identical: created by the library, the table created and filled by
DuckDB (inlined rows and a Parquet file). Compared afterwards: ``ducklake_column`` (ids,
types, defaults, parents, snapshots), ``schema_versions``, snapshots and their change
tokens, inlined tables, partition and sort rows, tags; then DuckDB's DESCRIBE and rows,
before and after new inserts, and time travel to before the change.

Known, deliberate differences from DuckDB 1.5.5 (not compared):
* rows DuckDB writes for *nested* alterations carry ``nulls_allowed=false`` and an empty
  ``default_value_type`` whatever was declared (docs/ducklake-format.md §3.5, a quirk DuckDB itself ignores);
  we write the declared values;
* the author and commit message (ours say what the operator did).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from ducklake_operator.api.v1alpha1.table import TableSpec
from ducklake_operator.catalog import Catalog
from ducklake_operator.use_cases import apply_plan
from support import duck
from support.dump import dump, inlined_columns
from support.manifests import parse_as

COMPARED = [
    "ducklake_snapshot",
    "ducklake_snapshot_changes",
    "ducklake_table",
    "ducklake_column",
    "ducklake_schema_versions",
    "ducklake_inlined_data_tables",
    "ducklake_partition_info",
    "ducklake_partition_column",
    "ducklake_sort_info",
    "ducklake_sort_expression",
    "ducklake_tag",
    "ducklake_column_tag",
    "ducklake_data_file",
    "ducklake_table_stats",
]


@dataclass
class Case:
    id: str
    create: str  # column list of the starting table
    alter: list[str]  # DuckDB statements, {t} = the table (run in one transaction)
    columns: list[dict[str, Any]]  # the manifest's columns after the change
    insert_after: str  # a VALUES list valid for the new schema
    evolution: dict[str, Any] = field(default_factory=dict)
    table: dict[str, Any] = field(default_factory=dict)  # other spec fields (comment, partitionBy, ...)
    setup: list[str] = field(default_factory=list)  # extra DuckDB statements before the change
    new_name: str = "t"


BASE = "id INTEGER, amount INTEGER, s STRUCT(a INTEGER, b VARCHAR), note VARCHAR"
BASE_COLS: list[dict[str, Any]] = [
    {"name": "id", "type": "int32"},
    {"name": "amount", "type": "int32"},
    {"name": "s", "type": "struct", "fields": [{"name": "a", "type": "int32"}, {"name": "b", "type": "varchar"}]},
    {"name": "note", "type": "varchar"},
]
NESTED = (
    "id INTEGER, s STRUCT(nest STRUCT(a INTEGER)), l STRUCT(a INTEGER)[], m MAP(VARCHAR, STRUCT(a INTEGER)), "
    "li INTEGER[], mv MAP(VARCHAR, INTEGER)"
)


def nested_cols(*, s=None, l=None, m=None, li="int32", mv="int32"):  # noqa: E741 (column l)
    return [
        {"name": "id", "type": "int32"},
        {
            "name": "s",
            "type": "struct",
            "fields": [{"name": "nest", "type": "struct", "fields": s or [{"name": "a", "type": "int32"}]}],
        },
        {"name": "l", "type": "list", "element": {"type": "struct", "fields": l or [{"name": "a", "type": "int32"}]}},
        {
            "name": "m",
            "type": "map",
            "key": "varchar",
            "value": {"type": "struct", "fields": m or [{"name": "a", "type": "int32"}]},
        },
        {"name": "li", "type": "list", "element": li},
        {"name": "mv", "type": "map", "key": "varchar", "value": mv},
    ]


def replace_col(cols: list[dict[str, Any]], name: str, new: dict[str, Any] | None) -> list[dict[str, Any]]:
    out = []
    for c in cols:
        if c["name"] == name:
            if new is not None:
                out.append(new)
        else:
            out.append(c)
    return out


CASES = [
    Case(
        "add column with default",
        BASE,
        ["ALTER TABLE {t} ADD COLUMN c INTEGER DEFAULT 42"],
        BASE_COLS + [{"name": "c", "type": "int32", "default": 42}],
        "(100, 1, {'a': 1, 'b': 'x'}, 'n', 7)",
    ),
    Case(
        "add column timestamptz default",
        BASE,
        ["ALTER TABLE {t} ADD COLUMN ts TIMESTAMPTZ DEFAULT '2024-01-01'"],
        BASE_COLS + [{"name": "ts", "type": "timestamptz", "default": "2024-01-01"}],
        "(100, 1, {'a': 1, 'b': 'x'}, 'n', '2025-02-02')",
    ),
    Case(
        "add struct column",
        BASE,
        ["ALTER TABLE {t} ADD COLUMN p STRUCT(x INTEGER, y VARCHAR[])"],
        BASE_COLS + [{"name": "p", "type": "STRUCT(x INTEGER, y VARCHAR[])"}],
        "(100, 1, {'a': 1, 'b': 'x'}, 'n', {'x': 1, 'y': ['q']})",
    ),
    Case(
        "add nested field",
        BASE,
        ["ALTER TABLE {t} ADD COLUMN s.c INTEGER"],
        replace_col(
            BASE_COLS,
            "s",
            {
                "name": "s",
                "type": "struct",
                "fields": [
                    {"name": "a", "type": "int32"},
                    {"name": "b", "type": "varchar"},
                    {"name": "c", "type": "int32"},
                ],
            },
        ),
        "(100, 1, {'a': 1, 'b': 'x', 'c': 3}, 'n')",
    ),
    Case(
        "add nested field with default",
        BASE,
        ["ALTER TABLE {t} ADD COLUMN s.d VARCHAR DEFAULT 'zz'"],
        replace_col(
            BASE_COLS,
            "s",
            {
                "name": "s",
                "type": "struct",
                "fields": [
                    {"name": "a", "type": "int32"},
                    {"name": "b", "type": "varchar"},
                    {"name": "d", "type": "varchar", "default": "zz"},
                ],
            },
        ),
        "(100, 1, {'a': 1, 'b': 'x', 'd': 'q'}, 'n')",
    ),
    Case(
        "drop column",
        BASE,
        ["ALTER TABLE {t} DROP COLUMN note"],
        BASE_COLS[:3],
        "(100, 1, {'a': 1, 'b': 'x'})",
        evolution={"allowDropColumns": True},
    ),
    Case(
        "drop nested field",
        BASE,
        ["ALTER TABLE {t} DROP COLUMN s.b"],
        replace_col(BASE_COLS, "s", {"name": "s", "type": "struct", "fields": [{"name": "a", "type": "int32"}]}),
        "(100, 1, {'a': 1}, 'n')",
        evolution={"allowDropColumns": True},
    ),
    Case(
        "rename column",
        BASE,
        ["ALTER TABLE {t} RENAME note TO remark"],
        replace_col(BASE_COLS, "note", {"name": "remark", "type": "varchar", "renamedFrom": ["note"]}),
        "(100, 1, {'a': 1, 'b': 'x'}, 'n')",
    ),
    Case(
        "rename nested field",
        BASE,
        ["ALTER TABLE {t} RENAME COLUMN s.a TO aa"],
        replace_col(
            BASE_COLS,
            "s",
            {
                "name": "s",
                "type": "struct",
                "fields": [{"name": "aa", "type": "int32", "renamedFrom": "a"}, {"name": "b", "type": "varchar"}],
            },
        ),
        "(100, 1, {'aa': 1, 'b': 'x'}, 'n')",
    ),
    Case(
        "promote column",
        BASE,
        ["ALTER TABLE {t} ALTER amount SET TYPE BIGINT"],
        replace_col(BASE_COLS, "amount", {"name": "amount", "type": "int64"}),
        "(100, 5000000000, {'a': 1, 'b': 'x'}, 'n')",
    ),
    Case(
        "promote struct field",
        BASE,
        ["ALTER TABLE {t} ALTER s SET TYPE STRUCT(a BIGINT, b VARCHAR)"],
        replace_col(
            BASE_COLS,
            "s",
            {
                "name": "s",
                "type": "struct",
                "fields": [{"name": "a", "type": "int64"}, {"name": "b", "type": "varchar"}],
            },
        ),
        "(100, 1, {'a': 5000000000, 'b': 'x'}, 'n')",
    ),
    Case(
        "set default",
        BASE,
        ["ALTER TABLE {t} ALTER note SET DEFAULT 'hello'"],
        replace_col(BASE_COLS, "note", {"name": "note", "type": "varchar", "default": "hello"}),
        "(100, 1, {'a': 1, 'b': 'x'}, DEFAULT)",
    ),
    # A YAML string default means what the YAML constant means (README: defaults); DuckDB
    # refuses `ADD COLUMN ... BOOLEAN DEFAULT true` ("non-literal"), so its 'true' is the twin.
    *(
        Case(
            f"add boolean column, default {value!r}",
            BASE,
            ["ALTER TABLE {t} ADD COLUMN c BOOLEAN DEFAULT 'true'"],
            BASE_COLS + [{"name": "c", "type": "boolean", "default": value}],
            "(100, 1, {'a': 1, 'b': 'x'}, 'n', false)",
        )
        for value in (True, "true", "t")
    ),
    *(
        Case(
            f"set boolean default {value!r}",
            BASE + ", flag BOOLEAN",
            ["ALTER TABLE {t} ALTER flag SET DEFAULT true"],
            BASE_COLS + [{"name": "flag", "type": "boolean", "default": value}],
            "(100, 1, {'a': 1, 'b': 'x'}, 'n', DEFAULT)",
        )
        for value in (True, "true")
    ),
    *(
        Case(
            f"add integer column, default {value!r}",
            BASE,
            ["ALTER TABLE {t} ADD COLUMN c INTEGER DEFAULT 5"],
            BASE_COLS + [{"name": "c", "type": "int32", "default": value}],
            "(100, 1, {'a': 1, 'b': 'x'}, 'n', DEFAULT)",
        )
        for value in (5, "5")
    ),
    Case(
        "drop default",
        "id INTEGER, note VARCHAR DEFAULT 'x'",
        ["ALTER TABLE {t} ALTER note DROP DEFAULT"],
        [{"name": "id", "type": "int32"}, {"name": "note", "type": "varchar"}],
        "(100, DEFAULT)",
    ),
    Case(
        "set not null",
        BASE,
        ["ALTER TABLE {t} ALTER id SET NOT NULL"],
        replace_col(BASE_COLS, "id", {"name": "id", "type": "int32", "nullable": False}),
        "(100, 1, {'a': 1, 'b': 'x'}, 'n')",
        evolution={"approvedPlan": "<hash>"},
    ),
    Case(
        "drop not null",
        "id INTEGER NOT NULL, note VARCHAR",
        ["ALTER TABLE {t} ALTER id DROP NOT NULL"],
        [{"name": "id", "type": "int32"}, {"name": "note", "type": "varchar"}],
        "(NULL, 'n')",
    ),
    Case(
        "comments",
        BASE,
        ["COMMENT ON TABLE {t} IS 'orders'", "COMMENT ON COLUMN {t}.note IS 'free text'"],
        replace_col(BASE_COLS, "note", {"name": "note", "type": "varchar", "comment": "free text"}),
        "(100, 1, {'a': 1, 'b': 'x'}, 'n')",
        table={"comment": "orders"},
    ),
    Case(
        "rename table",
        BASE,
        ["ALTER TABLE {t} RENAME TO t2"],
        BASE_COLS,
        "(100, 1, {'a': 1, 'b': 'x'}, 'n')",
        table={"renamedFrom": ["t"]},
        new_name="t2",
    ),
    Case(
        "partition by",
        BASE + ", ts TIMESTAMP",
        ["ALTER TABLE {t} SET PARTITIONED BY (note, year(ts))"],
        BASE_COLS + [{"name": "ts", "type": "timestamp"}],
        "(100, 1, {'a': 1, 'b': 'x'}, 'n', '2024-03-04')",
        table={"partitionBy": [{"column": "note"}, {"column": "ts", "transform": "year"}]},
    ),
    Case(
        "reset partitioning",
        BASE,
        ["ALTER TABLE {t} RESET PARTITIONED BY"],
        BASE_COLS,
        "(100, 1, {'a': 1, 'b': 'x'}, 'n')",
        setup=["ALTER TABLE {t} SET PARTITIONED BY (note)"],
    ),
    Case(
        "sort by",
        BASE,
        ["ALTER TABLE {t} SET SORTED BY (note DESC NULLS FIRST, id)"],
        BASE_COLS,
        "(100, 1, {'a': 1, 'b': 'x'}, 'n')",
        table={"sortBy": [{"column": "note", "direction": "desc", "nulls": "first"}, {"column": "id"}]},
    ),
    Case(
        "several changes, one snapshot",
        BASE,
        [
            "ALTER TABLE {t} RENAME note TO remark",
            "ALTER TABLE {t} ALTER amount SET TYPE BIGINT",
            "ALTER TABLE {t} ADD COLUMN s.c INTEGER",
            "ALTER TABLE {t} ADD COLUMN extra VARCHAR DEFAULT 'e'",
        ],
        [
            {"name": "id", "type": "int32"},
            {"name": "amount", "type": "int64"},
            {
                "name": "s",
                "type": "struct",
                "fields": [
                    {"name": "a", "type": "int32"},
                    {"name": "b", "type": "varchar"},
                    {"name": "c", "type": "int32"},
                ],
            },
            {"name": "remark", "type": "varchar", "renamedFrom": ["note"]},
            {"name": "extra", "type": "varchar", "default": "e"},
        ],
        "(100, 1, {'a': 1, 'b': 'x', 'c': 2}, 'n', 'q')",
    ),
    Case(
        "struct in struct: add field",
        NESTED,
        ["ALTER TABLE {t} ADD COLUMN s.nest.c INTEGER"],
        nested_cols(s=[{"name": "a", "type": "int32"}, {"name": "c", "type": "int32"}]),
        "(100, {'nest': {'a': 1, 'c': 2}}, [{'a': 1}], MAP {'k': {'a': 1}}, [1], MAP {'k': 1})",
    ),
    Case(
        "struct in list: add field",
        NESTED,
        ["ALTER TABLE {t} ADD COLUMN l.element.c INTEGER"],
        nested_cols(l=[{"name": "a", "type": "int32"}, {"name": "c", "type": "int32"}]),
        "(100, {'nest': {'a': 1}}, [{'a': 1, 'c': 5}], MAP {'k': {'a': 1}}, [1], MAP {'k': 1})",
    ),
    Case(
        "struct in map: add field",
        NESTED,
        ["ALTER TABLE {t} ADD COLUMN m.value.c INTEGER"],
        nested_cols(m=[{"name": "a", "type": "int32"}, {"name": "c", "type": "int32"}]),
        "(100, {'nest': {'a': 1}}, [{'a': 1}], MAP {'k': {'a': 1, 'c': 6}}, [1], MAP {'k': 1})",
    ),
    Case(
        "struct in list: rename field",
        NESTED,
        ["ALTER TABLE {t} RENAME COLUMN l.element.a TO aa"],
        nested_cols(l=[{"name": "aa", "type": "int32", "renamedFrom": "a"}]),
        "(100, {'nest': {'a': 1}}, [{'aa': 1}], MAP {'k': {'a': 1}}, [1], MAP {'k': 1})",
    ),
    Case(
        "struct in map: drop field",
        NESTED + ", extra INTEGER",
        ["ALTER TABLE {t} DROP COLUMN extra"],
        nested_cols(),
        "(100, {'nest': {'a': 1}}, [{'a': 1}], MAP {'k': {'a': 1}}, [1], MAP {'k': 1})",
        evolution={"allowDropColumns": True},
    ),
    Case(
        "promote list element",
        NESTED,
        ["ALTER TABLE {t} ALTER li SET TYPE BIGINT[]"],
        nested_cols(li="int64"),
        "(100, {'nest': {'a': 1}}, [{'a': 1}], MAP {'k': {'a': 1}}, [5000000000], MAP {'k': 1})",
    ),
    Case(
        "promote map value",
        NESTED,
        ["ALTER TABLE {t} ALTER mv SET TYPE MAP(VARCHAR, BIGINT)"],
        nested_cols(mv="int64"),
        "(100, {'nest': {'a': 1}}, [{'a': 1}], MAP {'k': {'a': 1}}, [1], MAP {'k': 5000000000})",
    ),
    Case(
        "promote field of struct in struct",
        NESTED,
        ["ALTER TABLE {t} ALTER s SET TYPE STRUCT(nest STRUCT(a BIGINT))"],
        nested_cols(s=[{"name": "a", "type": "int64"}]),
        "(100, {'nest': {'a': 5000000000}}, [{'a': 1}], MAP {'k': {'a': 1}}, [1], MAP {'k': 1})",
    ),
]

SEED = {
    BASE: [
        "(1, 10, {'a': 1, 'b': 'x'}, 'one')",
        "SELECT i, i * 10, {'a': i, 'b': 'b' || i}, 'n' || i FROM range(2, 40) t(i)",
    ],
    NESTED: [
        "(1, {'nest': {'a': 1}}, [{'a': 1}], MAP {'k': {'a': 1}}, [1, 2], MAP {'k': 1})",
        "SELECT i, {'nest': {'a': i}}, [{'a': i}], MAP {'k': {'a': i}}, [i], MAP {'k': i} FROM range(2, 40) t(i)",
    ],
}


def seed_rows(create: str) -> list[str]:
    for prefix, rows in SEED.items():
        if create.startswith(prefix):
            return _pad(rows, create[len(prefix) :].count(","))  # NULLs for extra trailing columns
    return ["(1, 'one')", "SELECT i, 'n' || i FROM range(2, 40) t(i)"]


def _pad(rows: list[str], extra: int) -> list[str]:
    if not extra:
        return rows
    nulls = ", NULL" * extra
    return [rows[0][:-1] + nulls + ")", rows[1].replace(" FROM range", nulls + " FROM range")]


def run(con, sql: str, table: str) -> None:
    con.execute(sql.replace("{t}", table))


def normalised_dump(catalog: Catalog) -> dict[str, list[tuple]]:
    out = dump(catalog.location, COMPARED)
    cols = out["ducklake_column"]
    # nested rows: DuckDB writes nulls_allowed/default_value_type quirkily (see module doc)
    out["ducklake_column"] = sorted(
        (r[:9] + ((None, r[10], None, r[12]) if r[10] is not None else r[9:])) for r in cols
    )
    out["ducklake_snapshot_changes"] = [r[:2] for r in out["ducklake_snapshot_changes"]]
    out["ducklake_data_file"] = [r[:5] + r[8:9] + r[11:] for r in out["ducklake_data_file"]]  # not path/size
    return out


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_change_matches_duckdb_alter(case: Case, kind: str, make_location, tmp_path) -> None:
    theirs = Catalog.create(make_location(kind), str(tmp_path / "a") + "/")
    ours = Catalog.create(make_location(kind), str(tmp_path / "b") + "/")
    cons = {}
    for name, cat in (("theirs", theirs), ("ours", ours)):
        con = duck.attach(cat.location, "lk")
        con.execute(f"CREATE TABLE lk.t({case.create})")
        first, bulk = seed_rows(case.create)
        con.execute(f"INSERT INTO lk.t VALUES {first}")  # inlined
        con.execute(f"INSERT INTO lk.t {bulk}")  # a Parquet file
        for sql in case.setup:
            run(con, sql, "lk.t")
        cons[name] = con
    before = ours.snapshot().snapshot_id
    old_rows = cons["ours"].execute("SELECT * FROM lk.t ORDER BY id").fetchall()

    cons["theirs"].execute("BEGIN")
    for sql in case.alter:
        run(cons["theirs"], sql, "lk.t")
    cons["theirs"].execute("COMMIT")

    doc: dict[str, Any] = {
        "apiVersion": "ducklake.dev/v1alpha1",
        "kind": "DuckLakeTable",
        "metadata": {"name": "t"},
        "spec": {
            "catalogRef": {"name": "lake"},
            "name": case.new_name,
            "columns": case.columns,
            "evolution": dict(case.evolution),
            **case.table,
        },
    }
    spec = parse_as(TableSpec, doc)
    if case.evolution.get("approvedPlan") == "<hash>":  # approve exactly the plan we are shown
        from ducklake_operator.use_cases import plan_for

        doc["spec"]["evolution"]["approvedPlan"] = plan_for(spec, ours.state()).hash
        spec = parse_as(TableSpec, doc)
    result = apply_plan(ours, spec)
    assert not result.plan.is_refused, result.plan.render()
    assert result.commit is not None and result.commit.snapshot_id == before + 1  # exactly one snapshot

    assert normalised_dump(ours) == normalised_dump(theirs)
    assert inlined_columns(ours.location) == inlined_columns(theirs.location)
    assert apply_plan(ours, spec).plan.is_empty  # applied: re-applying is a no-op

    # DuckDB sees the same table, also through the connection opened before the change.
    fresh = duck.attach(ours.location, "lk2", con=duck.connect())
    t_new = f"lk.{case.new_name}"
    assert duck.describe(fresh, f"lk2.{case.new_name}") == duck.describe(cons["theirs"], t_new)
    for con in cons.values():
        con.execute(f"INSERT INTO {t_new} VALUES {case.insert_after}")
        con.execute(f"DELETE FROM {t_new} WHERE id = 3")
    rows = [con.execute(f"SELECT * FROM {t_new} ORDER BY id NULLS FIRST").fetchall() for con in cons.values()]
    assert rows[0] == rows[1]
    assert fresh.execute(f"SELECT count(*) FROM lk2.{case.new_name}").fetchone() == (len(rows[1]),)
    # time travel to before the change: old schema, old values
    assert fresh.execute(f"SELECT * FROM lk2.t AT (VERSION => {before}) ORDER BY id").fetchall() == old_rows
