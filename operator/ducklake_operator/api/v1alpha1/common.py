"""Declarations shared by several kinds: references, tags, options, the ``spark`` block and
the status every kind has."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import SpecError
from ...model.names import identifier_problem
from ...model.options import OPTIONS, SIZE_PATTERN, normalize_option, parse_size
from ...model.run_env import NAME_PATTERN as ENV_NAME_PATTERN
from ...model.run_env import RESERVED as RESERVED_ENV
from ...model.run_env import EnvVar, read_env
from ...model.spark_resources import CPU_PATTERN, JVM_MEMORY_PATTERN
from ..problems import Problems
from .fields import Anything, Arr, Choice, DefaultChoice, Int, IntOrStr, Node, Obj, Str, StrMap, case_insensitive, obj
from .names import CONDITION_TYPES

DELETION_POLICY = DefaultChoice(("Retain", "Delete"), "Retain")
LAUNCHER = Choice(("SparkApplication", "Job", "Local"))  # unset: the next level's (run_settings)
IMAGE_PULL_POLICY = Choice(
    ("Always", "IfNotPresent", "Never")
)  # a container's imagePullPolicy; unset: the next level's


@dataclass(frozen=True)
class ObjectRef:
    """Kubernetes identity of a manifest and where it came from (for messages)."""

    kind: str
    name: str
    namespace: str | None = None
    source: str | None = None  # file path, or "namespace/name" in a cluster
    generation: int | None = None
    labels: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        where = f" ({self.source})" if self.source else ""
        return f"{self.kind} {self.name}{where}"


@dataclass(frozen=True)
class SecretRef:
    name: str
    username_key: str = "username"
    password_key: str = "password"


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


NAME_PATTERN = r"^[^\s\x00-\x1f](.*[^\s\x00-\x1f])?$"


def identifier(what: str, desc: str, **more: Any) -> Str:
    """A schema, table or column name: required, checked as DuckDB takes it."""

    def read(p: Problems, o: Any, key: str, path: str) -> str:
        value = o.get(key) if isinstance(o, Mapping) else None
        if value is None:
            p.add(f"{path}.{key}", "is required")
            return ""
        problem = identifier_problem(value, what)
        if problem:
            p.add(f"{path}.{key}", problem)
            return ""
        return str(value)

    return Str(desc=desc, pattern=NAME_PATTERN, reader=read, **more)


def secret_ref(what: str) -> Obj:
    return obj(
        f"Secret (same namespace) holding the {what}.",
        {
            "name": Str(desc="Name of the Secret.", min_length=1),
            "usernameKey": Str(desc="Key of the user name in the Secret.", default="username"),
            "passwordKey": Str(desc="Key of the password in the Secret.", default="password"),
        },
        required=("name",),
        to=SecretRef,
        absent="none",
        attr="credentials",
    )


CATALOG_REF = obj(
    "The DuckLakeCatalog (same namespace) this object belongs to. Immutable.",
    {"name": Str(desc="Name of the DuckLakeCatalog.", min_length=1)},
    required=("name",),
    rules=(("self == oldSelf", "catalogRef is immutable"),),
    to=lambda name: name,  # the spec holds the catalog's name
    attr="catalog",
)


def deletion(desc: str) -> Str:
    return Str(desc=desc, choice=DELETION_POLICY)


DELETION = deletion(
    "Retain (default): deleting the resource leaves the lake untouched. Delete: the object is dropped "
    "from the catalog in one snapshot."
)


def read_tags(p: Problems, o: Any, key: str, path: str, with_comment: bool = True) -> tuple[tuple[str, str], ...]:
    """Tags, with the ``comment`` field of ``o`` among them (as DuckDB keeps it)."""
    out = []
    for k, v in p.get(o, key, path, dict, default={}).items():
        if not isinstance(k, str) or not isinstance(v, (str, int, float, bool)):
            p.add(f"{path}.tags.{k}", "tags map names to strings")
            continue
        if k == "comment":
            p.add(f"{path}.tags.comment", "use the comment field for the comment")
            continue
        out.append((k, str(v)))
    comment = p.get(o, "comment", path, str) if with_comment else None
    if comment is not None:
        out.append(("comment", comment))
    return tuple(sorted(out))


def comment(desc: str) -> Str:
    """The comment: read with the tags (``read_tags``)."""
    return Str(desc=desc, attr=None, reader=lambda p, o, key, path: None)


def tags(desc: str) -> StrMap:
    return StrMap(desc=desc, reader=read_tags)


def renamed_from(desc: str) -> Arr:
    def read(p: Problems, o: Any, key: str, path: str) -> tuple[str, ...]:
        raw = o.get(key) if isinstance(o, Mapping) else None
        if raw is None:
            return ()
        names = [raw] if isinstance(raw, str) else raw
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            p.add(f"{path}.{key}", "must be a name or a list of earlier names")
            return ()
        return tuple(names)

    return Arr(desc=desc, items=Str(desc="An earlier name."), reader=read)


def options(scope: str) -> Anything:
    """The options that may be set at ``scope`` (``model/options.py``), normalised."""
    names = [manifest for manifest, _, scopes in OPTIONS.values() if scope in scopes]
    desc = f"DuckLake options (ducklake_metadata) for this {'catalog' if scope == 'global' else scope}: " + (
        ", ".join(names) + "."
    )

    def read(p: Problems, o: Any, key: str, path: str) -> tuple[tuple[str, str], ...]:
        out = []
        for k, v in p.get(o, key, path, dict, default={}).items():
            try:
                out.append(normalize_option(k, v, scope))
            except SpecError as exc:
                p.add(f"{path}.{key}.{k}", exc.problems[0])
        return tuple(sorted(out))

    return Anything(desc=desc, mapping=True, reader=read)


def local_path(path: str, base_dir: str | None) -> str:
    """A path relative to the manifest's file, made absolute."""
    if not path or os.path.isabs(path) or base_dir is None:
        return path
    return os.path.normpath(os.path.join(base_dir, path)) + ("/" if path.endswith("/") else "")


# ------------------------------------------------------------------ spark


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


# ------------------------------------------------------------------ status


def _condition() -> Obj:
    return obj(
        "Standard Kubernetes condition.",
        {
            "type": Str(desc=", ".join(CONDITION_TYPES) + ", ..."),
            "status": Str(desc="True, False or Unknown.", choice=Choice(("True", "False", "Unknown"))),
            "reason": Str(desc="One-word CamelCase reason."),
            "message": Str(desc="Human-readable details."),
            "observedGeneration": Int(desc="Generation the condition was computed for."),
            "lastTransitionTime": Str(desc="When the status last changed (RFC 3339)."),
        },
        required=("type", "status"),
    )


def status(extra: dict[str, Node]) -> Obj:
    """A kind's status: the conditions and bookkeeping every kind has, then its own fields."""
    props: dict[str, Node] = {
        "conditions": Arr(desc="Current conditions.", items=_condition()),
        "observedGeneration": Int(desc="The spec generation last reconciled."),
        "kopf": Anything(
            desc="The operator's bookkeeping (kopf): handler progress and the last spec handled.", mapping=True
        ),
    }
    return obj("Observed state, written by the operator.", {**props, **extra})


def plan_status() -> dict[str, Node]:
    """Status of the plans of a schema or a table (status.plan_fields writes them)."""
    changes = Arr(desc="One line per change.", items=Str(desc="A change."))
    return {
        "lastPlan": obj(
            "The changes last applied.",
            {"hash": Str(desc="Plan hash."), "snapshot": Int(desc="Snapshot committed."), "changes": changes},
        ),
        "pendingPlan": obj(
            "A plan that is blocked or cannot be applied.",
            {"hash": Str(desc="Plan hash; copy into spec.evolution.approvedPlan to approve."), "changes": changes},
        ),
        "blockedChanges": Arr(
            desc="Changes refused and how to allow them.",
            items=obj(
                "A blocked change.",
                {
                    "change": Str(desc="The change."),
                    "reason": Str(desc="Why it is blocked."),
                    "allow": Str(desc="How to allow it."),
                },
            ),
        ),
    }
