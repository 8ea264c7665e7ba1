"""How a run runs: its job's ``spark`` block over its policy's over the operator's defaults
(the chart sets those as environment variables). Pure."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..model.spec import SparkSettings


@dataclass(frozen=True)
class SparkDefaults:
    launcher: str = "Job"
    image: str | None = None
    service_account: str | None = None
    in_process_below: int | None = None
    master: str = "local[*]"  # the Local launcher's Spark

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> SparkDefaults:
        below = env.get("DUCKLAKE_JOB_IN_PROCESS_BELOW")
        return cls(
            launcher=env.get("DUCKLAKE_JOB_LAUNCHER", "Job"),
            image=env.get("DUCKLAKE_JOB_IMAGE") or None,
            service_account=env.get("DUCKLAKE_JOB_SERVICE_ACCOUNT") or None,
            in_process_below=int(below) if below and below.isdigit() else None,
            master=env.get("DUCKLAKE_SPARK_MASTER", "local[*]"),
        )


def effective_spark(job: SparkSettings | None, policy: SparkSettings | None, defaults: SparkDefaults) -> dict[str, Any]:
    """The settings a run gets; a level's unset field takes the next level's, and driver,
    executor and conf merge key by key."""
    levels = [s for s in (job, policy) if s is not None]

    def first(attr: str, default: Any) -> Any:
        return next((getattr(s, attr) for s in levels if getattr(s, attr) is not None), default)

    def merged(attr: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for s in reversed(levels):  # the policy first, the job over it
            out.update(dict(getattr(s, attr)))
        return out

    return {
        "launcher": first("launcher", defaults.launcher),
        "image": first("image", defaults.image),
        "serviceAccount": first("service_account", defaults.service_account),
        "driver": merged("driver"),
        "executor": merged("executor"),
        "conf": merged("conf"),
        "inProcessBelow": first("in_process_below", defaults.in_process_below),
        "master": defaults.master,
    }
