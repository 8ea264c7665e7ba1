"""Heavy-weight type changes in manifests (``evolution.typeChanges: rewrite``): the plan says
what the rewrite costs, refuses what no rewrite can do, names the job the controller is to
run; ``ducklake apply`` runs the job in its own process, which commits the plan's other
changes with the rewrite, in one snapshot (every snapshot reads the old schema and values or
the new ones, through DuckDB)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import yaml

from ducklake_jobs.job_template import run_operation
from ducklake_operator.api.load import job_keywords
from ducklake_operator.api.v1alpha1.table import TableSpec
from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.errors import DuckLakeError, SpecError
from ducklake_operator.evolution.heavy import HeavyJob, heavy_jobs
from ducklake_operator.model.types import parse_type
from ducklake_operator.use_cases import apply_plan, plan_for, read_for_plan
from support import duck, manifests
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


def test_apply_runs_the_rewrite_with_the_plans_other_changes(tmp_path: Path) -> None:
    """A value that does not convert fails the job and nothing of the plan lands (the added
    column neither); with onCastError: null, one snapshot holds the new type and the column."""
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
    before = snapshot_count(location)
    failed = ducklake("apply", "-f", str(path), cwd=str(tmp_path))
    assert failed.returncode == 1 and "Traceback" not in failed.stderr, failed.stderr
    assert "'not a number' (row id 30)" in failed.stderr and "nothing was committed" in failed.stderr
    con = duck.attach(location, con=duck.connect())
    columns = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE lk.t)").fetchall())
    assert columns["code"] == "VARCHAR" and "note" not in columns  # nothing of the plan landed
    con.close()
    assert snapshot_count(location) == before

    path.write_text(yaml.safe_dump_all([catalog, manifest(light_and_heavy, typeChanges="rewrite", onCastError="null")]))
    applied = ducklake("apply", "-f", str(path), cwd=str(tmp_path))
    assert applied.returncode == 0, applied.stderr
    assert "heavy change: running rewriteColumnType main.t" in applied.stdout and "heavy: rewrite" in applied.stdout
    assert snapshot_count(location) == before + 1
    con = duck.attach(location, con=duck.connect())
    columns = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE lk.t)").fetchall())
    assert columns["code"] == "BIGINT" and columns["note"] == "VARCHAR"
    assert con.execute("SELECT count(*), count(code), sum(code) FROM lk.t").fetchone() == (31, 30, 3 * 435)
    con.close()
    again = ducklake("apply", "-f", str(path), cwd=str(tmp_path))
    assert again.returncode == 0 and "no changes" in again.stdout and "heavy" not in again.stdout


def test_apply_prints_the_heavy_jobs_reports_as_json(tmp_path: Path) -> None:
    """``ducklake apply -o json``: one document with each plan, its snapshot, and the report of
    the heavy job it ran (what it read, wrote and committed, and where its time went)."""
    catalog = {
        "apiVersion": "ducklake.dev/v1alpha1",
        "kind": "DuckLakeCatalog",
        "metadata": {"name": "lake"},
        "spec": {"metadata": {"sqlite": {"path": str(tmp_path / "c.sqlite")}}, "dataPath": str(tmp_path / "d") + "/"},
    }
    path = tmp_path / "lake.yaml"
    path.write_text(yaml.safe_dump_all([catalog, manifest(COLUMNS)]))
    created = json.loads(ducklake("apply", "-f", str(path), "-o", "json", cwd=str(tmp_path)).stdout)
    assert created[0]["catalog"] == "lake" and created[0]["created"] is True
    assert [a["jobs"] for a in created[0]["applied"]] == [[]]  # nothing heavy
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "c.sqlite"))
    duck.run_workload(location, ["INSERT INTO lk.t SELECT i, (i * 3)::VARCHAR, 0, NULL, NULL FROM range(30) t(i)"])
    path.write_text(yaml.safe_dump_all([catalog, manifest(retyped("code", "int64"), typeChanges="rewrite")]))
    applied = ducklake("apply", "-f", str(path), "--output", "json", cwd=str(tmp_path))
    assert applied.returncode == 0, applied.stderr
    (table,) = json.loads(applied.stdout)[0]["applied"]
    (report,) = table["jobs"]
    assert report["operation"] == "rewriteColumnType" and report["ranOn"] == "in-process"
    assert report["rowsWritten"] == 30 and report["committedSnapshot"] == snapshot_count(location) - 1
    assert table["plan"]["table"] == "main.t" and table["plan"]["changes"]
    timings = report["timings"]
    assert timings["tasks"] > 0 and timings["commit"] > 0 and sum(timings.values()) <= report["seconds"]


def snapshot_count(location: CatalogLocation) -> int:
    con = duck.attach(location, con=duck.connect())
    try:
        return int(duck.scalar(con, "SELECT count(*) FROM ducklake_snapshots('lk')"))
    finally:
        con.close()


def test_apply_runs_nothing_heavy_for_a_promotion(lake: Catalog) -> None:
    """A lossless promotion stays a light change, committed in place, with typeChanges: rewrite too."""
    result = apply_plan(lake, table_spec(retyped("part", "int64"), typeChanges="rewrite"))
    assert result.commit is not None and result.heavy == () and not result.plan.heavy_changes
    assert lake.state().table("main", "t").column("part").type_name == "int64"


# ------------------------------------------------------------------ one apply, one snapshot

PLAIN: list[dict[str, Any]] = [
    {"name": "id", "type": "int64"},
    {"name": "code", "type": "varchar"},
    {"name": "day", "type": "varchar"},
    {"name": "n", "type": "int32"},
]
RETYPED = [dict(c, type=t) for c, t in zip(PLAIN, ("int64", "int64", "date", "varchar"), strict=True)]
# a manifest's columns and more of its spec, the old manifest's spec, and how DuckDB reads what
# it declares from the old snapshot
APPLIES: dict[str, tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any], str]] = {
    "three types": (RETYPED, {}, {}, "id, code::BIGINT AS code, day::DATE AS day, n::VARCHAR AS n"),
    "types, a rename and an added column": (
        [*RETYPED[:2], {"name": "d", "type": "date", "renamedFrom": ["day"]}, RETYPED[3],
         {"name": "note", "type": "varchar", "default": "none"}],
        {},
        {},
        "id, code::BIGINT AS code, day::DATE AS d, n::VARCHAR AS n, 'none' AS note",
    ),
    "types and a new partitioning": (  # n, retyped, was the partition key
        RETYPED,
        {"partitionBy": [{"column": "n"}]},
        {"partitionBy": [{"column": "id"}]},
        "id, code::BIGINT AS code, day::DATE AS day, n::VARCHAR AS n",
    ),
}  # fmt: skip


def read_at(con: Any, version: int) -> tuple[list[tuple[str, str]], list[tuple[Any, ...]]]:
    """The table's columns (name, DuckDB type) and rows as DuckDB reads them at ``version``."""
    columns = [(r[0], r[1]) for r in con.execute(f"DESCRIBE SELECT * FROM lk.t AT (VERSION => {version})").fetchall()]
    return columns, con.execute(f"SELECT * FROM lk.t AT (VERSION => {version}) ORDER BY id").fetchall()


@pytest.mark.parametrize("change", list(APPLIES))
def test_one_apply_with_several_heavy_changes_is_one_snapshot(tmp_path: Path, change: str) -> None:
    """``ducklake apply`` of a manifest that rewrites three columns (varchar -> int64,
    varchar -> date, int32 -> varchar), also with a rename and an added column or a new
    partitioning: one snapshot, so DuckDB reads every snapshot either with the old schema and
    values or with the new ones (the values DuckDB's own casts give)."""
    columns, old_extra, extra, as_duckdb = APPLIES[change]
    catalog = manifests.manifest(
        "DuckLakeCatalog", "lake",
        {"metadata": {"sqlite": {"path": str(tmp_path / "c.sqlite")}}, "dataPath": str(tmp_path / "data") + "/"},
    )  # fmt: skip
    path = tmp_path / "lake.yaml"
    old_manifest = table("t", "lake", PLAIN, evolution={"typeChanges": "rewrite"}, **old_extra)
    path.write_text(yaml.safe_dump_all([catalog, old_manifest]))
    assert ducklake("apply", "-f", str(path), cwd=str(tmp_path)).returncode == 0
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "c.sqlite"))
    duck.run_workload(
        location,
        [f"INSERT INTO lk.t SELECT i, (i * 3)::VARCHAR, '2024-01-0' || (i % 9 + 1), i FROM range({k * 20}, {k * 20 + 20}) t(i)"
         for k in range(3)] + ["INSERT INTO lk.t VALUES (100, '-7', '2024-02-29', NULL)"],  # the last one inlined
    )  # fmt: skip
    con = duck.attach(location, con=duck.connect())
    before = int(duck.scalar(con, "SELECT max(snapshot_id) FROM ducklake_snapshots('lk')"))
    old = read_at(con, before)
    new_rows = con.execute(f"SELECT {as_duckdb} FROM lk.t AT (VERSION => {before}) ORDER BY id").fetchall()
    new_columns = [(r[0], r[1]) for r in con.execute(f"DESCRIBE SELECT {as_duckdb} FROM lk.t").fetchall()]
    con.close()

    new_manifest = table("t", "lake", copy.deepcopy(columns), evolution={"typeChanges": "rewrite"}, **extra)
    path.write_text(yaml.safe_dump_all([catalog, new_manifest]))
    applied = ducklake("apply", "-f", str(path), cwd=str(tmp_path))
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.count("heavy change: running rewriteColumnType") == 1

    con = duck.attach(location, con=duck.connect())
    latest = int(duck.scalar(con, "SELECT max(snapshot_id) FROM ducklake_snapshots('lk')"))
    reads = {v: read_at(con, v) for v in range(before, latest + 1)}
    earlier = read_at(con, before - 1)  # time travel to before the apply still reads the old schema
    con.close()
    new = (new_columns, new_rows)
    assert all(read in (old, new) for read in reads.values()), {v: r[0] for v, r in reads.items()}
    assert latest == before + 1 and reads[latest] == new and earlier[0] == old[0]
    if extra:  # the rewritten files are under no spec (the old one ends with the commit): repartition moves them
        with closing(Catalog.open(location)) as lake:
            t = lake.state().table("main", "t")
            assert t is not None and t.partition is not None and [f.column_id for f in t.partition.fields] == [1]
            assert {f.partition_id for f in t.data_files if f.end_snapshot is None} == {None}
            current = t.partition.partition_id
        moved = ducklake("run-job", "repartition", "main.t", "-f", str(path), "--no-spark", cwd=str(tmp_path))
        assert moved.returncode == 0, moved.stderr
        con = duck.attach(location, con=duck.connect())
        assert read_at(con, latest + 1) == new
        con.close()
        with closing(Catalog.open(location)) as lake:
            t = lake.state().table("main", "t")
            assert t is not None and {f.partition_id for f in t.data_files if f.end_snapshot is None} == {current}
    again = ducklake("apply", "-f", str(path), cwd=str(tmp_path))
    assert again.returncode == 0 and "no changes" in again.stdout


def test_one_job_for_a_plans_heavy_changes_given_the_manifest(lake: Catalog) -> None:
    """Two rewrites, a rename of the table and an added column: one job, named by the table's
    name in the catalog now, its columns as the manifest names them, given the manifest."""
    columns = [dict(c, type="int64") if c["name"] == "code" else c for c in retyped("s", "date", "day")]
    spec = parse_as(
        TableSpec,
        table("t2", "lake", columns + [{"name": "note", "type": "varchar"}], partitionBy=[{"column": "part"}],
              renamedFrom=["t"], evolution={"typeChanges": "rewrite"}),
    )  # fmt: skip
    plan = plan_for(spec, read_for_plan(lake, spec))
    (job,) = heavy_jobs(plan, spec.evolution)
    assert job == HeavyJob(
        "rewriteColumnType", "main.t", {"columns": {"code": "int64", "s.day": "date"}, "onCastError": "fail"}, True
    )
    assert job_keywords(job.operation, job.params)["columns"] == (
        (("code",), parse_type("int64")),
        (("s", "day"), parse_type("date")),
    )
    result = apply_plan(lake, spec)
    assert result.commit is None and result.heavy == (job,)  # apply commits nothing of it: the job does


def test_the_job_commits_the_plan_made_where_it_reads(lake: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """A manifest whose rewrites are not the job's is refused; a table changed by DuckDB while
    the job rewrites (its partitioning) makes the plan another one: the job is refused inside
    its commit and plans again (the plan now puts the partitioning back), never replaying a
    plan made on a catalog that moved."""
    import ducklake_jobs.retype_task as task_side
    import ducklake_jobs.rewrite_column_type as rewrite

    spec = table_spec(retyped("code", "int64") + [{"name": "note", "type": "varchar"}], typeChanges="rewrite")
    before = dump(lake.location)
    with pytest.raises(DuckLakeError, match=r"rewrites code varchar → int64, not what this job was given"):
        run_operation(lake, "rewriteColumnType", "main.t", {"column": "part", "type": "int64", "manifest": spec})
    assert dump(lake.location) == before

    con = duck.attach(lake.location)
    original, tasks = task_side.retype_files, list[str]()

    def retype_then_alter(task: task_side.RetypeTask) -> task_side.RetypeOutput:
        tasks.append(task.output)
        if len(tasks) == 1:
            con.execute("ALTER TABLE lk.t SET PARTITIONED BY (id)")
        return original(task)

    monkeypatch.setattr(rewrite, "retype_files", retype_then_alter)
    latest = lake.snapshot().snapshot_id
    report = run_operation(lake, "rewriteColumnType", "main.t", {"column": "code", "type": "int64", "manifest": spec})
    assert report["replanned"] == 1 and report["committedSnapshot"] == latest + 2  # DuckDB's ALTER, then ours
    assert report["otherChanges"] == ["+ add column note varchar", "~ partition main.t by (part)"]
    assert plan_for(spec, read_for_plan(lake, spec)).is_empty
    assert con.execute("SELECT count(*), sum(code) FROM lk.t").fetchone() == (60, sum(i * 3 for i in range(60)))
    con.close()
