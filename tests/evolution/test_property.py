"""Property: random sequences of manifest edits, applied one by one, keep DuckDB's view of the
table equal to the manifest, keep DuckDB able to write and read, and never reuse a column id."""

from __future__ import annotations

import copy
import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ducklake_operator.api.v1alpha1.table import TableSpec
from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.model.types import to_duckdb_sql
from ducklake_operator.use_cases import apply_plan
from support import duck
from support.manifests import parse_as, table

PROMOTE = {"int8": "int16", "int16": "int32", "int32": "int64", "uint8": "uint16", "float32": "float64"}
TYPES = ["int8", "int16", "int32", "int64", "uint8", "float32", "varchar", "date", "boolean"]
OPS = ["add", "add_struct", "drop", "rename", "promote", "add_field", "rename_field", "drop_field"]


def manifest(columns: list[dict[str, Any]]) -> dict[str, Any]:
    return table("t", "lake", columns, evolution={"allowDropColumns": True})


def expected_describe(columns: list[dict[str, Any]]) -> list[tuple[str, str]]:
    spec = parse_as(TableSpec, manifest(columns))
    return [(f.name, to_duckdb_sql(f.type).replace('"', "")) for f in spec.columns]


def apply_op(
    columns: list[dict[str, Any]], op: str, pick: int, names: itertools.count, type_pick: int
) -> list[dict[str, Any]]:
    cols = copy.deepcopy(columns)
    for c in cols:  # renamedFrom is a one-step instruction
        c.pop("renamedFrom", None)
        for f in c.get("fields", []):
            f.pop("renamedFrom", None)
    structs = [c for c in cols if c["type"] == "struct"]
    if op == "add":
        cols.append({"name": f"c{next(names)}", "type": TYPES[type_pick % len(TYPES)]})
    elif op == "add_struct":
        cols.append(
            {"name": f"s{next(names)}", "type": "struct", "fields": [{"name": f"f{next(names)}", "type": "int32"}]}
        )
    elif op == "drop" and len(cols) > 1:
        cols.pop(pick % len(cols))
    elif op == "rename":
        c = cols[pick % len(cols)]
        c["renamedFrom"] = [c["name"]]
        c["name"] = f"r{next(names)}"
    elif op == "promote":
        promotable = [c for c in cols if c["type"] in PROMOTE]
        if promotable:
            c = promotable[pick % len(promotable)]
            c["type"] = PROMOTE[c["type"]]
    elif op == "add_field" and structs:
        structs[pick % len(structs)]["fields"].append(
            {"name": f"f{next(names)}", "type": TYPES[type_pick % len(TYPES)]}
        )
    elif op == "rename_field" and structs:
        f = structs[pick % len(structs)]["fields"][0]
        f["renamedFrom"] = [f["name"]]
        f["name"] = f"g{next(names)}"
    elif op == "drop_field" and structs:
        s = structs[pick % len(structs)]
        if len(s["fields"]) > 1:
            s["fields"].pop(pick % len(s["fields"]))
    return cols


def insert_row(con, columns: list[dict[str, Any]]) -> None:
    values = []
    for c in columns:
        t = parse_as(TableSpec, manifest([c])).columns[0].type
        values.append(f"NULL::{to_duckdb_sql(t)}")
    con.execute(f"INSERT INTO lk.t VALUES ({', '.join(values)})")


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(steps=st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=7))
def test_random_edit_sequences(tmp_path_factory, steps: list[tuple[str, int, int]]) -> None:
    tmp = tmp_path_factory.mktemp("prop")
    catalog = Catalog.create(CatalogLocation(kind="sqlite", path=str(tmp / "c.sqlite")), str(tmp / "data") + "/")
    names = itertools.count()
    columns: list[dict[str, Any]] = [
        {"name": "id", "type": "int32"},
        {"name": "s0", "type": "struct", "fields": [{"name": "f0", "type": "int8"}]},
    ]
    next(names)
    apply_plan(catalog, parse_as(TableSpec, manifest(columns)))
    con = duck.attach(catalog.location)
    con.execute("INSERT INTO lk.t VALUES (1, {'f0': 1})")
    retired: set[int] = set()
    for op, pick, type_pick in steps:
        new_columns = apply_op(columns, op, pick, names, type_pick)
        before_ids = {c.column_id for c in catalog.state().table("main", "t").all_columns()}
        result = apply_plan(catalog, parse_as(TableSpec, manifest(new_columns)))
        assert not result.plan.is_refused, result.plan.render()
        columns = new_columns
        fresh = duck.attach(catalog.location, con=duck.connect())
        describe = [(n, t.replace('"', "")) for n, t, _ in duck.describe(fresh, "lk.t")]
        assert describe == expected_describe(columns)
        after_ids = {c.column_id for c in catalog.state().table("main", "t").all_columns()}
        retired |= before_ids - after_ids
        assert not (after_ids & retired), f"column ids reused: {after_ids & retired}"
        insert_row(fresh, columns)  # DuckDB keeps writing
        assert duck.scalar(fresh, "SELECT count(*) FROM lk.t") >= 2
        assert apply_plan(catalog, parse_as(TableSpec, manifest(columns))).plan.is_empty
        fresh.close()
    catalog.close()
