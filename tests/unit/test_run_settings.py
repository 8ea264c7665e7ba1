"""A run's spark settings: its job's over its policy's over the operator's defaults."""

from __future__ import annotations

from ducklake_operator.api.v1alpha1.spark import SparkSettings
from ducklake_operator.controller.launchers.settings import SparkDefaults, effective_spark


def test_job_over_policy_over_defaults() -> None:
    defaults = SparkDefaults.from_env({"DUCKLAKE_JOB_LAUNCHER": "Job", "DUCKLAKE_JOB_IMAGE": "img:1"})
    policy = SparkSettings(launcher="SparkApplication", service_account="spark", executor=(("instances", "4"),),
                           conf=(("a", "1"), ("b", "2")))  # fmt: skip
    job = SparkSettings(executor=(("memory", "8g"),), conf=(("b", "3"),), in_process_below=1000)
    out = effective_spark(job, policy, defaults)
    assert out["launcher"] == "SparkApplication" and out["image"] == "img:1" and out["serviceAccount"] == "spark"
    assert out["executor"] == {"instances": "4", "memory": "8g"} and out["conf"] == {"a": "1", "b": "3"}
    assert out["inProcessBelow"] == 1000
    assert effective_spark(None, None, defaults)["launcher"] == "Job"
    assert effective_spark(SparkSettings(launcher="Local"), policy, defaults)["launcher"] == "Local"
