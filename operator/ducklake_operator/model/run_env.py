"""A run's environment variables: those the operator gives every run's programs, and those a
user adds with ``spark.env`` (a DuckLakeJob's, its policy's, the chart's ``jobs.spark.env``),
read and checked here. Pure.

A ``spark.env`` entry is written as a container's ``env`` entry is: a ``name`` and a
``value``, or ``valueFrom.secretKeyRef`` (a key of a Secret in the run's namespace). The
value reaches the program as written, whatever the launcher: on a pod Kubernetes would expand
``$(NAME)`` references in it, so the renderers escape them (``literal``). Names the operator
sets itself are refused: a run's credentials come from its catalog's Secrets only, and the
pods' own addresses and reporting are the operator's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# what the operator sets in a run's programs (launchers/render.py, launchers/local.py, runs.py)
CATALOG_USERNAME, CATALOG_PASSWORD = "DUCKLAKE_CATALOG_USERNAME", "DUCKLAKE_CATALOG_PASSWORD"
S3_KEY_ID, S3_SECRET_KEY = "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"
REPORT_TO_API = "DUCKLAKE_REPORT_TO_API"
POD_NAME, POD_IP, SPARK_LOCAL_IP = "POD_NAME", "POD_IP", "SPARK_LOCAL_IP"
_CATALOG = "the catalog's credentials come from its DuckLakeCatalog's credentialsSecretRef"
_S3 = "the S3 credentials come from the DuckLakeCatalog's storage.s3.credentialsSecretRef"
_DRIVER = "the Job launcher's driver pod needs its own"
# name -> why a run may not set it
RESERVED: dict[str, str] = {
    CATALOG_USERNAME: _CATALOG,
    CATALOG_PASSWORD: _CATALOG,
    S3_KEY_ID: _S3,
    S3_SECRET_KEY: _S3,
    REPORT_TO_API: "the operator sets it (the job program reports to its DuckLakeJob)",
    "DUCKLAKE_SPARK_MASTER": "the operator chooses the Spark master (spark.launcher, spark.executor.instances)",
    POD_NAME: _DRIVER,
    POD_IP: _DRIVER,
    SPARK_LOCAL_IP: _DRIVER,
    "KUBERNETES_SERVICE_HOST": "the kubelet's: the driver reaches the API server by it",
    "KUBERNETES_SERVICE_PORT": "the kubelet's: the driver reaches the API server by it",
}
# Kubernetes' rule for env names before v1.30 relaxed it (so any cluster takes them); a
# process's environment takes them too
NAME_PATTERN = r"^[-._a-zA-Z][-._a-zA-Z0-9]*$"
_NAME = re.compile(NAME_PATTERN)


@dataclass(frozen=True)
class SecretKeyRef:
    name: str  # a Secret in the run's namespace
    key: str


@dataclass(frozen=True)
class EnvVar:
    """One variable of ``spark.env``: its value, or the Secret key it comes from."""

    name: str
    value: str = ""
    secret: SecretKeyRef | None = None

    def to_json(self) -> dict[str, Any]:
        """As the user writes it (and a container's ``env`` entry, but for ``literal``)."""
        if self.secret is not None:
            return {
                "name": self.name,
                "valueFrom": {"secretKeyRef": {"name": self.secret.name, "key": self.secret.key}},
            }
        return {"name": self.name, "value": self.value}


def literal(value: str) -> str:
    """``value`` for a container's ``env``, which Kubernetes expands (``$(NAME)`` is another
    variable's value, ``$$`` is ``$``): every ``$`` doubled, so the program gets ``value``."""
    return value.replace("$", "$$")


def read_env(raw: Any, path: str) -> tuple[tuple[EnvVar, ...], list[str]]:
    """``spark.env`` as written (a list of ``{name, value}`` or ``{name, valueFrom:
    {secretKeyRef: {name, key}}}``): the variables, and every problem with its field path."""
    if raw is None:
        return (), []
    if not isinstance(raw, list):
        return (), [f"{path}: must be a list of {{name, value}} or {{name, valueFrom: {{secretKeyRef: ...}}}}"]
    out: list[EnvVar] = []
    problems: list[str] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        at = f"{path}[{i}]"
        if not isinstance(item, Mapping):
            problems.append(f"{at}: must be a mapping with name and value (or valueFrom)")
            continue
        problems += [f"{at}.{k}: unknown field; allowed: name, value, valueFrom" for k in item
                     if k not in ("name", "value", "valueFrom")]  # fmt: skip
        name = item.get("name")
        problem = name_problem(name)
        if problem is not None:
            problems.append(f"{at}.name: {problem}")
        elif name in seen:
            problems.append(f"{at}.name: {name} is given twice")
        seen.add(str(name))
        value, source = item.get("value"), item.get("valueFrom")
        if value is not None and source is not None:
            problems.append(f"{at}: give value or valueFrom, not both")
        if value is not None and not isinstance(value, str):
            problems.append(f"{at}.value: must be a string, got {type(value).__name__} {value!r} (quote it)")
        secret = None
        if source is not None:
            secret, said = _secret_key_ref(source, f"{at}.valueFrom")
            problems += said
        out.append(EnvVar(str(name), value if isinstance(value, str) else "", secret))
    return tuple(out), problems


def name_problem(name: Any) -> str | None:
    """Why ``name`` cannot be a variable a run sets (None: it can)."""
    if not isinstance(name, str) or not name:
        return "is required: the variable's name"
    if not _NAME.match(name):
        return f"{name!r} is not a valid environment variable name (letters, digits, '_', '-', '.'; not a digit first)"
    if name in RESERVED:
        return f"{name} is set by the operator and may not be set here: {RESERVED[name]}"
    return None


def merged(levels: Iterable[Iterable[EnvVar]]) -> tuple[EnvVar, ...]:
    """The variables of ``levels`` (lowest first), a later level's replacing an earlier's of
    the same name in its place."""
    out: dict[str, EnvVar] = {}
    for level in levels:
        for var in level:
            out[var.name] = var
    return tuple(out.values())


def _secret_key_ref(source: Any, path: str) -> tuple[SecretKeyRef | None, list[str]]:
    if not isinstance(source, Mapping) or set(source) != {"secretKeyRef"}:
        return None, [f"{path}: must be {{secretKeyRef: {{name, key}}}} (a key of a Secret in the run's namespace)"]
    ref = source["secretKeyRef"]
    if not isinstance(ref, Mapping):
        return None, [f"{path}.secretKeyRef: must be a mapping with name and key"]
    problems = [f"{path}.secretKeyRef.{k}: unknown field; allowed: name, key" for k in ref if k not in ("name", "key")]
    problems += [f"{path}.secretKeyRef.{k}: is required (a non-empty string)" for k in ("name", "key")
                 if not isinstance(ref.get(k), str) or not ref.get(k)]  # fmt: skip
    if problems:
        return None, problems
    return SecretKeyRef(str(ref["name"]), str(ref["key"])), []
