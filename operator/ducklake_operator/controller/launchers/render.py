"""The objects an attempt is launched as, rendered from its ``LaunchSpec``. Pure.

Every object is owned by the DuckLakeJob (garbage-collected with it) and labelled with it.
The run document travels in a ConfigMap mounted at ``/etc/ducklake``; credentials travel as
environment variables from the catalog's Secrets (``secretKeyRef``), never as values. A
setting that cannot be rendered (cores that are not a whole number, a memory size Spark
would not read, no image) is ``LaunchFailed`` naming the field.
"""

from __future__ import annotations

import re
from typing import Any

from ...errors import LaunchFailed
from .spec import KUBERNETES_MASTER, LaunchSpec

RUN_DIR, RUN_KEY = "/etc/ducklake", "run.json"
RUN_FILE = f"{RUN_DIR}/{RUN_KEY}"
PROGRAM = "/opt/ducklake/run_job.py"  # the Dockerfile's: calls ducklake_jobs.__main__.main
PROGRAM_ARGS = ("run", "--run-file", RUN_FILE)
REPORT_TO_API = {"name": "DUCKLAKE_REPORT_TO_API", "value": "1"}
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
# PySpark's driver pod carries a Python process beside the JVM (and in-process runs work in
# it alone): Spark sizes such pods with 40 % over the JVM's memory, at least 384 MiB
MEMORY_OVERHEAD_FACTOR, MEMORY_OVERHEAD_MIN_MIB = 0.4, 384
JVM_MEMORY_PATTERN = r"^(\d+)([kmgtp]?)b?$"  # Spark's sizes (512m, 2g, 2gb); also the CRDs' pattern
_MEMORY = re.compile(JVM_MEMORY_PATTERN, re.IGNORECASE)
_MIB_PER_UNIT = {"k": 1 / 1024, "": 1, "m": 1, "g": 1024, "t": 1024**2, "p": 1024**3}  # no unit: MiB, as Spark


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
    """The run document, mounted in the pods as ``RUN_FILE``."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata(spec), "data": {RUN_KEY: spec.run_document}}


def secret_env(spec: LaunchSpec) -> list[dict[str, Any]]:
    return [
        {"name": e.env, "valueFrom": {"secretKeyRef": {"name": e.secret, "key": e.key}}} for e in spec.env_from_secrets
    ]


def render_job(spec: LaunchSpec) -> dict[str, Any]:
    """A ``batch/v1`` Job whose one pod is the Spark driver (``spark-submit`` in client
    mode); its executors are pods the driver creates, owned by the driver's pod. No retries
    here (``backoffLimit: 0``): the controller retries, after asking the catalog."""
    image = _image(spec)
    driver_cores = _whole(spec.driver.cores, "spark.driver.cores", minimum=1)
    driver_mib = _mib(spec.driver.memory, "spark.driver.memory")
    pod_mib = driver_mib + max(int(driver_mib * MEMORY_OVERHEAD_FACTOR), MEMORY_OVERHEAD_MIN_MIB)
    submit = ["spark-submit", "--master", spec.master, "--deploy-mode", "client", "--name", spec.name]
    for key, value in _job_conf(spec, image).items():
        submit += ["--conf", f"{key}={value}"]
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "securityContext": POD_SECURITY,
        "containers": [
            {
                "name": "driver",
                "image": image,
                "command": [*submit, PROGRAM, *PROGRAM_ARGS],
                "workingDir": "/tmp",
                "env": [
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    # the image binds Spark to 127.0.0.1; executors reach this driver at its pod IP
                    {"name": "SPARK_LOCAL_IP", "value": "$(POD_IP)"},
                    REPORT_TO_API,
                    *secret_env(spec),
                ],
                "resources": {
                    "requests": {"cpu": str(driver_cores), "memory": f"{pod_mib}Mi"},
                    "limits": {"memory": f"{pod_mib}Mi"},
                },
                "securityContext": {**CONTAINER_SECURITY, "readOnlyRootFilesystem": True},
                "volumeMounts": [
                    {"name": "run", "mountPath": RUN_DIR, "readOnly": True},
                    {"name": "tmp", "mountPath": "/tmp"},
                ],
            }
        ],
        "volumes": [{"name": "run", "configMap": {"name": spec.name}}, {"name": "tmp", "emptyDir": {}}],
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


def _job_conf(spec: LaunchSpec, image: str) -> dict[str, str]:
    """The settings' ``conf``, then what this launcher decides (which wins): where the
    executors run, as what, with which resources and credentials."""
    conf = dict(spec.conf)
    conf["spark.driver.memory"] = spec.driver.memory
    if spec.master != KUBERNETES_MASTER:
        return conf  # no executors: Spark runs inside this pod
    conf.update(
        {
            "spark.kubernetes.namespace": spec.namespace,
            "spark.kubernetes.container.image": image,
            "spark.kubernetes.driver.pod.name": "$(POD_NAME)",  # executors owned by this pod
            "spark.driver.host": "$(POD_IP)",
            "spark.executor.instances": str(_whole(spec.executor.instances, "spark.executor.instances", minimum=1)),
            "spark.executor.cores": str(_whole(spec.executor.cores, "spark.executor.cores", minimum=1)),
            "spark.executor.memory": f"{_mib(spec.executor.memory, 'spark.executor.memory')}m",
        }
    )
    if spec.service_account:
        conf["spark.kubernetes.authenticate.executor.serviceAccountName"] = spec.service_account
    for e in spec.env_from_secrets:  # tasks on executors read the lake too
        conf[f"spark.kubernetes.executor.secretKeyRef.{e.env}"] = f"{e.secret}:{e.key}"
    for key, value in spec.labels:
        conf[f"spark.kubernetes.executor.label.{key}"] = value
    return conf


def render_spark_application(spec: LaunchSpec) -> dict[str, Any]:
    """A ``sparkoperator.k8s.io/v1beta2`` SparkApplication (the Kubeflow Spark Operator):
    the program in cluster mode, never restarted by the Spark Operator (the controller
    retries), removed ``timeToLiveSeconds`` after it ends."""
    image = _image(spec)
    if not spec.spark_version:
        raise LaunchFailed(
            "the SparkApplication needs sparkVersion, and PySpark is not installed in the operator's image: "
            "set DUCKLAKE_SPARK_VERSION on the operator"
        )
    _mib(spec.driver.memory, "spark.driver.memory")  # checked; the Spark Operator sizes the pods
    security = {"podSecurityContext": POD_SECURITY, "securityContext": CONTAINER_SECURITY}
    account = {"serviceAccount": spec.service_account} if spec.service_account else {}
    driver = {
        "cores": _whole(spec.driver.cores, "spark.driver.cores", minimum=1),
        "memory": spec.driver.memory,
        "labels": dict(spec.labels),
        "env": [REPORT_TO_API, *secret_env(spec)],
        "configMaps": [{"name": spec.name, "path": RUN_DIR}],
        **account,
        **security,
    }
    executor: dict[str, Any] = {
        "cores": _whole(spec.executor.cores, "spark.executor.cores", minimum=1),
        "memory": spec.executor.memory,
        "labels": dict(spec.labels),
        "env": secret_env(spec),  # tasks on executors read the lake too
        **account,
        **security,
    }
    _mib(spec.executor.memory, "spark.executor.memory")
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
    if spec.conf:
        app_spec["sparkConf"] = dict(spec.conf)
    return {
        "apiVersion": "sparkoperator.k8s.io/v1beta2",
        "kind": "SparkApplication",
        "metadata": metadata(spec),
        "spec": app_spec,
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
