"""Heavy-weight type changes in manifests (``evolution.typeChanges: rewrite``): the plan says
what the rewrite costs, refuses what no rewrite can do, names the job the controller is to
run; ``ducklake apply`` commits the light changes, then runs the job in its own process."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.errors import SpecError
from ducklake_operator.evolution.heavy import HeavyJob, heavy_jobs
from ducklake_operator.model.job_params import job_keywords
from ducklake_operator.model.spec import TableSpec
from ducklake_operator.reconcile import apply_plan, plan_for, read_for_plan
from support import duck
from support.dump import dump
from support.manifests import parse_as, table

COLUMNS: list[dict[str, Any]] = [
    {"name": "id", "type": "int64"},
    {"name": "code", "type": "varchar"},
    {"name": "part", "type": "int32"},
    {"name": "s", "type": "struct", "fields": [{"name": "day", "type": "varchar"}, {"name": "n", "type": "int32"}]},
    {"name": "tags", "type": "list", "element": "varchar"},
]


def manifest(columns: list[dict[str, Any]], **evolution: Any) -> dict[str, Any]:
    return table(
        "t",
        "lake",
        copy.deepcopy(columns),
        partitionBy=[{"column": "part"}],
        **({"evolution": evolution} if evolution else {}),
    )


def table_spec(columns: list[dict[str, Any]], **evolution: Any) -> TableSpec:
    return parse_as(TableSpec, manifest(columns, **evolution))


def retyped(name: str, new_type: str, field: str | None = None) -> list[dict[str, Any]]:
    cols = copy.deepcopy(COLUMNS)
    for c in cols:
        if c["name"] == name and field is None:
            c["type"] = new_type
        elif c["name"] == name:
            next(f for f in c["fields"] if f["name"] == field)["type"] = new_type
    return cols


@pytest.fixture
def lake(catalog: Catalog) -> Catalog:
    apply_plan(catalog, table_spec(COLUMNS))
    con = duck.attach(catalog.location)
    for k in range(3):
        con.execute(
            "INSERT INTO lk.t SELECT i, (i * 3)::VARCHAR, i % 2, {'day': '2024/01/0' || (i % 9 + 1), 'n': i}, ['x'] "
            f"FROM range({k * 20}, {k * 20 + 20}) t(i)"
        )
    con.close()
    return catalog


def test_plan_says_what_the_rewrite_costs_and_which_job_does_it(lake: Catalog) -> None:
    spec = table_spec(retyped("code", "int64"), typeChanges="rewrite", onCastError="null")
    state = read_for_plan(lake, spec)
    plan = plan_for(spec, state)
    assert not plan.is_refused and plan.light_changes == ()
    files = [f for f in lake.state().table("main", "t").data_files if f.end_snapshot is None]
    assert len(files) == 6  # three inserts into two partitions
    heavy_note = f"heavy: rewrite 6 files, {sum(f.file_size_bytes for f in files)} bytes"
    assert any(heavy_note in line for line in plan.lines()), plan.render()
    (job,) = heavy_jobs(plan, spec.evolution)
    assert job == HeavyJob("rewriteColumnType", "main.t", {"column": "code", "type": "int64", "onCastError": "null"})
    assert job_keywords(job.operation, job.params)["column"] == ("code",)  # what a DuckLakeJob's params check says
    assert job.key == heavy_jobs(plan_for(spec, read_for_plan(lake, spec)), spec.evolution)[0].key  # stable
    nested = plan_for(table_spec(retyped("s", "date", "day"), typeChanges="rewrite"), state)
    (nested_job,) = heavy_jobs(nested, spec.evolution)
    assert nested_job.params["column"] == "s.day" and nested_job.key != job.key


@pytest.mark.parametrize(
    "columns, evolution, reason, allow",
    [
        (retyped("code", "int64"), {}, "not a lossless promotion", "typeChanges: rewrite"),
        (retyped("code", "boolean"), {"typeChanges": "rewrite"}, "varchar → boolean is not a conversion", "old type"),
        (retyped("id", "int32"), {"typeChanges": "rewrite"}, "int64 → int32 is not a conversion", "old type"),
        (
            [dict(c, element="int32") if c["name"] == "tags" else c for c in COLUMNS],
            {"typeChanges": "rewrite"},
            "only top-level columns and struct fields",
            "old type",
        ),
        (retyped("part", "varchar"), {"typeChanges": "rewrite"}, "partitioned by it", "old type"),
    ],
    ids=["promote-only", "not-convertible", "narrowing", "list-element", "partition-key"],
)
def test_refused_type_changes_apply_nothing(
    lake: Catalog, columns: list[dict[str, Any]], evolution: dict[str, Any], reason: str, allow: str
) -> None:
    before = dump(lake.location)
    result = apply_plan(lake, table_spec(columns, **evolution))
    rendered = result.plan.render()
    assert result.plan.is_refused and result.commit is None and result.heavy == ()
    assert reason in rendered and allow in rendered and "nothing applied" in rendered
    assert dump(lake.location) == before


def test_on_cast_error_in_manifests() -> None:
    assert table_spec(COLUMNS).evolution.on_cast_error == "fail"
    unquoted = yaml.safe_load("onCastError: null")  # YAML's null: the word is meant
    assert table_spec(COLUMNS, **unquoted).evolution.on_cast_error == "null"
    assert table_spec(COLUMNS, onCastError="null").evolution.on_cast_error == "null"
    with pytest.raises(SpecError, match=r"spec.evolution.onCastError: 'skip' is not one of fail, null"):
        table_spec(COLUMNS, onCastError="skip")


def ducklake(*args: str, cwd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ducklake_operator.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_apply_commits_light_changes_then_runs_the_rewrite(tmp_path: Path) -> None:
    catalog = {
        "apiVersion": "ducklake.dev/v1alpha1",
        "kind": "DuckLakeCatalog",
        "metadata": {"name": "lake"},
        "spec": {
            "metadata": {"sqlite": {"path": str(tmp_path / "c.sqlite")}},
            "dataPath": str(tmp_path / "data") + "/",
        },
    }
    path = tmp_path / "lake.yaml"
    path.write_text(yaml.safe_dump_all([catalog, manifest(COLUMNS)]))
    assert ducklake("apply", "-f", str(path), cwd=str(tmp_path)).returncode == 0
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "c.sqlite"))
    duck.run_workload(
        location,
        [
            "INSERT INTO lk.t SELECT i, (i * 3)::VARCHAR, 0, NULL, NULL FROM range(30) t(i)",
            "INSERT INTO lk.t VALUES (100, 'not a number', 1, NULL, NULL)",  # inlined
        ],
    )
    light_and_heavy = retyped("code", "int64") + [{"name": "note", "type": "varchar"}]
    path.write_text(yaml.safe_dump_all([catalog, manifest(light_and_heavy, typeChanges="rewrite")]))
    failed = ducklake("apply", "-f", str(path), cwd=str(tmp_path))
    assert failed.returncode == 1 and "Traceback" not in failed.stderr, failed.stderr
    assert "'not a number' (row id 30)" in failed.stderr and "nothing was committed" in failed.stderr
    con = duck.attach(location, con=duck.connect())
    columns = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE lk.t)").fetchall())
    assert columns["code"] == "VARCHAR" and "note" in columns  # the light change landed, the heavy one did not
    con.close()

    path.write_text(yaml.safe_dump_all([catalog, manifest(light_and_heavy, typeChanges="rewrite", onCastError="null")]))
    applied = ducklake("apply", "-f", str(path), cwd=str(tmp_path))
    assert applied.returncode == 0, applied.stderr
    assert "heavy change: running rewriteColumnType main.t" in applied.stdout and "heavy: rewrite" in applied.stdout
    con = duck.attach(location, con=duck.connect())
    assert dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE lk.t)").fetchall())["code"] == "BIGINT"
    assert con.execute("SELECT count(*), count(code), sum(code) FROM lk.t").fetchone() == (31, 30, 3 * 435)
    con.close()
    again = ducklake("apply", "-f", str(path), cwd=str(tmp_path))
    assert again.returncode == 0 and "no changes" in again.stdout and "heavy" not in again.stdout


def test_apply_runs_nothing_heavy_for_a_promotion(lake: Catalog) -> None:
    """A lossless promotion stays a light change, committed in place, with typeChanges: rewrite too."""
    result = apply_plan(lake, table_spec(retyped("part", "int64"), typeChanges="rewrite"))
    assert result.commit is not None and result.heavy == () and not result.plan.heavy_changes
    assert lake.state().table("main", "t").column("part").type_name == "int64"
