"""Maintenance policies and jobs parse into typed specs; every problem is reported with its path."""

from __future__ import annotations

from typing import Any

import pytest

from ducklake_operator.api.load import parse_manifest
from ducklake_operator.api.v1alpha1.job import JobSpec
from ducklake_operator.errors import SpecError


def policy(**spec: Any) -> dict[str, Any]:
    return {
        "kind": "DuckLakeMaintenancePolicy",
        "metadata": {"name": "p"},
        "spec": {"catalogRef": {"name": "lake"}, **spec},
    }


def test_policy_settings_are_typed() -> None:
    p = parse_manifest(
        policy(
            tableSelector={"matchLabels": {"tier": "gold"}},
            compaction={"schedule": "0 2 * * *", "targetFileSize": "128MB", "minInputFiles": 4},
            deleteRewrite={"schedule": "0 3 * * *", "deleteRatioThreshold": 0.3},
            snapshotExpiry={"schedule": "0 4 * * 0", "retainLast": 5},
            window={"start": "01:00", "end": "05:30", "timezone": "Europe/Amsterdam"},
        )
    )
    assert p.table_selector == (("tier", "gold"),) and p.compaction.target_file_size == 128_000_000
    assert p.compaction.min_input_files == 4 and p.delete_rewrite.delete_ratio_threshold == 0.3
    assert p.snapshot_expiry.retain_last == 5 and p.window.timezone == "Europe/Amsterdam" and p.spark is None


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ({"compaction": {"schedule": "every night"}}, "spec.compaction.schedule: 'every night' is not a 5-field cron"),
        ({"compaction": {"schedule": "0 2 * * *", "targetFileSize": "big"}}, "spec.compaction.targetFileSize"),
        ({"snapshotExpiry": {"schedule": "0 2 * * *"}}, "needs olderThan and/or retainLast"),
        ({"snapshotExpiry": {"schedule": "0 2 * * *", "olderThan": "a week"}}, "spec.snapshotExpiry.olderThan"),
        ({"window": {"start": "25:00", "end": "01:00", "timezone": "Mars/Olympus"}}, "is not an IANA time zone"),
        ({"tables": ["orders"], "tableSelector": {"matchLabels": {}}}, "give tableSelector or tables, not both"),
        ({"spark": {"launcher": "Yarn"}}, "spec.spark.launcher: 'Yarn' is not one of"),
        (
            {"deleteRewrite": {"schedule": "0 2 * * *", "deleteRatioThreshold": 2}},
            "2 is not a fraction between 0 and 1",
        ),
    ],
)
def test_policy_errors(spec: dict[str, Any], fragment: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_manifest(policy(**spec))
    assert fragment in str(err.value)


def test_jobs() -> None:
    job = parse_manifest(
        {
            "kind": "DuckLakeJob",
            "metadata": {"name": "j"},
            "spec": {"catalogRef": {"name": "lake"}, "table": "main.t", "operation": "compact", "timeout": "30m"},
        }
    )
    assert job.timeout_seconds == 1800 and job.operation == "compact"
    assert (
        parse_manifest(
            {
                "kind": "DuckLakeJob",
                "metadata": {"name": "j"},
                "spec": {"catalogRef": {"name": "lake"}, "operation": "expireSnapshots"},
            }
        ).table
        is None
    )
    with pytest.raises(SpecError, match="spec.table: is required for compact"):
        parse_manifest(
            {
                "kind": "DuckLakeJob",
                "metadata": {"name": "j"},
                "spec": {"catalogRef": {"name": "lake"}, "operation": "compact"},
            }
        )
    with pytest.raises(SpecError, match="'shrink' is not one of"):
        parse_manifest(
            {
                "kind": "DuckLakeJob",
                "metadata": {"name": "j"},
                "spec": {"catalogRef": {"name": "lake"}, "table": "main.t", "operation": "shrink"},
            }
        )


def job(**spec: Any) -> dict[str, Any]:
    return {"kind": "DuckLakeJob", "metadata": {"name": "j"}, "spec": {"catalogRef": {"name": "lake"}, **spec}}


def test_job_params_become_keywords() -> None:
    from ducklake_operator.model.job_params import CompactArgs, job_keywords

    spec = parse_manifest(
        job(
            table="main.t",
            operation="compact",
            params={"targetFileSize": "128MB", "minInputFiles": 3, "maxFilesPerRun": 10, "dryRun": True},
        )
    )
    assert job_keywords(spec.operation, spec.params) == {
        "target_file_size": 128_000_000,
        "min_input_files": 3,
        "max_groups": 10,
        "dry_run": True,
    }
    # parsed once, when the manifest is read: the spec carries the typed arguments
    assert isinstance(spec, JobSpec)
    assert spec.args == CompactArgs(target_file_size=128_000_000, min_input_files=3, max_groups=10, dry_run=True)
    assert job_keywords("rewriteDeletes", {"deleteThreshold": 0.25}) == {"delete_threshold": 0.25}
    assert job_keywords("expireSnapshots", {"olderThan": "7d", "retainLast": 2}) == {
        "older_than": "7d",
        "retain_last": 2,
    }


@pytest.mark.parametrize(
    "spec, fragment",
    [
        (
            {"table": "main.t", "operation": "compact", "params": {"targetFileSize": "big"}},
            "spec.params.targetFileSize: 'big' is not a size",
        ),
        ({"table": "main.t", "operation": "compact", "params": {"minInputFile": 3}}, "did you mean minInputFiles?"),
        (
            {"table": "main.t", "operation": "rewriteDeletes", "params": {"deleteThreshold": 1.5}},
            "is not a fraction between 0 and 1",
        ),
        (
            {"operation": "expireSnapshots", "params": {"olderThan": "a week"}},
            "spec.params.olderThan: 'a week' is not a duration",
        ),
        ({"operation": "expireSnapshots", "params": {"versions": [1], "retainLast": 2}}, "versions cannot be combined"),
        ({"operation": "cleanupFiles", "table": "main.t"}, "cleanupFiles works on the whole catalog"),
        ({"operation": "compact", "table": "t"}, "'t' is not schema.table"),
        (
            {"operation": "flushInlinedData", "params": {"dryRun": "yes"}},
            "spec.params.dryRun: 'yes' is not true or false",
        ),
    ],
)
def test_job_param_errors(spec: dict[str, Any], fragment: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_manifest(job(**spec))
    assert fragment in str(err.value)


def test_job_spark_settings_and_cancel() -> None:
    job = parse_manifest(
        {
            "apiVersion": "ducklake.dev/v1alpha1",
            "kind": "DuckLakeJob",
            "metadata": {"name": "j", "namespace": "ns"},
            "spec": {"catalogRef": {"name": "lake"}, "table": "main.t", "operation": "compact", "cancel": True,
                     "spark": {"launcher": "Local", "inProcessBelow": "16MB", "executor": {"instances": 2}}},
        }
    )  # fmt: skip
    assert job.cancel and job.spark.launcher == "Local" and job.spark.in_process_below == 16_000_000
    assert job.spark.executor == (("instances", "2"),) and job.spark.image is None
