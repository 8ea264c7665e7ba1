"""Spark's words when it loses an executor whose pod was OOMKilled, as the job program sees them
(a Py4J error whose text holds the Java exception): the stage's abort and, inside it, the
reason ``ExecutorPodsLifecycleManager.exitReasonMessage`` gives, with the container statuses
the API server reported (``KubernetesUtils.containersDescription``)."""

from __future__ import annotations

IMAGE = "registry.example/ducklake-operator:0.1.0"

SPARK_LOST = (
    "An error occurred while calling o71.collectAndServe.\n: org.apache.spark.SparkException: Job aborted due to stage "
    "failure: Task 2 in stage 0.0 failed 4 times, most recent failure: Lost task 2.3 in stage 0.0 (TID 9) (10.88.0.14 "
    "executor 6): ExecutorLostFailure (executor 6 exited caused by one of the running tasks) Reason: \n"
    "The executor with id 6 exited with exit code 137(SIGKILL, possible container OOM).\n\n\n\n"
    "The API gave the following brief reason: N/A\nThe API gave the following message: N/A\n"
    "The API gave the following container statuses:\n\n\n\t container name: spark-kubernetes-executor\n"
    f"\t container image: {IMAGE}\n\t container state: terminated\n\t container started at: 2026-03-01T11:59:00Z\n"
    "\t container finished at: 2026-03-01T11:59:40Z\n\t exit code: 137\n\t termination reason: OOMKilled\n"
    "      \nDriver stacktrace:\n\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages"
)
