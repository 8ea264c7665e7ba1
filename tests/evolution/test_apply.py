"""Apply behaviour: refusals change nothing, bad manifests get clear errors, drift is seen."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ducklake_operator.api.load import parse_manifest
from ducklake_operator.api.v1alpha1.table import TableSpec
from ducklake_operator.catalog import Catalog
from ducklake_operator.errors import SpecError
from ducklake_operator.use_cases import apply_plan, drift, plan_for
from support import duck, manifests
from support.dump import dump
from support.manifests import parse_as

COLUMNS: list[dict[str, Any]] = [
    {"name": "id", "type": "int64", "nullable": False},
    {"name": "amount", "type": "int32"},
    {"name": "legacy_flag", "type": "boolean"},
    {"name": "customer", "type": "struct", "fields": [{"name": "name", "type": "varchar"}]},
]


def manifest(columns: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    return manifests.table("orders", "lake", copy.deepcopy(columns or COLUMNS), **spec)


@pytest.fixture
def orders(catalog: Catalog) -> Catalog:
    apply_plan(catalog, parse_as(TableSpec, manifest()))
    con = duck.attach(catalog.location)
    con.execute("INSERT INTO lk.orders VALUES (1, 10, true, {'name': 'a'})")
    con.execute("INSERT INTO lk.orders SELECT i, i, false, {'name': 'n'} FROM range(2, 30) t(i)")
    return catalog


@pytest.mark.parametrize(
    "edit, reason, allow",
    [
        (
            lambda cols: [c for c in cols if c["name"] != "legacy_flag"],
            "allowDropColumns is false",
            "allowDropColumns: true",
        ),
        (
            lambda cols: [dict(c, type="float64") if c["name"] == "amount" else c for c in cols],
            "not a lossless promotion",
            "typeChanges: rewrite",
        ),
        (
            lambda cols: [dict(c, type="int16") if c["name"] == "amount" else c for c in cols],
            "int32 → int16 is not a lossless",
            "or its old type",  # no rewrite converts it either
        ),
        (
            lambda cols: [dict(c, nullable=False) if c["name"] == "amount" else c for c in cols],
            "makes amount NOT NULL",
            "approvedPlan",
        ),
        (
            lambda cols: [
                dict(c, type="varchar") if c["name"] == "customer" else {k: v for k, v in c.items()}
                for c in cols
                if True
            ],
            "changes the kind",
            "or its old type",
        ),
    ],
)
def test_blocked_plans_change_nothing(orders: Catalog, edit, reason: str, allow: str) -> None:
    cols = edit(copy.deepcopy(COLUMNS))
    for c in cols:
        if c["name"] == "customer" and c["type"] == "varchar":
            c.pop("fields")
    spec = parse_as(TableSpec, manifest(cols))
    before = dump(orders.location)
    result = apply_plan(orders, spec)
    assert result.plan.is_refused and result.commit is None
    rendered = result.plan.render()
    assert reason in rendered and allow in rendered and "nothing applied" in rendered
    assert dump(orders.location) == before


def test_drop_is_applied_when_allowed_or_approved(orders: Catalog) -> None:
    cols = [c for c in COLUMNS if c["name"] != "legacy_flag"]
    plan = plan_for(parse_as(TableSpec, manifest(cols)), orders.state())
    assert plan.is_refused
    approved = parse_as(TableSpec, manifest(cols, evolution={"approvedPlan": plan.hash}))
    result = apply_plan(orders, approved)
    assert result.commit is not None and "approved" in result.plan.render()
    con = duck.attach(orders.location)
    assert [r[0] for r in con.execute("DESCRIBE lk.orders").fetchall()] == ["id", "amount", "customer"]
    # an approval is void once the plan changes
    stale = parse_as(
        TableSpec, manifest([c for c in cols if c["name"] != "amount"], evolution={"approvedPlan": plan.hash})
    )
    assert apply_plan(orders, stale).plan.is_refused


def test_dropped_then_readded_column_gets_a_new_id(orders: Catalog) -> None:
    cols = [c for c in COLUMNS if c["name"] != "amount"]
    apply_plan(orders, parse_as(TableSpec, manifest(cols, evolution={"allowDropColumns": True})))
    apply_plan(orders, parse_as(TableSpec, manifest(cols + [{"name": "amount", "type": "int32"}])))
    table = orders.state().table("main", "orders")
    assert table.column("amount").column_id == 6  # ids 1-5 were taken (struct field included)
    con = duck.attach(orders.location)
    # old files' amount values never surface under the new column
    assert con.execute("SELECT count(*), count(amount) FROM lk.orders").fetchone() == (29, 0)


@pytest.mark.parametrize(
    "columns, fragment",
    [
        (
            [{"name": "id", "type": "int65"}],
            "spec.columns[0].type: 'int65' is not a DuckLake type; did you mean int64?",
        ),
        (
            [{"name": "id", "type": "int32"}, {"name": "ID", "type": "int64"}],
            "spec.columns[1].name: duplicate column name",
        ),
        (
            [
                {"name": "a", "type": "int32", "renamedFrom": ["x"]},
                {"name": "b", "type": "int32", "renamedFrom": ["x"]},
            ],
            "'x' is also claimed by spec.columns[0]",
        ),
        ([{"name": "a", "type": "int32", "renamedFrom": "a"}], "is the column's own name"),
        ([{"name": "", "type": "int32"}], "spec.columns[0].name: column name must be a non-empty string"),
        ([{"name": "a\nb", "type": "int32"}], "control character"),
        ([{"name": "a", "type": "struct"}], "struct needs fields"),
        ([{"name": "a", "type": "int32", "default": "abc"}], "default 'abc' is not a valid int32"),
        ([{"name": "a", "type": "int32", "nulable": False}], "spec.columns[0].nulable: unknown field"),
        ([{"name": "a", "type": "decimal(40,2)"}], "1 <= P <= 38"),
    ],
)
def test_bad_manifests_get_clear_errors(columns: list[dict[str, Any]], fragment: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_manifest(manifest(columns), source="orders.yaml")
    assert fragment in str(err.value) and "DuckLakeTable orders (orders.yaml)" in str(err.value)


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(SpecError) as err:
        parse_manifest(
            manifest(
                [{"name": "a", "type": "int65"}, {"name": "b", "type": "varchr"}],
                partitionBy=[{"column": "zz"}],
                evolution={"typeChanges": "sometimes"},
            )
        )
    assert len(err.value.problems) == 4


def test_renamed_from_a_missing_column_is_an_error(orders: Catalog) -> None:
    cols = COLUMNS + [{"name": "total", "type": "int64", "renamedFrom": ["amount_old"]}]
    with pytest.raises(SpecError, match="no column named 'amount_old' exists to rename"):
        plan_for(parse_as(TableSpec, manifest(cols)), orders.state())


def test_narrowing_is_refused_and_widening_applies(orders: Catalog) -> None:
    cols = [dict(c, type="int64") if c["name"] == "amount" else c for c in COLUMNS]
    assert apply_plan(orders, parse_as(TableSpec, manifest(cols))).commit is not None
    narrowed = parse_as(TableSpec, manifest(COLUMNS))
    plan = plan_for(narrowed, orders.state())
    assert plan.is_refused and "int64 → int32 is not a lossless promotion" in plan.render()


def test_names_with_quotes_and_semicolons_are_data(catalog: Catalog) -> None:
    evil = 'x"; DROP TABLE ducklake_snapshot; --'
    doc = manifest([{"name": "it's; --", "type": "int32"}, {"name": 'q"q', "type": "varchar"}])
    doc["spec"]["name"] = evil
    apply_plan(catalog, parse_as(TableSpec, doc))
    con = duck.attach(catalog.location)
    quoted = '"' + evil.replace('"', '""') + '"'
    con.execute(f"INSERT INTO lk.main.{quoted} VALUES (1, 'a')")
    assert con.execute(f"SELECT * FROM lk.main.{quoted}").fetchall() == [(1, "a")]
    assert apply_plan(catalog, parse_as(TableSpec, doc)).plan.is_empty


def test_unsupported_changes_are_reported_not_half_applied(orders: Catalog) -> None:
    reordered = [COLUMNS[1], COLUMNS[0]] + COLUMNS[2:] + [{"name": "extra", "type": "int32"}]
    before = dump(orders.location)
    plan = apply_plan(orders, parse_as(TableSpec, manifest(reordered))).plan
    assert plan.is_refused and any("cannot reorder" in u for u in plan.unsupported)
    new_in_middle = [COLUMNS[0], {"name": "extra", "type": "int32"}] + COLUMNS[1:]
    plan = apply_plan(orders, parse_as(TableSpec, manifest(new_in_middle))).plan
    assert plan.is_refused and any("move it to the end" in u for u in plan.unsupported)
    assert dump(orders.location) == before


def test_drift_is_reported_after_an_outside_alter(orders: Catalog) -> None:
    spec = parse_as(TableSpec, manifest())
    assert drift(spec, orders.state()) == []
    con = duck.attach(orders.location)
    con.execute("ALTER TABLE lk.orders ADD COLUMN sneaky INTEGER")
    con.execute("ALTER TABLE lk.orders RENAME amount TO amt")
    lines = drift(spec, orders.state())
    assert "sneaky is in the catalog but not in the manifest" in lines
    assert (
        "amount is declared but missing from the catalog" in lines
        and "amt is in the catalog but not in the manifest" in lines
    )
    # mode auto keeps columns that ingestion added
    auto = parse_as(
        TableSpec,
        manifest([dict(c, name="amt") if c["name"] == "amount" else c for c in COLUMNS], evolution={"mode": "auto"}),
    )
    plan = plan_for(auto, orders.state())
    assert not plan.changes and any("sneaky" in n for n in plan.notes)


def test_conflicting_concurrent_alter_is_replanned(orders: Catalog) -> None:
    """A plan made against an old snapshot is re-made, never replayed, when DuckDB altered
    the table in between (DuckDB's rule: alter vs alter of one table conflicts)."""
    state = orders.state()
    con = duck.attach(orders.location)
    con.execute("ALTER TABLE lk.orders ADD COLUMN from_duckdb INTEGER")
    cols = COLUMNS + [{"name": "from_duckdb", "type": "int32"}, {"name": "mine", "type": "varchar"}]
    result = apply_plan(orders, parse_as(TableSpec, manifest(cols)), state=state)
    assert result.commit is not None
    assert [c.describe() for c in result.plan.changes] == ["+ add column mine varchar"]
    assert [r[0] for r in con.execute("DESCRIBE lk.orders").fetchall()][-2:] == ["from_duckdb", "mine"]
