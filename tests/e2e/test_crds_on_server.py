"""The CRDs on the real API server: every example accepted, invalid manifests rejected by the
server itself (OpenAPI schema, enums, patterns, CEL rules, immutability on update), and the
examples parsed by the operator too."""

from __future__ import annotations

import copy
import glob
import os
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from ducklake_operator.api.crd import SCHEMA_ANNOTATION, crd_name
from ducklake_operator.api.load import parse_manifest
from ducklake_operator.controller import crds
from support.helm import ROOT
from support.manifests import API
from support.operator_process import wait_for


def example_documents() -> list[tuple[str, dict[str, Any]]]:
    docs = []
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "**", "*.yaml"), recursive=True)):
        with open(path, encoding="utf-8") as fh:
            docs += [(os.path.relpath(path, ROOT), d) for d in yaml.safe_load_all(fh) if d]
    return docs


def example(kind: str) -> dict[str, Any]:
    return copy.deepcopy(next(d for _, d in example_documents() if d["kind"] == kind))


def test_every_example_is_accepted(cluster, chart, kube) -> None:
    for source, doc in example_documents():
        out = kube.kubectl("apply", "--server-side", "--dry-run=server", "-f", os.path.join(ROOT, source))
        assert "(server dry run)" in out, source
        parse_manifest(doc, source)  # and the operator reads it
    assert {d["kind"] for _, d in example_documents()} == {e["kind"] for e in crds.KINDS}


def catalog(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "DuckLakeCatalog",
        "metadata": {"name": "c"},
        "spec": {"metadata": {"sqlite": {"path": "/data/c.sqlite"}}, "dataPath": "/data/lake/", **spec},
    }


def with_spec(kind: str, **changes: Any) -> dict[str, Any]:
    doc = example(kind)
    doc["spec"].update(changes)
    return doc


INVALID: list[tuple[str, Callable[[], dict[str, Any]], str]] = [
    ("dataPath without a trailing slash", lambda: catalog(dataPath="/data/lake"), "should match"),
    ("both backends", lambda: catalog(metadata={"sqlite": {"path": "/x"}, "postgres": {"host": "h", "database": "d"}}),
     "exactly one of postgres or sqlite"),
    ("no backend", lambda: catalog(metadata={}), "exactly one of postgres or sqlite"),
    ("unknown deletionPolicy", lambda: catalog(deletionPolicy="Keep"), "Unsupported value"),
    ("bad sslMode", lambda: catalog(metadata={"postgres": {"host": "h", "database": "d", "sslMode": "maybe"}}),
     "Unsupported value"),
    ("port out of range", lambda: catalog(metadata={"postgres": {"host": "h", "database": "d", "port": 70000}}),
     "should be less than or equal to 65535"),
    ("table without columns", lambda: {**example("DuckLakeTable"), "spec": {"catalogRef": {"name": "lake"},
                                                                           "name": "t"}}, "columns: Required"),
    ("column name with a newline", lambda: with_spec("DuckLakeTable", columns=[{"name": "a\nb", "type": "int32"}]),
     "should match"),
    ("unknown transform", lambda: with_spec("DuckLakeTable", partitionBy=[{"column": "id", "transform": "week"}]),
     "Unsupported value"),
    ("unknown typeChanges", lambda: with_spec("DuckLakeTable", evolution={"typeChanges": "cast"}), "Unsupported value"),
    ("approvedPlan not a hash", lambda: with_spec("DuckLakeTable", evolution={"approvedPlan": "yes"}), "should match"),
    ("unknown job operation", lambda: with_spec("DuckLakeJob", operation="vacuum"), "Unsupported value"),
    ("a column tag (DuckDB cannot read them)", lambda: with_spec("DuckLakeTable", columns=[
        {"name": "id", "type": "int64", "tags": {"pii": "false"}}]), "must have at most 0 items"),  # fmt: skip
    ("executor memory Spark would not read", lambda: with_spec("DuckLakeJob", spark={"executor": {"memory": "4 gigs"}}),
     "should match"),  # fmt: skip
    ("negative retries", lambda: with_spec("DuckLakeJob", retries=-1), "should be greater than or equal to 0"),
    # spark.env: the run's credentials come from its catalog's Secrets only
    ("a credential in spark.env", lambda: with_spec("DuckLakeJob", spark={"env": [
        {"name": "AWS_SECRET_ACCESS_KEY", "value": "x"}]}), "the operator sets this variable itself"),
    ("a variable twice in spark.env", lambda: with_spec("DuckLakeMaintenancePolicy", spark={"env": [
        {"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}), "duplicate entries for key [name=\"A\"]"),
    ("value and valueFrom", lambda: with_spec("DuckLakeJob", spark={"env": [{"name": "A", "value": "1", "valueFrom": {
        "secretKeyRef": {"name": "s", "key": "k"}}}]}), "give value or valueFrom, not both"),
    ("a variable name with a space", lambda: with_spec("DuckLakeJob", spark={"env": [{"name": "A B", "value": "1"}]}),
     "should match"),
    ("selector and tables", lambda: with_spec("DuckLakeMaintenancePolicy", tables=["a.b"],
                                              tableSelector={"matchLabels": {"a": "b"}}), "not both"),
    ("unknown launcher", lambda: with_spec("DuckLakeMaintenancePolicy", spark={"launcher": "Pod"}), "Unsupported value"),
    ("window not HH:MM", lambda: with_spec("DuckLakeMaintenancePolicy", window={"start": "1am"}), "should match"),
    ("window at 24:00", lambda: with_spec("DuckLakeMaintenancePolicy", window={"start": "24:00"}), "should match"),
    # maintenance settings, from their one definition (model/maintenance_params.py)
    ("a one-file merge", lambda: with_spec("DuckLakeMaintenancePolicy",
                                           compaction={"schedule": "0 2 * * *", "minInputFiles": 1}),
     "should be greater than or equal to 2"),
    ("a size that is not one", lambda: with_spec("DuckLakeMaintenancePolicy",
                                                 compaction={"schedule": "0 2 * * *", "targetFileSize": "big"}),
     "should match"),
    ("a duration that is not one", lambda: with_spec("DuckLakeMaintenancePolicy",
                                                     fileCleanup={"schedule": "0 5 * * 0", "olderThan": "a week"}),
     "should match"),
    ("expiry with neither bound", lambda: with_spec("DuckLakeMaintenancePolicy",
                                                    snapshotExpiry={"schedule": "0 5 * * 0"}),
     "needs olderThan and/or retainLast"),
    ("negative historyLimit", lambda: with_spec("DuckLakeMaintenancePolicy", historyLimit=-1),
     "should be greater than or equal to 0"),
]  # fmt: skip


@pytest.mark.parametrize("name, make, message", INVALID, ids=[n for n, _, _ in INVALID])
def test_invalid_manifests_are_rejected_by_the_server(cluster, chart, kube, name: str, make, message: str) -> None:
    out = kube.cluster.kubectl_result(
        "-n", kube.namespace, "apply", "--server-side", "--dry-run=server", "-f", "-",
        input=yaml.safe_dump(make()),
    )  # fmt: skip
    assert out.returncode != 0, f"{name}: accepted"
    assert message in out.stderr, out.stderr


def test_sizes_and_durations_the_loader_reads_are_accepted_by_the_server(cluster, chart, kube) -> None:
    for size, duration in ((536870912, "2 weeks"), ("1.5 GiB", "12H"), ("512mb", "30 minutes")):
        doc = with_spec(
            "DuckLakeMaintenancePolicy",
            compaction={"schedule": "0 2 * * *", "targetFileSize": size, "smallFileThreshold": size},
            fileCleanup={"schedule": "0 5 * * 0", "olderThan": duration},
        )
        parse_manifest(doc)  # the operator reads it
        out = kube.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-", input=yaml.safe_dump(doc))
        assert "(server dry run)" in out, (size, duration)


@pytest.mark.parametrize(
    "kind, change, message",
    [
        ("DuckLakeTable", {"catalogRef": {"name": "other"}}, "catalogRef is immutable"),
        ("DuckLakeSchema", {"catalogRef": {"name": "other"}}, "catalogRef is immutable"),
        ("DuckLakeJob", {"retries": 5}, "immutable"),
    ],
)
def test_immutable_fields_are_refused_on_update(cluster, chart, kube, kind: str, change, message: str) -> None:
    doc = example(kind)
    kube.apply(doc)
    changed = copy.deepcopy(doc)
    changed["spec"].update(change)
    out = kube.cluster.kubectl_result("-n", kube.namespace, "apply", "-f", "-", input=yaml.safe_dump(changed))
    assert out.returncode != 0 and message in out.stderr, out.stderr
    kube.apply(doc)  # the unchanged object is still accepted


def test_a_job_may_be_cancelled_but_not_changed_or_uncancelled(cluster, chart, kube) -> None:
    doc = example("DuckLakeJob")
    kube.apply(doc)
    kube.kubectl("patch", "dlj", doc["metadata"]["name"], "--type=merge", "-p", '{"spec": {"cancel": true}}')
    assert kube.get("dlj", doc["metadata"]["name"])["spec"]["cancel"] is True
    out = kube.cluster.kubectl_result("-n", kube.namespace, "patch", "dlj", doc["metadata"]["name"], "--type=merge",
                                      "-p", '{"spec": {"cancel": false}}')  # fmt: skip
    assert out.returncode != 0 and "stays cancelled" in out.stderr
    out = kube.cluster.kubectl_result("-n", kube.namespace, "patch", "dlj", doc["metadata"]["name"], "--type=merge",
                                      "-p", '{"spec": {"spark": {"launcher": "Local"}}}')  # fmt: skip
    assert out.returncode != 0 and "immutable but for spec.cancel" in out.stderr


def test_the_operator_says_which_crd_is_not_its_own(kube, operator) -> None:
    """Helm installs a chart's CRDs with its first install only. At its start the operator
    compares each CRD on the server with its own (the ``ducklake.dev/schema`` digest): the
    chart's pass; one without the digest (as a CRD from before it) is named in the log with
    what to do, and ``ducklake_crd_current`` says 0 for it."""
    names = [crd_name(e["declaration"]) for e in crds.KINDS]
    wait_for("every CRD compared", lambda: [operator.metric_or_zero("ducklake_crd_current", crd=n) for n in names]
             == [1] * len(names))  # fmt: skip
    assert "is not this operator's" not in operator.log()
    jobs = "ducklakejobs.ducklake.dev"
    digest = kube.cluster.kubectl("get", "crd", jobs, "-o", "jsonpath={.metadata.annotations.ducklake\\.dev/schema}")
    ours = {crd_name(e["declaration"]): crds.crd(e)["metadata"]["annotations"][SCHEMA_ANNOTATION] for e in crds.KINDS}
    assert digest == ours[jobs]
    kube.cluster.kubectl("annotate", "crd", jobs, f"{SCHEMA_ANNOTATION}-")
    try:
        operator.restart()
        said = wait_for("the CRD named", lambda: next((
            line for line in operator.log().splitlines() if f"CustomResourceDefinition {jobs} is not" in line), None))  # fmt: skip
        assert f"(its {SCHEMA_ANNOTATION}: none, this operator's: {digest}): the API server drops the fields" in said
        assert "kubectl apply --server-side -f crds/" in said
        wait_for("the gauges", lambda: [operator.metric("ducklake_crd_current", crd=n) for n in names]
                 == [n != jobs for n in names])  # fmt: skip
    finally:
        kube.cluster.kubectl("annotate", "crd", jobs, f"{SCHEMA_ANNOTATION}={digest}", "--overwrite")
        operator.restart()
