"""Which attempts a warm spare may run (``local_spare.spare_key``): the same Spark settings as
the run document gives the program and the same ``spark.env``; never one whose ``spark.env``
takes a value from a Secret. And the chart value that turns it off."""

from __future__ import annotations

from typing import Any

import pytest

from ducklake_operator.controller.launchers.local_spare import spare_key, warm_spare_enabled
from ducklake_operator.controller.launchers.spec import LaunchSpec, launch_spec


def attempt(uid: str, *, conf: dict[str, str] | None = None, env: list[dict[str, Any]] | None = None,
            master: str = "local[2]", table: str = "main.t") -> LaunchSpec:  # fmt: skip
    doc = {"job": {"uid": uid}, "table": table, "spark": {"master": master, "conf": conf or {}}}
    return launch_spec(job_name="j", namespace="data", uid=uid, attempt=1, run_document=doc,
                       spark={"launcher": "Local", "master": master, "env": env or []}, env_from_secrets=[],
                       timeout_seconds=None, env={})  # fmt: skip


def test_attempts_with_the_same_spark_settings_share_a_key_whatever_else_differs() -> None:
    first = spare_key(attempt("u1", conf={"spark.task.maxFailures": "2"}))
    assert first is not None
    assert spare_key(attempt("u2", conf={"spark.task.maxFailures": "2"}, table="main.other")) == first


@pytest.mark.parametrize(
    "other",
    [
        {"conf": {"spark.task.maxFailures": "3"}},
        {"conf": {}},
        {"master": "local[1]"},
        {"env": [{"name": "DUCKLAKE_FAULT_PAUSE", "value": "before_commit"}]},
    ],
)
def test_other_spark_settings_or_environment_need_another_spare(other: dict[str, Any]) -> None:
    base = spare_key(attempt("u1", conf={"spark.task.maxFailures": "2"}))
    assert spare_key(attempt("u2", **{"conf": {"spark.task.maxFailures": "2"}, **other})) != base


def test_a_spark_env_value_from_a_secret_is_never_run_by_a_spare() -> None:
    secret = [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "api", "key": "token"}}}]
    assert spare_key(attempt("u1", env=secret)) is None
    assert spare_key(attempt("u1", env=[{"name": "TOKEN", "value": "plain"}])) is not None


@pytest.mark.parametrize(("value", "on"), [(None, True), ("", True), ("true", True), ("True", True), ("false", False),
                                           ("0", False), ("off", False)])  # fmt: skip
def test_the_chart_value_turns_it_on_and_off(value: str | None, on: bool) -> None:
    assert warm_spare_enabled(value) is on


def test_a_chart_value_that_is_no_boolean_is_refused() -> None:
    with pytest.raises(ValueError, match="DUCKLAKE_LOCAL_WARM_SPARE='maybe'"):
        warm_spare_enabled("maybe")
