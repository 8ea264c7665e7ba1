"""How a table says its heavy changes' DuckLakeJob goes (pure): one stable name per table,
generation and change; the table as the job's manifest when the plan has other changes;
Rewriting while it runs, RewriteFailed when it failed, waiting either way."""

from __future__ import annotations

from typing import Any

from ducklake_operator.api.load import job_keywords, parse_manifest
from ducklake_operator.api.v1alpha1.table import TableSpec
from ducklake_operator.controller.outcome import Outcome
from ducklake_operator.controller.status import condition
from ducklake_operator.controller.tables.heavy_runs import heavy_outcome, job_manifest, job_name
from ducklake_operator.evolution.heavy import HeavyJob

JOB = HeavyJob("rewriteColumnType", "main.orders", {"column": "code", "type": "int64", "onCastError": "fail"})


def spec(generation: int = 3) -> TableSpec:
    parsed = parse_manifest({"kind": "DuckLakeTable", "metadata": {"name": "Orders.V2", "namespace": "data",
                                                                    "generation": generation},
                             "spec": {"catalogRef": {"name": "lake"}, "name": "orders",
                                      "columns": [{"name": "code", "type": "int64"}]}})  # fmt: skip
    assert isinstance(parsed, TableSpec)
    return parsed


def applied() -> Outcome:
    return Outcome(conditions=[condition("Ready", True, "Applied", "applied", 3),
                               condition("Progressing", False, "Reconciled", "", 3)])  # fmt: skip


def by_type(outcome: Outcome) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in outcome.conditions}


def test_one_stable_dns_name_per_table_generation_and_change() -> None:
    name = job_name("Orders.V2", 3, JOB)
    assert name == job_name("Orders.V2", 3, JOB) and name.startswith("orders-v2-rewriteco-g3-") and len(name) <= 63
    assert job_name("Orders.V2", 4, JOB) != name
    assert job_name("Orders.V2", 3, HeavyJob(JOB.operation, JOB.table, {**JOB.params, "type": "int32"})) != name
    assert len(job_name("x" * 300, 3, JOB)) == 63


TABLE = {"apiVersion": "ducklake.dev/v1alpha1", "kind": "DuckLakeTable",
         "metadata": {"name": "Orders.V2", "namespace": "data", "generation": 3, "uid": "u-1", "resourceVersion": "9"},
         "spec": {"catalogRef": {"name": "lake"}, "name": "orders", "columns": [{"name": "code", "type": "int64"}]},
         "status": {"observedGeneration": 2}}  # fmt: skip


def test_the_job_is_owned_by_the_table() -> None:
    owner = {"apiVersion": "ducklake.dev/v1alpha1", "kind": "DuckLakeTable", "name": "Orders.V2", "uid": "u-1"}
    doc = job_manifest(spec(), owner, JOB, "n", TABLE)
    assert doc["metadata"]["ownerReferences"] == [{**owner, "controller": True, "blockOwnerDeletion": True}]
    assert doc["spec"] == {"catalogRef": {"name": "lake"}, "table": "main.orders", "operation": "rewriteColumnType",
                           "params": JOB.params}  # fmt: skip


def test_a_plan_with_other_changes_gives_the_job_the_table() -> None:
    """The job commits the plan's other changes too: its manifest param is the DuckLakeTable
    (its spec and identity, not its status), which the job's params check reads back."""
    job = HeavyJob(
        JOB.operation, JOB.table, {"columns": {"code": "int64", "s.day": "date"}, "onCastError": "fail"}, True
    )
    params = job_manifest(spec(), {"name": "Orders.V2", "uid": "u-1"}, job, "n", TABLE)["spec"]["params"]
    assert params == {**job.params, "manifest": {"apiVersion": "ducklake.dev/v1alpha1", "kind": "DuckLakeTable",
                                                 "metadata": {"name": "Orders.V2", "namespace": "data", "generation": 3},
                                                 "spec": TABLE["spec"]}}  # fmt: skip
    assert job_keywords(job.operation, params)["manifest"] == spec()
    assert job_name("Orders.V2", 3, job) == job_name("Orders.V2", 3, HeavyJob(job.operation, job.table, job.params))


def test_while_it_runs_the_table_is_rewriting_and_waits() -> None:
    out = heavy_outcome(applied(), spec(), "n", JOB, {"status": {"state": "Running", "progress": "writing 1/2"}})
    conditions = by_type(out)
    assert conditions["Ready"]["status"] == "False" and conditions["Ready"]["reason"] == "Rewriting"
    assert conditions["Progressing"]["status"] == "True" and "writing 1/2" in conditions["Progressing"]["message"]
    assert out.failure is not None and out.failure.waits and out.status["heavyJob"]["state"] == "Running"
    started = heavy_outcome(applied(), spec(), "n", JOB, {})  # just created: said once
    assert [e[1] for e in started.events] == ["RewriteStarted"]


def test_a_failed_job_is_said_and_not_progressing() -> None:
    out = heavy_outcome(applied(), spec(), "n", JOB, {"status": {"state": "Failed", "message": "'x' is no int64"}})
    conditions = by_type(out)
    assert conditions["Ready"]["reason"] == "RewriteFailed" and "'x' is no int64" in conditions["Ready"]["message"]
    assert conditions["Progressing"]["status"] == "False"
    assert [e[1] for e in out.events] == ["RewriteFailed"]
