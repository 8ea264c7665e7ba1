"""A policy section an operation declares with itself (``model/job_params.PolicySection``) needs
no code of its own: the policy's manifest reads it, the policy schedules it and its runs get
its settings under the same keys. Shown with operations declared here only, put in place of
the real declarations for the test (the real ones declare no such section yet)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from ducklake_operator.api import load
from ducklake_operator.api.v1alpha1 import KINDS
from ducklake_operator.api.v1alpha1.policy import POLICY, MaintenancePolicySpec, Schedule, SectionSettings, policy_spec
from ducklake_operator.errors import SpecError
from ducklake_operator.maintenance import policy_params, policy_runs, selection
from ducklake_operator.maintenance.policy_params import catalog_params, catalog_schedules, table_params
from ducklake_operator.maintenance.policy_runs import plan_policy_runs
from ducklake_operator.model.job_params import OPERATIONS, Operation, PolicySection
from ducklake_operator.model.maintenance_params import DRY_RUN, Param
from ducklake_operator.model.state import TableState

MAX_TABLES = Param("integer", "list at most this many tables", keyword="max_tables", default=100, minimum=1)
FRACTION = Param("fraction", "the share of rows to sample", keyword="fraction", minimum=0, maximum=1)


@dataclasses.dataclass(frozen=True)
class AnalyzeArgs:
    max_tables: int = 100
    dry_run: bool = False


@dataclasses.dataclass(frozen=True)
class SampleArgs:
    fraction: float | None = None


ANALYZE = Operation(
    "analyze",
    "none",
    {"maxTables": MAX_TABLES, "dryRun": DRY_RUN},
    AnalyzeArgs,
    section="analysis",
    policy=PolicySection("Catalog-wide: report the tables' sizes.", {"maxTables": MAX_TABLES}),
)
SAMPLE = Operation(
    "sample",
    "required",
    {"fraction": FRACTION},
    SampleArgs,
    section="sampling",
    policy=PolicySection("Sample each table.", {"fraction": FRACTION}),
)


@pytest.fixture(autouse=True)
def declared(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The two operations above among the real ones, and the policy kind read with their sections."""
    operations = {**OPERATIONS, ANALYZE.name: ANALYZE, SAMPLE.name: SAMPLE}
    for module in (policy_params, policy_runs, selection):
        monkeypatch.setattr(module, "OPERATIONS", operations)
    sections = {op.section: op.policy for op in (ANALYZE, SAMPLE) if op.section and op.policy}
    kind = dataclasses.replace(POLICY, spec=policy_spec(sections))
    monkeypatch.setitem(KINDS, POLICY.name, kind)  # the loader's
    yield


def policy(name: str = "nightly", **spec: Any) -> MaintenancePolicySpec:
    doc = {"kind": POLICY.name, "metadata": {"name": name}, "spec": {"catalogRef": {"name": "lake"}, **spec}}
    parsed = load.parse_manifest(doc)
    assert isinstance(parsed, MaintenancePolicySpec)
    return parsed


def table(name: str = "sales.orders") -> policy_params.MaintainedTable:
    schema, short = name.split(".")
    return policy_params.MaintainedTable(name, TableState(1, "u", 0, schema, short, f"{short}/", True, 1, (), 2))


def test_a_declared_section_is_read_from_a_policy_manifest() -> None:
    p = policy(analysis={"schedule": "0 3 * * *", "maxTables": 7}, sampling={"schedule": "0 4 * * *"})
    assert p.sections == {
        "analysis": SectionSettings(Schedule("0 3 * * *"), {"maxTables": 7}),
        "sampling": SectionSettings(Schedule("0 4 * * *"), {"fraction": None}),
    }
    assert policy(analysis={"schedule": "0 3 * * *"}).sections["analysis"].values == {"maxTables": 100}
    assert policy().sections == {}


def test_a_declared_section_is_checked_with_its_field_paths() -> None:
    with pytest.raises(SpecError) as err:
        policy(analysis={"schedule": "nightly", "maxTables": 0, "maxTable": 3})
    message = str(err.value)
    assert "spec.analysis.schedule: 'nightly' is not a 5-field cron schedule" in message
    assert "spec.analysis.maxTables: " in message
    assert "spec.analysis.maxTable" in message


def test_a_declared_catalog_wide_section_is_scheduled_with_its_params() -> None:
    p = policy(analysis={"schedule": "0 3 * * *", "maxTables": 7})
    assert catalog_schedules(p) == {"analyze": Schedule("0 3 * * *")}
    assert catalog_params(p) == {"analyze": {"maxTables": 7}}
    assert catalog_params(policy(dryRun=True, analysis={"schedule": "0 3 * * *"})) == {
        "analyze": {"maxTables": 100, "dryRun": True}
    }
    runs = plan_policy_runs(
        p,
        created=datetime(2025, 6, 1, tzinfo=UTC),
        tables=[],
        history={},
        now=datetime(2025, 6, 2, 3, 1, tzinfo=UTC),
        catalog_owner="nightly",
    )
    assert [(r.table, r.operation, dict(r.params)) for r in runs.runs] == [(None, "analyze", {"maxTables": 7})]


def test_a_declared_table_section_gives_each_table_its_params() -> None:
    assert table_params(policy(sampling={"schedule": "0 4 * * *", "fraction": 0.25}), table()) == {
        "sample": {"fraction": 0.25}
    }
    assert table_params(policy(sampling={"schedule": "0 4 * * *"}), table()) == {"sample": {}}  # the job's default


def test_a_declared_catalog_wide_section_has_one_owner() -> None:
    p = policy("later", snapshotExpiry={"schedule": "0 1 * * *", "retainLast": 3}, analysis={"schedule": "0 3 * * *"})
    assert selection.conflict_message(p, "nightly") == (
        "snapshotExpiry and analysis of catalog lake are run by DuckLakeMaintenancePolicy nightly "
        "(the oldest policy of the catalog that sets catalog-wide operations); this policy runs none of them "
        "(expireSnapshots, analyze): remove them from one of the two"
    )


@dataclasses.dataclass(frozen=True)
class DryRunArgs:
    dry_run: bool = False


def test_a_section_sets_only_its_operations_parameters() -> None:
    with pytest.raises(TypeError, match="sets maxTables, not its parameters"):
        Operation("analyze", "none", {"dryRun": DRY_RUN}, DryRunArgs, section="analysis", policy=ANALYZE.policy)
    with pytest.raises(TypeError, match="names no new section"):
        dataclasses.replace(ANALYZE, section="compaction")


def test_an_operations_arguments_are_its_parameters_keywords() -> None:
    with pytest.raises(TypeError, match=r"analyze: DryRunArgs's fields are not its parameters' keywords"):
        Operation("analyze", "none", ANALYZE.params, DryRunArgs)
    with pytest.raises(TypeError, match=r"sample: AnalyzeArgs's fields are not"):
        Operation("sample", "required", SAMPLE.params, AnalyzeArgs)
