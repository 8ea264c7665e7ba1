"""A table with ``evolution.mode: auto``: the columns and struct fields an ingest added are the
table's own, not drift: not reported, not reverted (not even with ``onDrift: revert``), and a
later manifest change applies around them. With ``mode: declared`` the same columns are drift.
The reconcile functions as plain functions, on a real SQLite catalog, DuckDB as the oracle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ducklake_jobs.job_template import run_operation
from ducklake_operator.api.v1alpha1.job import JobSpec
from ducklake_operator.api.v1alpha1.table import TableSpec
from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.controller.catalog_pool import CatalogPool
from ducklake_operator.controller.catalogs.reconciler import reconcile_catalog
from ducklake_operator.controller.runs.run_context import RunContext
from ducklake_operator.controller.runs.run_document import run_document, table_evolution
from ducklake_operator.controller.tables.reconciler import check_table_drift, reconcile_table
from support import duck, reconcile_specs
from support.job_program import catalog_manifest, run_program
from support.manifests import parse_as
from support.reconcile_specs import catalog_spec, conditions, table_manifest

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


def ingest_run(path: Path, tables: list[dict[str, Any]], table: str = "main.events") -> dict[str, Any]:
    """The run document the controller writes for an ingest DuckLakeJob, given the catalog's
    DuckLakeTable manifests as its index holds them."""
    job = parse_as(JobSpec, {"kind": "DuckLakeJob", "metadata": {"name": "load", "namespace": "ns"},
                             "spec": {"catalogRef": {"name": "lake"}, "table": table, "operation": "ingest",
                                      "params": {"path": str(path)}}})  # fmt: skip
    ctx = RunContext(None, None, True, None, {"inProcessBelow": "1GB", "master": "no-such-master"},
                     table_evolution=table_evolution(table, tables))  # fmt: skip
    return run_document(job, "uid-1", 1, ctx)


def test_the_controller_passes_the_tables_mode_to_its_ingest_runs(tmp_path: Path) -> None:
    src = tmp_path / "in.json"

    def params(*tables: dict[str, Any], table: str = "main.events") -> dict[str, Any]:
        return dict(ingest_run(src, list(tables), table)["params"])

    declared, auto = table_manifest("events", COLUMNS), table_manifest("events", COLUMNS, evolution={"mode": "auto"})
    assert params() == {"path": str(src)}  # no DuckLakeTable declares the table: the job's default, evolve
    assert params(auto) == {"path": str(src)}
    assert params(declared) == params(declared, auto) == {"path": str(src), "evolve": False}
    assert (
        params(table_manifest("events", COLUMNS, evolution={"mode": "declared"}), table="MAIN.Events")["evolve"]
        is False
    )
    renamed = table_manifest("evts", COLUMNS, renamedFrom=["events"])
    assert params(renamed)["evolve"] is False  # its rename not applied yet: still the manifest's table
    assert params(table_manifest("events", COLUMNS, schema="other")) == {"path": str(src)}


def test_an_ingest_run_into_a_declared_table_adds_no_column(tmp_path: Path, pool: CatalogPool) -> None:
    """With ``mode: declared`` an ingest DuckLakeJob appends only what fits the columns: records
    that need one fail the run before anything is written, so there is nothing to report as
    drift (or for ``onDrift: revert`` to drop with its data)."""
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "c.sqlite"))
    cat = catalog_spec(location, str(tmp_path / "data") + "/")
    reconcile_catalog(cat, pool)
    assert conditions(reconcile_table(table_spec(COLUMNS), cat, pool))["Ready"] == ("True", "Applied")
    manifests = [table_manifest("events", COLUMNS)]
    src = tmp_path / "in" / "1.json"
    src.parent.mkdir()
    src.write_text(json.dumps({"id": 1, "v": "a", "s": {"x": 1, "y": True}}) + "\n")
    doc = ingest_run(src, manifests)
    doc["catalog"] = catalog_manifest(location, str(tmp_path / "data") + "/")
    run = run_program(doc, str(tmp_path))
    assert run.exit_code != 0 and run.result["state"] == "Failed"
    assert "values of s.y, v fit none of the table's columns" in run.result["message"]
    assert "Set spec.evolution.mode: auto on that DuckLakeTable" in run.result["message"]
    assert described(location) == [("id", "BIGINT"), ("s", "STRUCT(x BIGINT)")]
    report = check_table_drift(table_spec(COLUMNS), cat, pool)
    assert conditions(report)["Drifted"] == ("False", "InSync") and report.status["drift"] == []

    fits = tmp_path / "in" / "2.json"
    fits.write_text(json.dumps({"id": 2, "s": {"x": 2}}) + "\n")
    doc = ingest_run(fits, manifests) | {"catalog": doc["catalog"], "job": {**doc["job"], "uid": "uid-2"}}
    run = run_program(doc, str(tmp_path))
    assert run.exit_code == 0 and run.result["report"]["rowsWritten"] == 1, run.stderr
    assert conditions(check_table_drift(table_spec(COLUMNS), cat, pool))["Drifted"] == ("False", "InSync")
