"""A table with ``evolution.mode: auto``: the columns and struct fields an ingest added are the
table's own, not drift: not reported, not reverted (not even with ``onDrift: revert``), and a
later manifest change applies around them. With ``mode: declared`` the same columns are drift.
The reconcile functions as plain functions, on a real SQLite catalog, DuckDB as the oracle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ducklake_jobs.operations import run_operation
from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.controller.reconcilers import (
    CatalogPool,
    check_table_drift,
    reconcile_catalog,
    reconcile_table,
)
from ducklake_operator.model.spec import TableSpec
from support import duck, reconcile_specs
from support.reconcile_specs import catalog_spec, conditions

COLUMNS: list[dict[str, Any]] = [
    {"name": "id", "type": "int64"},
    {"name": "s", "type": "struct<x: int64>"},
]


def table_spec(columns: list[dict[str, Any]], generation: int = 1, **evolution: Any) -> TableSpec:
    return reconcile_specs.table_spec("events", columns, generation, evolution=evolution)


@pytest.fixture
def pool():
    p = CatalogPool(credentials=lambda *_: ("", None))
    yield p
    p.close()


def described(location: CatalogLocation) -> list[tuple[str, str]]:
    con = duck.attach(location, con=duck.connect())
    try:
        return [(r[0], r[1]) for r in con.execute("DESCRIBE lk.events").fetchall()]
    finally:
        con.close()


def test_columns_an_ingest_added_are_not_drift_in_auto_mode(tmp_path: Path, pool: CatalogPool) -> None:
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "c.sqlite"))
    cat = catalog_spec(location, str(tmp_path / "data") + "/")
    reconcile_catalog(cat, pool)
    auto = table_spec(COLUMNS, mode="auto")
    assert conditions(reconcile_table(auto, cat, pool))["Ready"] == ("True", "Applied")
    src = tmp_path / "in.json"
    records = [{"id": 1, "v": "a", "s": {"x": 1, "y": True}}, {"id": 2, "v": 7, "s": {"x": 2}}]
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    catalog = Catalog.open(location)
    run_operation(catalog, "ingest", "main.events", {"path": str(src)})
    catalog.close()
    ingested = [
        ("id", "BIGINT"),
        ("s", "STRUCT(x BIGINT, y BOOLEAN)"),
        ("v", "VARCHAR"),
        ("v_long", "BIGINT"),
    ]
    assert described(location) == ingested

    report = check_table_drift(auto, cat, pool)
    assert conditions(report)["Drifted"] == ("False", "InSync") and report.status["drift"] == []
    reverting = table_spec(COLUMNS, mode="auto", onDrift="revert", allowDropColumns=True)
    assert conditions(check_table_drift(reverting, cat, pool))["Drifted"] == ("False", "InSync")
    assert described(location) == ingested  # nothing reverted

    # the manifest changes: a declared column is added after the ingested ones, which stay
    more = table_spec([*COLUMNS, {"name": "note", "type": "varchar"}], generation=2, mode="auto")
    assert conditions(reconcile_table(more, cat, pool))["Ready"] == ("True", "Applied")
    assert described(location) == [*ingested, ("note", "VARCHAR")]
    assert conditions(check_table_drift(more, cat, pool))["Drifted"] == ("False", "InSync")

    # declared mode: the same columns are drift
    declared = table_spec([*COLUMNS, {"name": "note", "type": "varchar"}], generation=3)
    drift = check_table_drift(declared, cat, pool)
    assert conditions(drift)["Drifted"] == ("True", "ChangedOutside")
    assert drift.status["drift"] == [
        "s.y is in the catalog but not in the manifest",
        "v is in the catalog but not in the manifest",
        "v_long is in the catalog but not in the manifest",
    ]
