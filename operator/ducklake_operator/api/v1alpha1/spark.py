"""The ``spark`` block of a policy or a job: how runs run. Unset fields take the next level's:
a job's over its policy's over the operator's defaults (``controller/run_settings.py``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...errors import SpecError
from ...model.options import SIZE_PATTERN, parse_size
from ...model.run_env import NAME_PATTERN as ENV_NAME_PATTERN
from ...model.run_env import RESERVED as RESERVED_ENV
from ...model.run_env import EnvVar, read_env
from ...model.spark_resources import CPU_PATTERN, JVM_MEMORY_PATTERN
from ..problems import Problems
from .fields import Arr, Choice, Int, IntOrStr, Obj, Str, StrMap, case_insensitive, obj

LAUNCHER = Choice(("SparkApplication", "Job", "Local"))  # unset: the next level's (run_settings)
IMAGE_PULL_POLICY = Choice(
    ("Always", "IfNotPresent", "Never")
)  # a container's imagePullPolicy; unset: the next level's


@dataclass(frozen=True)
class SparkSettings:
    """How runs run. Unset fields (None, empty) take the next level's: a job's over its
    policy's over the operator's defaults (``controller/run_settings.py``)."""

    launcher: str | None = None  # one of LAUNCHER
    image: str | None = None
    image_pull_policy: str | None = None  # one of IMAGE_PULL_POLICY
    service_account: str | None = None
    driver: tuple[tuple[str, str], ...] = ()
    executor: tuple[tuple[str, str], ...] = ()
    conf: tuple[tuple[str, str], ...] = ()
    in_process_below: int | None = None  # bytes of planned input under which a run skips Spark
    env: tuple[EnvVar, ...] = ()  # the programs' environment variables (model/run_env.py), merged by name


def _jvm_memory(example: str) -> Str:
    return Str(desc=f"A JVM memory size as Spark reads it, e.g. {example} (no unit: MiB).",
               extra={"pattern": case_insensitive(JVM_MEMORY_PATTERN)})  # fmt: skip


def _cpus(whose: str, more: str = "") -> IntOrStr:
    text = f'CPUs {whose} requests, e.g. 2, "0.5" or 500m (never limited: it uses what the node has spare).{more}'
    return IntOrStr(desc=text, extra={"pattern": CPU_PATTERN, "minimum": 1})


def _pairs(p: Problems, o: Any, key: str, path: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, str(v)) for k, v in p.get(o, key, path, dict, default={}).items()))


def _env(p: Problems, o: Any, key: str, path: str) -> Any:
    env, problems = read_env(o.get(key), f"{path}.{key}")
    p.items.extend(problems)
    return env


def _size(p: Problems, o: Any, key: str, path: str) -> int | None:
    below = p.get(o, key, path, (int, str))
    if below is None:
        return None
    try:
        return parse_size(below)
    except (SpecError, ValueError) as exc:
        p.add(f"{path}.{key}", exc.problems[0] if isinstance(exc, SpecError) else str(exc))
        return None


def _env_list() -> Arr:
    """``spark.env``: a container's ``env`` as users write it, one entry per name."""
    reserved = ", ".join(RESERVED_ENV)
    entry = obj(
        "An environment variable: a value, or a key of a Secret in the run's namespace.",
        {
            "name": Str(desc="Its name.", pattern=ENV_NAME_PATTERN, min_length=1, extra={"maxLength": 256}),
            "value": Str(desc="Its value, as the program gets it ($(NAME) is not expanded)."),
            "valueFrom": obj(
                "Where its value comes from.",
                {
                    "secretKeyRef": obj(
                        "A key of a Secret in the run's namespace (the Local launcher reads it as the operator: "
                        "grant it with the chart's rbac.catalogSecrets).",
                        {"name": Str(desc="The Secret.", min_length=1), "key": Str(desc="Its key.", min_length=1)},
                        required=("name", "key"),
                    )
                },
                required=("secretKeyRef",),
            ),
        },
        required=("name",),
        rules=(
            ("!(has(self.value) && has(self.valueFrom))", "give value or valueFrom, not both"),
            (
                f"!(self.name in {json.dumps(list(RESERVED_ENV))})",
                f"the operator sets this variable itself ({reserved}): a run's credentials come from its catalog's "
                "Secrets",
            ),
        ),
    )
    return Arr(
        desc="Environment variables of the run's programs, on the driver and the executors (the Local launcher's "
        "process): a job's replace its policy's and the operator's (chart value jobs.spark.env) of the same "
        f"name. Names the operator sets are refused: {reserved}.",
        items=entry,
        max_items=100,
        reader=_env,
        extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )


def spark(desc: str) -> Obj:
    """The ``spark`` block of a policy or a job: unset fields take the next level's."""
    return obj(
        desc,
        {
            "launcher": Str(
                desc="Local (a child process of the operator), Job (a batch/v1 Job running spark-submit in client "
                "mode) or SparkApplication (the Kubeflow Spark Operator). Default: the operator's (chart value "
                "jobs.spark.launcher).",
                choice=LAUNCHER,
            ),
            "image": Str(desc="Image with the job program and PySpark; default: the operator's own image."),
            "imagePullPolicy": Str(
                desc="Pull policy of the image, for the driver and the executors; default: the operator's (chart "
                "value image.pullPolicy), else Kubernetes' (Always for :latest, else IfNotPresent).",
                choice=IMAGE_PULL_POLICY,
            ),
            "serviceAccount": Str(desc="Service account of the driver (and executors)."),
            "driver": obj(
                "Driver resources.", {"cores": _cpus("the driver's pod"), "memory": _jvm_memory("2g")}, reader=_pairs
            ),
            "executor": obj(
                "Executor resources.",
                {
                    "instances": Int(desc="Executors.", minimum=0),
                    "cores": _cpus("each executor's pod", " Its task slots are the whole CPUs in it, at least 1."),
                    "memory": _jvm_memory("4g"),
                },
                reader=_pairs,
            ),
            "conf": StrMap(desc="Extra Spark configuration.", reader=_pairs),
            "env": _env_list(),
            "inProcessBelow": IntOrStr(
                desc="Run in-process, without starting Spark, when the planned input is smaller than this (e.g. "
                "64MB); off when unset.",
                pattern=case_insensitive(SIZE_PATTERN),
                reader=_size,
            ),
        },
        to=SparkSettings,
        absent="none",
        order=(
            "env",
            "inProcessBelow",
            "launcher",
            "image",
            "imagePullPolicy",
            "serviceAccount",
            "driver",
            "executor",
            "conf",
        ),  # fmt: skip
    )
