"""The objects an attempt is launched as, rendered from its ``LaunchSpec``. Pure.

Every object is owned by the DuckLakeJob (garbage-collected with it) and labelled with it.
The run document travels in a ConfigMap mounted at ``/etc/ducklake``; credentials travel as
environment variables from the catalog's Secrets (``secretKeyRef``), never as values. The
settings' ``spark.env`` is on the driver and the executors, its values as written. A
setting that cannot be rendered (a CPU amount or memory size Spark would not read, no image)
is ``LaunchFailed`` naming the field.

Nothing here needs the Spark Operator's mutating webhook: what the webhook would apply to a
SparkApplication's pods (volumes, environment from Secrets, security contexts) is in the
pods' templates (``spec.driver.template``, ``spec.executor.template``), which the Spark
Operator (v2.1.0 and later) hands to ``spark-submit`` as Spark's own pod template files.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ...errors import LaunchFailed
from ...model.run_env import POD_IP, POD_NAME, REPORT_TO_API, SPARK_LOCAL_IP, literal
from ...model.spark_resources import CPU_PATTERN, JVM_MEMORY_PATTERN
from .spec import JOB, KUBERNETES_MASTER, LaunchSpec

RUN_DIR, RUN_KEY = "/etc/ducklake", "run.json"
RUN_FILE = f"{RUN_DIR}/{RUN_KEY}"
EXECUTOR_TEMPLATE_KEY = "executor-pod.json"  # the Job launcher's executors' pod template, beside the run document
PROGRAM = "/opt/ducklake/run_job.py"  # the Dockerfile's: calls ducklake_jobs.__main__.main
PROGRAM_ARGS = ("run", "--run-file", RUN_FILE)
REPORTING = {"name": REPORT_TO_API, "value": "1"}
# the image's user (Dockerfile), as in the operator's own pod (the chart's deployment.yaml)
RUN_AS = 10001
POD_SECURITY = {
    "runAsNonRoot": True,
    "runAsUser": RUN_AS,
    "runAsGroup": RUN_AS,
    "fsGroup": RUN_AS,
    "seccompProfile": {"type": "RuntimeDefault"},
}
CONTAINER_SECURITY = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
# A PySpark pod carries Python beside the JVM: the driver's program (in-process runs work in
# it alone), an executor's Python workers, where the tasks' DuckDB and pyarrow do the work.
# Such pods get 40 % over the JVM's memory, at least 384 MiB (Spark's own rule for non-JVM
# jobs), set explicitly so that the pod's memory limit is known: JVM memory + overhead.
MEMORY_OVERHEAD_FACTOR, MEMORY_OVERHEAD_MIN_MIB = 0.4, 384
_MEMORY = re.compile(JVM_MEMORY_PATTERN, re.IGNORECASE)
_MIB_PER_UNIT = {"k": 1 / 1024, "": 1, "m": 1, "g": 1024, "t": 1024**2, "p": 1024**3}  # no unit: MiB, as Spark
_CPU = re.compile(CPU_PATTERN)
# the containers Spark's pod templates name (Spark's defaults, which the Spark Operator passes
# as spark.kubernetes.{driver,executor}.podTemplateContainerName)
DRIVER_CONTAINER, EXECUTOR_CONTAINER = "spark-kubernetes-driver", "spark-kubernetes-executor"
WORK_DIR = "/tmp"  # the pods' one writable directory (an emptyDir): the root filesystem is read-only
RUN_VOLUME = "run"
TMP_VOLUME: dict[str, Any] = {"name": "tmp", "emptyDir": {}}
TMP_MOUNT: dict[str, Any] = {"name": "tmp", "mountPath": WORK_DIR}


def owner_reference(spec: LaunchSpec) -> dict[str, Any]:
    o = spec.owner
    return {"apiVersion": o.api_version, "kind": o.kind, "name": o.name, "uid": o.uid, "controller": True,
            "blockOwnerDeletion": True}  # fmt: skip


def metadata(spec: LaunchSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "namespace": spec.namespace,
        "labels": dict(spec.labels),
        "ownerReferences": [owner_reference(spec)],
    }


def render_config_map(spec: LaunchSpec) -> dict[str, Any]:
    """The run document, mounted in the driver's pod as ``RUN_FILE``; for the Job launcher's
    executors, their pod template beside it (Spark, in the driver, reads it from there)."""
    data = {RUN_KEY: spec.run_document}
    if spec.launcher == JOB and spec.master == KUBERNETES_MASTER:
        data[EXECUTOR_TEMPLATE_KEY] = json.dumps({"apiVersion": "v1", "kind": "Pod", **executor_template(spec)})
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata(spec), "data": data}


@dataclass(frozen=True)
class Cpu:
    """A CPU setting as Kubernetes and Spark take it: what the pod requests (a quantity), and
    Spark's task slots (whole CPUs in it, at least 1)."""

    request: str
    slots: int


@dataclass(frozen=True)
class PodMemory:
    """A Spark pod's memory in MiB: the JVM's (``spark.*.memory``) and the overhead beside it."""

    jvm: int
    overhead: int

    @property
    def limit(self) -> int:
        return self.jvm + self.overhead


def cpu(text: str, name: str) -> Cpu:
    """``2``, ``1.5``, ``0.5``, ``500m``: CPUs requested; slots are the whole CPUs (at least
    one, so ``500m`` is one task slot on half a CPU)."""
    value = text.strip()
    if not _CPU.match(value):
        raise LaunchFailed(f"{name}: {text!r} is not a CPU amount, such as 2, 0.5 or 500m")
    millis = int(value[:-1]) if value.endswith("m") else round(float(value) * 1000)
    if millis < 1:
        raise LaunchFailed(f"{name}: {text!r} is no CPU at all: request at least 1m (a thousandth of a CPU)")
    request = str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"
    return Cpu(request, max(1, millis // 1000))


def pod_memory(text: str, name: str) -> PodMemory:
    """The pod memory of a Spark setting ``text`` (e.g. 2g): the JVM's and the overhead."""
    jvm = _mib(text, name)
    return PodMemory(jvm, max(int(jvm * MEMORY_OVERHEAD_FACTOR), MEMORY_OVERHEAD_MIN_MIB))


def secret_env(spec: LaunchSpec) -> list[dict[str, Any]]:
    return [
        {"name": e.env, "valueFrom": {"secretKeyRef": {"name": e.secret, "key": e.key}}} for e in spec.env_from_secrets
    ]


def user_env(spec: LaunchSpec) -> list[dict[str, Any]]:
    """The settings' ``spark.env``: a value reaches the program as written (Kubernetes'
    ``$(NAME)`` expansion escaped), a Secret's key as Kubernetes reads it."""
    return [{**e.to_json(), "value": literal(e.value)} if e.secret is None else e.to_json() for e in spec.env]


def driver_env(spec: LaunchSpec) -> list[dict[str, Any]]:
    """What the job program needs in its environment: to report to its DuckLakeJob, the
    catalog's credentials, and the settings' own variables."""
    return [REPORTING, *secret_env(spec), *user_env(spec)]


def run_volumes(spec: LaunchSpec) -> list[dict[str, Any]]:
    """The run document (the attempt's ConfigMap) and the writable /tmp."""
    return [{"name": RUN_VOLUME, "configMap": {"name": spec.name}}, TMP_VOLUME]


RUN_MOUNTS: list[dict[str, Any]] = [{"name": RUN_VOLUME, "mountPath": RUN_DIR, "readOnly": True}, TMP_MOUNT]
LOCKED_DOWN = {**CONTAINER_SECURITY, "readOnlyRootFilesystem": True}


def render_job(spec: LaunchSpec) -> dict[str, Any]:
    """A ``batch/v1`` Job whose one pod is the Spark driver (``spark-submit`` in client
    mode); its executors are pods the driver creates, owned by the driver's pod. No retries
    here (``backoffLimit: 0``): the controller retries, after asking the catalog."""
    image = _image(spec)
    driver_cpu = cpu(spec.driver.cores, "spark.driver.cores")
    pod_mib = pod_memory(spec.driver.memory, "spark.driver.memory").limit
    submit = ["spark-submit", "--master", spec.master, "--deploy-mode", "client", "--name", spec.name]
    for key, value in _job_conf(spec, image).items():
        submit += ["--conf", f"{key}={value}"]
    container: dict[str, Any] = {
        "name": "driver",
        "image": image,
        "command": [*submit, PROGRAM, *PROGRAM_ARGS],
        "workingDir": WORK_DIR,
        "env": [
            {"name": POD_NAME, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": POD_IP, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            # the image binds Spark to 127.0.0.1; executors reach this driver at its pod IP
            {"name": SPARK_LOCAL_IP, "value": f"$({POD_IP})"},
            *driver_env(spec),
        ],
        "resources": {
            "requests": {"cpu": driver_cpu.request, "memory": f"{pod_mib}Mi"},
            "limits": {"memory": f"{pod_mib}Mi"},
        },
        "securityContext": LOCKED_DOWN,
        "volumeMounts": RUN_MOUNTS,
    }
    if spec.image_pull_policy:
        container["imagePullPolicy"] = spec.image_pull_policy
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "securityContext": POD_SECURITY,
        "containers": [container],
        "volumes": run_volumes(spec),
    }
    if spec.service_account:
        pod_spec["serviceAccountName"] = spec.service_account
    job_spec: dict[str, Any] = {
        "backoffLimit": 0,
        "ttlSecondsAfterFinished": spec.ttl_seconds_after_finished,
        "template": {"metadata": {"labels": dict(spec.labels)}, "spec": pod_spec},
    }
    if spec.timeout_seconds:
        job_spec["activeDeadlineSeconds"] = spec.timeout_seconds
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata(spec), "spec": job_spec}


# The driver's Kubernetes client waits 10 s by default for a connection and for an answer:
# on a busy API server (or node) that fails the SparkContext before any task, as on a
# 2-core node running ten runs at once. A healthy server answers in milliseconds, so a
# longer wait costs nothing there; the run's conf wins. ``submission``: the Spark
# Operator's spark-submit creating a SparkApplication's driver pod.
def _client_timeouts(client: str) -> dict[str, str]:
    return {f"spark.kubernetes.{client}.{timeout}": "60000" for timeout in ("connectionTimeout", "requestTimeout")}


DRIVER_CLIENT_CONF = _client_timeouts("driver")
SUBMISSION_CLIENT_CONF = _client_timeouts("submission")


# Spark settings the launcher sets unless the settings' conf does (a setting made by hand
# before the launcher made it stays): each, with the keys that say the same thing
_UNLESS_SET = {
    "spark.kubernetes.executor.request.cores": ("spark.kubernetes.executor.request.cores",),
    "spark.executor.memoryOverhead": ("spark.executor.memoryOverhead", "spark.executor.memoryOverheadFactor"),
}


def _job_conf(spec: LaunchSpec, image: str) -> dict[str, str]:
    """The settings' ``conf``, then what this launcher decides (which wins): where the
    executors run, as what, with which resources and credentials."""
    conf = dict(spec.conf)
    conf["spark.driver.memory"] = spec.driver.memory
    if spec.master != KUBERNETES_MASTER:
        return conf  # no executors: Spark runs inside this pod
    conf = {**DRIVER_CLIENT_CONF, **conf}
    executor_cpu = cpu(spec.executor.cores, "spark.executor.cores")
    memory = pod_memory(spec.executor.memory, "spark.executor.memory")
    defaults = {
        "spark.kubernetes.executor.request.cores": executor_cpu.request,
        "spark.executor.memoryOverhead": f"{memory.overhead}m",
    }
    for key, value in defaults.items():
        if not any(k in conf for k in _UNLESS_SET[key]):
            conf[key] = value
    conf.update(
        {
            "spark.kubernetes.namespace": spec.namespace,
            "spark.kubernetes.container.image": image,
            "spark.kubernetes.driver.pod.name": f"$({POD_NAME})",  # executors owned by this pod
            "spark.driver.host": f"$({POD_IP})",
            "spark.executor.instances": str(_whole(spec.executor.instances, "spark.executor.instances", minimum=1)),
            "spark.executor.cores": str(executor_cpu.slots),
            "spark.executor.memory": f"{memory.jvm}m",
        }
    )
    if spec.image_pull_policy:
        conf["spark.kubernetes.container.image.pullPolicy"] = spec.image_pull_policy
    if spec.service_account:
        conf["spark.kubernetes.authenticate.executor.serviceAccountName"] = spec.service_account
    # the executors' pods as the SparkApplication's: credentials, /tmp, the security contexts
    conf["spark.kubernetes.executor.podTemplateFile"] = f"{RUN_DIR}/{EXECUTOR_TEMPLATE_KEY}"
    conf["spark.kubernetes.executor.podTemplateContainerName"] = EXECUTOR_CONTAINER
    for key, value in spec.labels:
        conf[f"spark.kubernetes.executor.label.{key}"] = value
    return conf


# Spark 4.2 (SPARK-55653) gives a cluster-mode driver a NetworkPolicy, created by whoever runs
# spark-submit: the Spark Operator, whose v2.5.0 chart may not create NetworkPolicies, so every
# submission failed with a 403. Left out, as a Job launcher's client-mode driver has none; a
# run's own spark.conf setting (e.g. "" once the Spark Operator may) wins.
SPARK_APPLICATION_CONF = {
    "spark.kubernetes.driver.pod.excludedFeatureSteps": "org.apache.spark.deploy.k8s.features.NetworkPolicyFeatureStep",
}


def render_spark_application(spec: LaunchSpec) -> dict[str, Any]:
    """A ``sparkoperator.k8s.io/v1beta2`` SparkApplication (the Kubeflow Spark Operator):
    the program in cluster mode, never restarted by the Spark Operator (the controller
    retries), removed ``timeToLiveSeconds`` after it ends. Its pods are shaped by their
    templates alone (see the module's docstring): the fields the webhook applies
    (``configMaps``, ``env``, ``securityContext``, ...) are not used."""
    image = _image(spec)
    if not spec.spark_version:
        raise LaunchFailed(
            "the SparkApplication needs sparkVersion, and PySpark is not installed in the operator's image: "
            "set DUCKLAKE_SPARK_VERSION on the operator"
        )
    account = {"serviceAccount": spec.service_account} if spec.service_account else {}
    driver = {
        **_spark_pod(spec.driver.cores, spec.driver.memory, "spark.driver"),
        "labels": dict(spec.labels),
        "template": pod_template(spec, DRIVER_CONTAINER, driver_env(spec), RUN_MOUNTS, run_volumes(spec)),
        **account,
    }
    executor: dict[str, Any] = {
        **_spark_pod(spec.executor.cores, spec.executor.memory, "spark.executor"),
        "labels": dict(spec.labels),
        "template": executor_template(spec),
        **account,
    }
    instances = _whole(spec.executor.instances, "spark.executor.instances", minimum=0)
    if instances:  # none: the program runs Spark inside the driver (the run document's master)
        executor["instances"] = instances
    app_spec: dict[str, Any] = {
        "type": "Python",
        "pythonVersion": "3",
        "mode": "cluster",
        "image": image,
        "mainApplicationFile": f"local://{PROGRAM}",
        "arguments": list(PROGRAM_ARGS),
        "sparkVersion": spec.spark_version,
        "restartPolicy": {"type": "Never"},
        "timeToLiveSeconds": spec.ttl_seconds_after_finished,
        "driver": driver,
        "executor": executor,
    }
    if spec.image_pull_policy:
        app_spec["imagePullPolicy"] = spec.image_pull_policy  # spark.kubernetes.container.image.pullPolicy
    app_spec["sparkConf"] = {
        **SPARK_APPLICATION_CONF,
        **DRIVER_CLIENT_CONF,
        **SUBMISSION_CLIENT_CONF,
        **dict(spec.conf),
    }
    return {
        "apiVersion": "sparkoperator.k8s.io/v1beta2",
        "kind": "SparkApplication",
        "metadata": metadata(spec),
        "spec": app_spec,
    }


def _spark_pod(cores: str, memory: str, prefix: str) -> dict[str, Any]:
    """A SparkApplication's driver or executor resources: ``cores`` (Spark's task slots, a
    whole number) and ``coreRequest`` (what the pod requests), the JVM's memory and the
    overhead beside it."""
    cpus, sizes = cpu(cores, f"{prefix}.cores"), pod_memory(memory, f"{prefix}.memory")
    return {"cores": cpus.slots, "coreRequest": cpus.request, "memory": memory, "memoryOverhead": f"{sizes.overhead}m"}


def executor_template(spec: LaunchSpec) -> dict[str, Any]:
    """The executors' pod template, for either launcher: the credentials (tasks read the lake
    too), the settings' variables, a writable /tmp, the security contexts."""
    return pod_template(spec, EXECUTOR_CONTAINER, [*secret_env(spec), *user_env(spec)], [TMP_MOUNT], [TMP_VOLUME])


def pod_template(
    spec: LaunchSpec,
    container: str,
    env: list[dict[str, Any]],
    mounts: list[dict[str, Any]],
    volumes: list[dict[str, Any]],
) -> dict[str, Any]:
    """A pod template as Spark takes it (``spark.kubernetes.*.podTemplateFile``): Spark builds
    its pod from it, keeping its volumes, security contexts and the named container's
    environment and mounts, and setting image, command, resources and its own volumes."""
    return {
        "metadata": {"labels": dict(spec.labels)},
        "spec": {
            "securityContext": POD_SECURITY,
            "volumes": volumes,
            "containers": [
                {
                    "name": container,
                    "workingDir": WORK_DIR,
                    "env": env,
                    "volumeMounts": mounts,
                    "securityContext": LOCKED_DOWN,
                }
            ],  # fmt: skip
        },
    }


def _image(spec: LaunchSpec) -> str:
    if not spec.image:
        raise LaunchFailed(
            f"no image to run the job in: set spark.image, or DUCKLAKE_JOB_IMAGE on the operator "
            f"(the chart sets it to the operator's image), for launcher {spec.launcher}"
        )
    return spec.image


def _whole(text: str, name: str, minimum: int) -> int:
    if not text.strip().isdigit() or int(text) < minimum:
        raise LaunchFailed(f"{name}: {text!r} is not a whole number of at least {minimum}")
    return int(text)


def _mib(text: str, name: str) -> int:
    """A JVM memory size (Spark's: 512m, 2g, 2gb; no unit is MiB) in MiB."""
    match = _MEMORY.match(text.strip())
    mib = int(int(match.group(1)) * _MIB_PER_UNIT[match.group(2).lower()]) if match else 0
    if mib < 1:
        raise LaunchFailed(f"{name}: {text!r} is not a memory size Spark reads, such as 512m or 2g")
    return mib
