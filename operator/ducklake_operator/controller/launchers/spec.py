"""One attempt of a DuckLakeJob, as launchers take it: a frozen ``LaunchSpec`` that
``launch_spec`` builds with every default in one place, what a launcher returns for it
(``Launched``, kept in the run's status so a restarted operator finds it again) and what it
sees when it looks (``Observed``). Pure."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...api.v1alpha1.names import API_VERSION, ATTEMPT_LABEL, JOB_KIND, JOB_LABEL
from ...model.run_env import EnvVar, read_env
from .settings import SparkDefaults

LOCAL, JOB, SPARK_APPLICATION = "Local", "Job", "SparkApplication"
# The API server, from any pod: the address the kubelet gives every container (and expands in
# its command), so a run needs no cluster DNS (kubernetes.default.svc is a DNS name)
KUBERNETES_MASTER = "k8s://https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"
LOCAL_MASTER = "local[*]"
TTL_AFTER_FINISHED = 24 * 3600  # a finished Job or SparkApplication stays a day for its logs
# CPU is requested, never limited: a pod uses what the node has spare. Modest requests let a
# driver and two executors fit on a small node; an executor still runs one task at a time.
DRIVER_CORES, DRIVER_MEMORY = "500m", "1g"
EXECUTOR_INSTANCES, EXECUTOR_CORES, EXECUTOR_MEMORY = "1", "500m", "2g"
SPARK_VERSION_ENV = "DUCKLAKE_SPARK_VERSION"  # else the PySpark installed here (the image's, by default)
# 63 (a DNS label) less "-ui-svc", the suffix of the Service the Spark Operator names after
# its application
MAX_NAME = 56
MANAGED_BY = {"app.kubernetes.io/managed-by": "ducklake-operator"}


@dataclass(frozen=True)
class Owner:
    """The DuckLakeJob every launched object belongs to (garbage-collected with it)."""

    name: str
    uid: str
    api_version: str = API_VERSION
    kind: str = JOB_KIND


@dataclass(frozen=True)
class SecretEnv:
    """An environment variable filled from a Secret's key: the only way credentials travel."""

    env: str
    secret: str
    key: str


@dataclass(frozen=True)
class Driver:
    cores: str  # CPUs as the settings say them (2, 0.5, 500m); renderers check them
    memory: str  # a JVM size: 512m, 2g


@dataclass(frozen=True)
class Executors:
    instances: str  # 0: Spark runs inside the driver (local mode), no executor pods
    cores: str  # CPUs each executor's pod requests; its task slots are the whole CPUs in it (at least 1)
    memory: str


@dataclass(frozen=True)
class LaunchSpec:
    name: str  # of every object launched for the attempt (DNS-1123, <= MAX_NAME)
    namespace: str
    owner: Owner
    attempt: int
    launcher: str  # LOCAL | JOB | SPARK_APPLICATION
    run_document: str  # JSON, exactly what the job program reads
    master: str  # the Spark master the program uses (also in the run document)
    image: str | None
    image_pull_policy: str | None  # Always | IfNotPresent | Never; None: Kubernetes' default
    service_account: str | None
    driver: Driver
    executor: Executors
    conf: tuple[tuple[str, str], ...]
    env_from_secrets: tuple[SecretEnv, ...]
    env: tuple[EnvVar, ...]  # the settings' spark.env: the programs' own variables (checked: none is reserved)
    timeout_seconds: int | None
    ttl_seconds_after_finished: int
    labels: tuple[tuple[str, str], ...]
    spark_version: str | None  # the SparkApplication's sparkVersion


@dataclass(frozen=True)
class Launched:
    """What was launched: ``kind`` is the launcher's name (the key the controller finds it
    by), ``detail`` what it needs to find the attempt again (JSON-serialisable)."""

    kind: str
    name: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Observed:
    state: str  # Pending | Running | Succeeded | Failed | Gone
    message: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
    retriable: bool = True  # a Failed attempt that another attempt could fix (an image that is not there: no)
    stop: bool = False  # a Failed attempt whose objects still run (a pod that cannot start): the controller stops it


class Launcher(Protocol):
    def available(self) -> str | None:
        """None when this launcher can be used, else why not (a sentence)."""

    def launch(self, spec: LaunchSpec) -> Launched:
        """Start the attempt, or find it when it was started already (same name)."""

    def observe(self, launched: Launched) -> Observed: ...

    def cancel(self, launched: Launched) -> None:
        """Stop the attempt (nothing when it has ended or is gone)."""

    def stopped(self, launched: Launched) -> bool:
        """Whether nothing of the attempt can still run (so it can no longer commit)."""

    def release(self, launched: Launched) -> None:
        """The run's status no longer shows the attempt running: what the launcher held for
        it (a Local program's place) is free."""

    def close(self) -> None:
        """The operator stops: what the launcher keeps for runs to come goes (the Local
        launcher's warm spare); the attempts it launched run on."""

    def leftover(self, spec: LaunchSpec) -> Launched | None:
        """What a launch of ``spec`` that never returned left behind (a first object created
        and the next refused, or one the server stored while its answer was lost), to be
        stopped as a launched attempt is; None when nothing of it is there."""


def launch_spec(
    *,
    job_name: str,
    namespace: str,
    uid: str,
    attempt: int,
    run_document: Mapping[str, Any],
    spark: Mapping[str, Any],
    env_from_secrets: Iterable[tuple[str, str, str]],
    timeout_seconds: int | None,
    labels: Mapping[str, str] | None = None,
    env: Mapping[str, str] = os.environ,
) -> LaunchSpec:
    """The attempt with every default applied: ``spark`` holds the effective settings
    (``settings.effective_spark``), whose unset fields take the operator's defaults
    (``SparkDefaults``, from its environment) and then this module's. Never raises: a setting
    that cannot be rendered is the launcher's error, when it launches."""
    defaults = SparkDefaults.from_env(env)
    launcher = str(spark.get("launcher") or defaults.launcher)
    driver, executor = dict(spark.get("driver") or {}), dict(spark.get("executor") or {})
    executors = Executors(
        instances=str(executor.get("instances", EXECUTOR_INSTANCES)),
        cores=str(executor.get("cores", EXECUTOR_CORES)),
        memory=str(executor.get("memory", EXECUTOR_MEMORY)),
    )
    master = _master(launcher, executors, spark, defaults)
    document = dict(run_document)
    document["spark"] = {**dict(document.get("spark") or {}), "master": master}
    return LaunchSpec(
        name=object_name(job_name, uid, attempt),
        namespace=namespace,
        owner=Owner(job_name, uid),
        attempt=attempt,
        launcher=launcher,
        run_document=json.dumps(document, sort_keys=True),
        master=master,
        image=spark.get("image") or defaults.image,
        image_pull_policy=spark.get("imagePullPolicy") or defaults.image_pull_policy,
        service_account=spark.get("serviceAccount") or defaults.service_account,
        driver=Driver(cores=str(driver.get("cores", DRIVER_CORES)), memory=str(driver.get("memory", DRIVER_MEMORY))),
        executor=executors,
        conf=tuple(sorted((str(k), str(v)) for k, v in dict(spark.get("conf") or {}).items())),
        env_from_secrets=tuple(SecretEnv(*entry) for entry in env_from_secrets),
        env=read_env(spark.get("env"), "spark.env")[0],  # checked where it was read (api.load, SparkDefaults)
        timeout_seconds=timeout_seconds,
        ttl_seconds_after_finished=TTL_AFTER_FINISHED,
        labels=tuple(sorted(_labels(job_name, attempt, labels or {}).items())),
        spark_version=env.get(SPARK_VERSION_ENV) or _installed_pyspark(),
    )


def _master(launcher: str, executors: Executors, spark: Mapping[str, Any], defaults: SparkDefaults) -> str:
    """The Local launcher's Spark is the operator's (local[*] unless configured); a pod's is
    the cluster, unless it asks for no executors, when Spark runs inside the pod."""
    if launcher == LOCAL:
        return str(spark.get("master") or defaults.master)
    return LOCAL_MASTER if executors.instances.strip() == "0" else KUBERNETES_MASTER


def object_name(job_name: str, uid: str, attempt: int) -> str:
    """DNS-1123 and DNS-1035 (a letter first), at most ``MAX_NAME`` characters, the same for
    the same attempt (so a launch repeated after a crash finds the first one), different
    for another DuckLakeJob of the same name (a uid fragment: its predecessor's objects
    may not be garbage-collected yet)."""
    suffix = f"-{re.sub('[^a-z0-9]', '', uid.lower())[:6] or 'x'}-{attempt}"
    base = re.sub("-+", "-", re.sub("[^a-z0-9-]", "-", job_name.lower())).strip("-") or "run"
    if not base[0].isalpha():
        base = f"dl-{base}"
    return base[: MAX_NAME - len(suffix)].rstrip("-") + suffix


_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def label_value(text: str) -> str:
    """``text`` when it is a valid label value, else a valid one that still tells it apart
    (a long DuckLakeJob or catalog name: its start and a hash)."""
    if len(text) <= 63 and _LABEL_VALUE.match(text):
        return text
    digest = hashlib.sha1(text.encode()).hexdigest()[:8]
    start = re.sub("[^A-Za-z0-9_.-]", "-", text)[:54].strip("-_.")
    return f"{start}-{digest}" if start else digest


def attempt_selector(spec: LaunchSpec) -> str:
    """The label selector of every pod of the attempt (driver and executors)."""
    labels = dict(spec.labels)
    return f"{JOB_LABEL}={labels[JOB_LABEL]},{ATTEMPT_LABEL}={labels[ATTEMPT_LABEL]}"


def _labels(job_name: str, attempt: int, extra: Mapping[str, str]) -> dict[str, str]:
    out = {k: label_value(str(v)) for k, v in extra.items()}
    out.update({**MANAGED_BY, JOB_LABEL: label_value(job_name), ATTEMPT_LABEL: str(attempt)})
    return out


def _installed_pyspark() -> str | None:
    try:
        return importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        return None
