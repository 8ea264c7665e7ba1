"""Which attempts a warm spare may run (``local_spare.spare_key``): the same Spark settings as
the run document gives the program and the same ``spark.env``; never one whose ``spark.env``
takes a value from a Secret. The chart value that turns it off, and the room a pod's memory
limit leaves for one (``memory_room``, from the cgroup's own files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ducklake_operator.controller.launchers.local_spare import memory_room, spare_key, warm_spare_enabled
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


def cgroup(root: Path, version: int, limit: str, usage: int, active_file: int = 0, inactive_file: int = 0) -> str:
    """A memory cgroup's files as the kernel shows them to the container (v2, or v1's memory controller)."""
    if version == 2:
        files = {"memory.max": limit, "memory.current": str(usage),
                 "memory.stat": f"anon 1\nactive_file {active_file}\ninactive_file {inactive_file}\nshmem 7\n"}  # fmt: skip
        directory = root
    else:
        files = {"memory.limit_in_bytes": limit, "memory.usage_in_bytes": str(usage),
                 "memory.stat": f"cache 9\ntotal_active_file {active_file}\ntotal_inactive_file {inactive_file}\n"}  # fmt: skip
        directory = root / "memory"
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text + "\n")
    return str(root)


MB = 2**20


@pytest.mark.parametrize("version", [1, 2])
def test_the_room_under_the_pods_memory_limit_counts_the_page_cache_as_free(tmp_path: Path, version: int) -> None:
    root = cgroup(tmp_path, version, str(1024 * MB), 900 * MB, active_file=300 * MB, inactive_file=100 * MB)
    assert memory_room(root) == 1024 * MB - 500 * MB


@pytest.mark.parametrize(("version", "limit"), [(2, "max"), (1, "9223372036854771712")])
def test_no_memory_limit_leaves_unbounded_room(tmp_path: Path, version: int, limit: str) -> None:
    assert memory_room(cgroup(tmp_path, version, limit, 900 * MB)) is None


def test_no_memory_cgroup_to_read_says_nothing(tmp_path: Path) -> None:
    assert memory_room(str(tmp_path)) is None
