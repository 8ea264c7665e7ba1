"""The run document: what the job program of one attempt reads (its job, catalog manifest,
table, operation and parameters, Spark settings; no credentials), and the launch spec that
carries it to a launcher."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ...api.v1alpha1.job import JobSpec
from ...api.v1alpha1.names import CATALOG_LABEL, OPERATION_LABEL
from ...api.v1alpha1.table import DEFAULT_SCHEMA, EVOLUTION_MODE
from ...model.job_params import IngestArgs
from ...model.names import same_name
from ..launchers.spec import LaunchSpec, launch_spec
from .run_context import RunContext
from .secrets import env_from_secrets
from .tick import stamp


def attempt_spec(
    spec: JobSpec, uid: str, ctx: RunContext, attempt: int, timeout_seconds: int | None, deadline: float | None = None
) -> LaunchSpec:
    """What the launcher gets for one attempt; ``timeout_seconds``: its share (``time_left``);
    ``deadline``: the run's (seconds since the epoch), past which its program commits nothing."""
    return launch_spec(
        job_name=spec.ref.name,
        namespace=spec.ref.namespace or "default",
        uid=uid,
        attempt=attempt,
        run_document=run_document(spec, uid, attempt, ctx, deadline),
        spark=ctx.spark,
        env_from_secrets=env_from_secrets(ctx.catalog) if ctx.catalog else [],
        timeout_seconds=timeout_seconds,
        labels={CATALOG_LABEL: spec.catalog, OPERATION_LABEL: spec.operation},
    )


def run_document(
    spec: JobSpec, uid: str, attempt: int, ctx: RunContext, deadline: float | None = None
) -> dict[str, Any]:
    """What the job program reads (no credentials: they come as env from Secrets); with the
    run's ``deadline``, past which the program refuses to commit."""
    spark = ctx.spark
    job: dict[str, Any] = {"name": spec.ref.name, "namespace": spec.ref.namespace, "uid": uid, "attempt": attempt}
    if deadline is not None:
        job["deadline"] = stamp(deadline)
    return {
        "job": job,
        "catalog": ctx.catalog_doc,
        "table": spec.table,
        "operation": spec.operation,
        "params": run_params(spec, ctx),
        "inProcessBelow": spark.get("inProcessBelow"),
        "spark": {"master": spark.get("master"), "conf": dict(spark.get("conf") or {})},
    }


def run_params(spec: JobSpec, ctx: RunContext) -> dict[str, Any]:
    """The job's parameters as the run gets them: an ingest into a table whose DuckLakeTable
    does not have ``evolution.mode: auto`` may only append into the columns the table has
    (``evolve: false``, whatever the DuckLakeJob says): columns it added would be drift, and
    ``onDrift: revert`` could drop them with their data."""
    params = dict(spec.params)
    if isinstance(spec.args, IngestArgs) and spec.args.evolve and ctx.table_evolution not in (None, "auto"):
        params["evolve"] = False
    return params


def table_evolution(table: str, docs: Iterable[Mapping[str, Any]]) -> str | None:
    """The ``spec.evolution.mode`` of the DuckLakeTable manifests (as the controller's index
    holds them) that declare ``table`` (``schema.name``, or a name in their ``renamedFrom``,
    matched as DuckDB matches names); None when none does. When several do, any mode but
    ``auto`` wins."""
    schema, _, name = table.partition(".")
    modes = []
    for doc in docs:
        spec = doc.get("spec") or {}
        names = [spec.get("name"), *(spec.get("renamedFrom") or [])]
        if same_name(str(spec.get("schema") or DEFAULT_SCHEMA), schema) and any(
            isinstance(n, str) and same_name(n, name) for n in names
        ):
            modes.append(str((spec.get("evolution") or {}).get("mode") or EVOLUTION_MODE.default))
    return next((m for m in modes if m != "auto"), "auto" if modes else None)
