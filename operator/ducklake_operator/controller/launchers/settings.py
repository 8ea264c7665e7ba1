"""How a run runs: its job's ``spark`` block over its policy's over the operator's defaults
(the chart sets those as environment variables). Pure."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...api.v1alpha1.spark import IMAGE_PULL_POLICY, SparkSettings
from ...model import run_env
from ...model.options import parse_size
from ...model.run_env import EnvVar

IMAGE_PULL_POLICY_ENV = "DUCKLAKE_JOB_IMAGE_PULL_POLICY"  # the chart sets it to its image.pullPolicy


@dataclass(frozen=True)
class SparkDefaults:
    """The chart's ``jobs.spark`` values, as the operator's environment carries them."""

    launcher: str = "Job"
    image: str | None = None
    image_pull_policy: str | None = None  # None: Kubernetes' default (Always for :latest, else IfNotPresent)
    service_account: str | None = None
    in_process_below: int | None = None
    master: str = "local[*]"  # the Local launcher's Spark
    driver: tuple[tuple[str, str], ...] = ()
    executor: tuple[tuple[str, str], ...] = ()
    conf: tuple[tuple[str, str], ...] = ()
    env: tuple[EnvVar, ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> SparkDefaults:
        """``DUCKLAKE_JOB_LAUNCHER``, ``_IMAGE``, ``_IMAGE_PULL_POLICY``, ``_SERVICE_ACCOUNT``,
        ``_IN_PROCESS_BELOW`` (a size), ``DUCKLAKE_SPARK_MASTER`` and ``DUCKLAKE_JOB_SPARK`` (JSON:
        driver, executor, conf, env). A value that does not read is an error at the operator's
        start, not per run."""
        below = env.get("DUCKLAKE_JOB_IN_PROCESS_BELOW") or None
        pull = env.get(IMAGE_PULL_POLICY_ENV) or None
        if pull is not None and pull not in IMAGE_PULL_POLICY.values:
            raise ValueError(f"{IMAGE_PULL_POLICY_ENV}: {pull!r} is not one of {', '.join(IMAGE_PULL_POLICY.values)}")
        blocks = json.loads(env.get("DUCKLAKE_JOB_SPARK") or "{}")
        variables, problems = run_env.read_env(blocks.get("env"), "jobs.spark.env")
        if problems:
            raise ValueError(f"DUCKLAKE_JOB_SPARK (the chart's jobs.spark): {'; '.join(problems)}")

        def text(value: object) -> str:  # as YAML says it: false, not Python's False
            return json.dumps(value) if isinstance(value, bool) else str(value)

        def pairs(key: str) -> tuple[tuple[str, str], ...]:
            given = dict(blocks.get(key) or {})
            return tuple(sorted((str(k), text(v)) for k, v in given.items() if v not in ("", None)))

        return cls(
            launcher=env.get("DUCKLAKE_JOB_LAUNCHER") or "Job",
            image=env.get("DUCKLAKE_JOB_IMAGE") or None,
            image_pull_policy=pull,
            service_account=env.get("DUCKLAKE_JOB_SERVICE_ACCOUNT") or None,
            in_process_below=parse_size(below) if below else None,
            master=env.get("DUCKLAKE_SPARK_MASTER") or "local[*]",
            driver=pairs("driver"),
            executor=pairs("executor"),
            conf=pairs("conf"),
            env=variables,
        )


def effective_spark(job: SparkSettings | None, policy: SparkSettings | None, defaults: SparkDefaults) -> dict[str, Any]:
    """The settings a run gets; a level's unset field takes the next level's, and driver,
    executor and conf merge key by key, env variable by variable."""
    levels = [s for s in (job, policy) if s is not None]

    def first(attr: str, default: Any) -> Any:
        return next((getattr(s, attr) for s in levels if getattr(s, attr) is not None), default)

    def merged(attr: str) -> dict[str, str]:
        out: dict[str, str] = dict(getattr(defaults, attr))
        for s in reversed(levels):  # the defaults, then the policy, the job over it
            out.update(dict(getattr(s, attr)))
        return out

    return {
        "launcher": first("launcher", defaults.launcher),
        "image": first("image", defaults.image),
        "imagePullPolicy": first("image_pull_policy", defaults.image_pull_policy),
        "serviceAccount": first("service_account", defaults.service_account),
        "driver": merged("driver"),
        "executor": merged("executor"),
        "conf": merged("conf"),
        "env": [v.to_json() for v in run_env.merged((defaults.env, *(s.env for s in reversed(levels))))],
        "inProcessBelow": first("in_process_below", defaults.in_process_below),
        "master": defaults.master,
    }
