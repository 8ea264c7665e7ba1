"""One template runs every maintenance operation: check its scope, then the operation's
plugin (inputs -> plan -> dry-run report, or runner -> write -> commit -> report), planning
again when a concurrent writer changed its inputs, and say in the report where the work ran.
``ducklake run-job`` and the launched job's driver both call ``run_operation``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ducklake_operator.api.load import parse_args
from ducklake_operator.catalog import Catalog
from ducklake_operator.catalog.commit import DEFAULT_AUTHOR
from ducklake_operator.catalog.connect import safe_to_rerun
from ducklake_operator.errors import CommitConflict, SpecError

from .job_timings import PhaseClock, running
from .operation_plugin import JobContext, OperationPlugin
from .operation_registry import plugin
from .run_context import PLAIN_RUN, REPLANS, JobRun
from .task_runners import Runner, ran_on, run_in_process


def split_table(table: str | None, operation: str) -> tuple[str | None, str | None]:
    if table is None:
        return None, None
    if "." not in table:
        raise SpecError(f"{operation}: table {table!r} is not schema.table")
    schema, name = table.split(".", 1)
    return schema, name


def run_operation(
    catalog: Catalog,
    operation: str,
    table: str | None,
    params: Mapping[str, object] | object,
    *,
    runner: Runner = run_in_process,
    author: str = DEFAULT_AUTHOR,
    replans: int = REPLANS,
    run: JobRun = PLAIN_RUN,
    clock: PhaseClock | None = None,
) -> dict[str, Any]:
    """Run one operation. ``params``: its parameters as the API has them, or the typed
    arguments ``model.job_params.parse_args`` made of them
    (parsed once per process). A data-writing job refused because a concurrent
    writer changed its inputs (its files already removed) plans again from the new snapshot,
    up to ``replans`` times; the report counts the re-plans. ``run``: the launched run's
    identity, progress and in-process threshold (``run_context``). The report says where the
    work ran (``ranOn``: catalog-wide operations run in this process), and where its time
    went (``timings``, seconds per phase, from ``clock``'s start: a launched run's includes
    opening its catalog; ``seconds``: the whole run, from the same start)."""
    clock = clock or PhaseClock()
    with running(clock):
        result = _attempts(catalog, operation, table, params, runner, author, replans, run)
    return {**result, "timings": clock.timings(), "seconds": clock.seconds()}


def _attempts(
    catalog: Catalog,
    operation: str,
    table: str | None,
    params: Mapping[str, object] | object,
    runner: Runner,
    author: str,
    replans: int,
    run: JobRun,
) -> dict[str, Any]:
    args = parse_args(operation, params) if isinstance(params, Mapping) else params
    found = plugin(operation)
    schema, name = _scope(found, table)
    job = JobContext(catalog, schema, name, author=author, runner=runner, run=run)
    for attempt in range(replans + 1):
        try:
            run.phase("planning")
            with safe_to_rerun(operation):
                result = {"ranOn": ran_on(run_in_process), **found.job(job, args)}
            return {**result, "replanned": attempt} if attempt else result
        except CommitConflict:
            if attempt == replans or found.operation.table == "none":
                raise
    raise AssertionError("unreachable")


def _scope(found: OperationPlugin[Any], table: str | None) -> tuple[str | None, str | None]:
    """The run's schema and table, as the operation's scope allows."""
    operation, scope = found.name, found.operation.table
    if scope == "required" and not table:
        raise SpecError(f"{operation} needs a table (schema.table)")
    if scope == "none" and table:
        raise SpecError(f"{operation} works on the whole catalog, not on {table}")
    return split_table(table, operation)
