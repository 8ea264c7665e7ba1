"""Every maintenance setting has one definition (model/maintenance_params.py), and everything that
reads it agrees with it: the CRDs (minimum, maximum, default, pattern, description), the manifest
loader (refuses what is out of bounds, with the field path; defaults what is absent), ``ducklake
run-job`` (help, and the same refusals), and the job functions' and planners' defaults."""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable
from typing import Any

import pytest

from ducklake_jobs import housekeeping
from ducklake_jobs.compact import compact
from ducklake_jobs.flush import flush_inlined_data
from ducklake_jobs.ingest import ingest
from ducklake_jobs.repartition import repartition
from ducklake_jobs.rewrite_column_type import rewrite_column_type
from ducklake_jobs.rewrite_deletes import rewrite_deletes
from ducklake_operator import cli
from ducklake_operator.api.load import parse_manifest
from ducklake_operator.api.v1alpha1.job import JobSpec
from ducklake_operator.api.v1alpha1.policy import MaintenancePolicySpec
from ducklake_operator.catalog import housekeeping as catalog_housekeeping
from ducklake_operator.controller import crds
from ducklake_operator.errors import SpecError
from ducklake_operator.maintenance.compaction import CompactionOptions
from ducklake_operator.maintenance.delete_rewrite import plan_delete_rewrite
from ducklake_operator.model.job_params import DECLARED_SECTIONS, OPERATIONS, POLICY_SETTINGS
from ducklake_operator.model.maintenance_params import (
    DELETE_THRESHOLD,
    DRY_RUN,
    JOB_SETTINGS,
    Param,
)
from support.manifests import parse_as

CRDS = {e["kind"]: crds.crd(e)["spec"]["versions"][0]["schema"]["openAPIV3Schema"] for e in crds.KINDS}


def crd_node(kind: str, *path: str) -> dict[str, Any]:
    node = CRDS[kind]["properties"]["spec"]
    for name in path:
        node = node["properties"][name]
    return node


def invalid_values(param: Param) -> list[object]:
    """Values the definition refuses: just past each bound, or not of its kind at all."""
    if param.kind == "integer":
        out: list[object] = ["many"]
        out += [param.minimum - 1] if param.minimum is not None else []
        out += [param.maximum + 1] if param.maximum is not None else []
        return out
    if param.kind == "fraction":
        assert param.minimum is not None and param.maximum is not None
        return [param.minimum - 0.5, param.maximum + 0.5, "half"]
    refused: dict[str, list[object]] = {
        "size": ["12 parsecs"],
        "duration": ["a week"],
        "boolean": ["maybe"],
        "snapshot_ids": ["1,2"],
        "column_path": ["a..b", 7],
        "type": ["int65", 64],
        "column_types": ["code", {}, {"a..b": "int64"}, {"code": "int65"}],
        "manifest": ["x", {"kind": "DuckLakeTable", "metadata": {"name": "t"}, "spec": {}}],
        "choice": ["maybe"],
        "text": ["", 7],
    }
    return refused[param.kind]


POLICY_SETTING_IDS = [(section, key) for section, params in POLICY_SETTINGS.items() for key in params]


def declared_value(section: str, key: str) -> Callable[[MaintenancePolicySpec], Any]:
    """Where the loader puts a setting of a section an operation declares."""
    return lambda p: p.sections[section].values[key]


# Where the loader puts each policy setting (a new setting must be added here to be tested).
POLICY_VALUES: dict[tuple[str, str], Callable[[MaintenancePolicySpec], Any]] = {
    ("compaction", "targetFileSize"): lambda p: p.compaction.target_file_size,
    ("compaction", "minInputFiles"): lambda p: p.compaction.min_input_files,
    ("compaction", "smallFileThreshold"): lambda p: p.compaction.small_file_threshold,
    ("compaction", "sort"): lambda p: p.compaction.sort,
    ("compaction", "whenSmallFilesAbove"): lambda p: p.compaction.schedule.when_small_files_above,
    ("deleteRewrite", "deleteRatioThreshold"): lambda p: p.delete_rewrite.delete_ratio_threshold,
    ("snapshotExpiry", "olderThan"): lambda p: p.snapshot_expiry.older_than,
    ("snapshotExpiry", "retainLast"): lambda p: p.snapshot_expiry.retain_last,
    ("fileCleanup", "olderThan"): lambda p: p.file_cleanup.older_than,
    ("fileCleanup", "orphanFiles"): lambda p: p.file_cleanup.orphan_files,
    ("fileCleanup", "dryRun"): lambda p: p.file_cleanup.dry_run,
    ("concurrency", "maxJobsPerCatalog"): lambda p: p.max_jobs_per_catalog,
    ("spec", "suspend"): lambda p: p.suspend,
    ("spec", "historyLimit"): lambda p: p.history_limit,
    ("spec", "dryRun"): lambda p: p.dry_run,
    ("partitionRewrite", "maxBytesPerCommit"): lambda p: p.partition_rewrite.max_bytes_per_commit,
    # the sections operations declare: each setting under its own key
    **{
        (section, key): declared_value(section, key)
        for section, declared in DECLARED_SECTIONS.items()
        for key in declared.settings
    },
}


def policy(section: str, settings: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"catalogRef": {"name": "lake"}}
    if section == "spec":
        spec.update(settings)
    elif section == "concurrency":
        spec["concurrency"] = settings
    else:
        spec[section] = {"schedule": "0 2 * * *", **settings}
    return {"kind": "DuckLakeMaintenancePolicy", "metadata": {"name": "p"}, "spec": spec}


def field_path(section: str, key: str) -> str:
    return f"spec.{key}" if section == "spec" else f"spec.{section}.{key}"


def check_crd(node: dict[str, Any], param: Param) -> None:
    assert node.get("minimum") == param.minimum and node.get("maximum") == param.maximum
    assert node.get("default") == param.default
    text = param.describe()
    assert node["description"] == text[0].upper() + text[1:] + "."
    if param.kind in ("size", "duration"):  # the CRD's pattern is the loader's: same refusals
        pattern = re.compile(node["pattern"])
        assert all(not pattern.match(str(v)) for v in invalid_values(param))
        assert pattern.match("3d" if param.kind == "duration" else "512MB")


def test_every_policy_setting_is_tested() -> None:
    assert set(POLICY_VALUES) == set(POLICY_SETTING_IDS)


@pytest.mark.parametrize("section, key", POLICY_SETTING_IDS)
def test_policy_settings_agree_with_their_definition(section: str, key: str) -> None:
    param = POLICY_SETTINGS[section][key]
    check_crd(crd_node("DuckLakeMaintenancePolicy", *field_path(section, key).split(".")[1:]), param)
    for value in invalid_values(param):
        with pytest.raises(SpecError) as err:
            parse_manifest(policy(section, {key: value}))
        assert f"{field_path(section, key)}: " in str(err.value), value
    # absent: the definition's default (snapshotExpiry needs one of its two settings)
    other = {"retainLast": 5} if key != "retainLast" else {"olderThan": "7d"}
    loaded = parse_as(MaintenancePolicySpec, policy(section, other if section == "snapshotExpiry" else {}))
    assert POLICY_VALUES[(section, key)](loaded) == param.default


def test_job_settings_agree_with_their_definition() -> None:
    for key, param in JOB_SETTINGS.items():
        check_crd(crd_node("DuckLakeJob", key), param)
        job = {"catalogRef": {"name": "lake"}, "operation": "expireSnapshots"}
        for value in invalid_values(param):
            with pytest.raises(SpecError, match=f"spec.{key}: "):
                parse_manifest({"kind": "DuckLakeJob", "metadata": {"name": "j"}, "spec": {**job, key: value}})
        loaded = parse_manifest({"kind": "DuckLakeJob", "metadata": {"name": "j"}, "spec": job})
        assert isinstance(loaded, JobSpec) and getattr(loaded, key) == param.default


JOB_PARAM_IDS = [(op, key) for op, o in OPERATIONS.items() for key in o.params]

# The function each operation runs, and the planner options its keywords end up in.
JOB_FUNCTIONS: dict[str, list[Callable[..., Any]]] = {
    "compact": [compact, CompactionOptions],
    "rewriteDeletes": [rewrite_deletes],
    "flushInlinedData": [flush_inlined_data],
    "expireSnapshots": [housekeeping.expire],
    "cleanupFiles": [housekeeping.cleanup_files],
    "deleteOrphanFiles": [housekeeping.delete_orphan_files],
    "rewriteColumnType": [rewrite_column_type],
    "repartition": [repartition],
    "ingest": [ingest],
}


def keyword_default(op: str, keyword: str) -> Any:
    for fn in JOB_FUNCTIONS[op]:
        if dataclasses.is_dataclass(fn):
            found = {f.name: f.default for f in dataclasses.fields(fn)}
            if keyword in found:
                return found[keyword]
        elif keyword in inspect.signature(fn).parameters:
            return inspect.signature(fn).parameters[keyword].default
    raise AssertionError(f"{op} takes no keyword {keyword}")


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("op, key", JOB_PARAM_IDS)
def test_job_params_agree_with_their_definition(op: str, key: str, capsys: pytest.CaptureFixture[str]) -> None:
    param = OPERATIONS[op].params[key]
    # the CRD documents it, and the CLI's help
    assert f"- {key}: {param.describe()}." in crd_node("DuckLakeJob", "params")["description"]
    with pytest.raises(SystemExit):
        cli.main(["run-job", "--help"])
    assert flat(f"{key} {param.describe()}") in flat(capsys.readouterr().out)
    table = ["main.t"] if OPERATIONS[op].table == "required" else []  # as the CLI's arguments
    for value in invalid_values(param):
        # the loader, with the field path
        spec = {
            "catalogRef": {"name": "lake"},
            "operation": op,
            "params": {key: value},
            "table": table[0] if table else None,
        }
        with pytest.raises(SpecError) as err:
            parse_manifest({"kind": "DuckLakeJob", "metadata": {"name": "j"}, "spec": spec})
        assert f"spec.params.{key}: " in str(err.value), value
        # the CLI, before it opens any catalog (the file does not exist)
        assert cli.main(["run-job", op, *table, "-p", f"{key}={value}", "-f", "/nonexistent.yaml"]) == 1
        assert f"-p.{key}: " in capsys.readouterr().err, value
    # the job function's (or its planner's) default for the keyword is the definition's
    expected = param.default if param.default is not None else (param.fallback if param.option else None)
    default = keyword_default(op, param.keyword)  # type: ignore[arg-type]
    if param.required:  # no default anywhere: the loader and the CLI refuse a job without it
        assert default is inspect.Parameter.empty, (op, key, default)
        return
    assert default == expected or (default is None and param.option), (op, key, default)


def test_option_backed_defaults_fall_back_to_duckdbs() -> None:
    assert inspect.signature(plan_delete_rewrite).parameters["threshold"].default == DELETE_THRESHOLD.fallback
    assert DELETE_THRESHOLD.resolve(None, lambda key: None) == 0.95
    assert DELETE_THRESHOLD.resolve(None, {"rewrite_delete_threshold": "0.300000"}.get) == 0.3
    assert DELETE_THRESHOLD.resolve(0.5, {"rewrite_delete_threshold": "0.300000"}.get) == 0.5
    catalog_expire = inspect.signature(catalog_housekeeping.expire).parameters["dry_run"].default
    assert catalog_expire == DRY_RUN.default


def test_shorthand_flags_are_checked_as_their_params(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run-job", "expireSnapshots", "--retain-last", "0", "-f", "/nonexistent.yaml"]) == 1
    assert "-p.retainLast: must be at least 1, got 0" in capsys.readouterr().err
    assert cli.main(["run-job", "cleanupFiles", "--older-than", "a week", "-f", "/nonexistent.yaml"]) == 1
    assert "-p.olderThan: 'a week' is not a duration" in capsys.readouterr().err
