"""One entry point for every maintenance operation: check the parameters (shared with the
manifest loader), run the job, return its JSON report. ``ducklake run-job`` and the
launched job's driver both call ``run_operation``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ducklake_operator.catalog import Catalog
from ducklake_operator.catalog.commit import DEFAULT_AUTHOR
from ducklake_operator.catalog.connect import safe_to_rerun
from ducklake_operator.errors import CommitConflict, DuckLakeError, SpecError
from ducklake_operator.model.job_params import OPERATIONS, job_keywords

from .job_run import PLAIN_RUN, JobRun
from .runtime import Runner, ran_on, run_in_process


def split_table(table: str | None, operation: str) -> tuple[str | None, str | None]:
    if table is None:
        return None, None
    if "." not in table:
        raise SpecError(f"{operation}: table {table!r} is not schema.table")
    schema, name = table.split(".", 1)
    return schema, name


REPLANS = 2  # a data-writing job whose inputs changed under it plans again this many times


def run_operation(
    catalog: Catalog,
    operation: str,
    table: str | None,
    params: Mapping[str, object],
    *,
    runner: Runner = run_in_process,
    author: str = DEFAULT_AUTHOR,
    replans: int = REPLANS,
    run: JobRun = PLAIN_RUN,
) -> dict[str, Any]:
    """Run one operation. A data-writing job refused because a concurrent writer changed
    its inputs (its files already removed) plans again from the new snapshot, up to
    ``replans`` times; the report counts the re-plans. ``run``: the launched run's identity,
    progress and in-process threshold (``job_run``). The report says where the work ran
    (``ranOn``: catalog-wide operations run in this process)."""
    for attempt in range(replans + 1):
        try:
            run.phase("planning")
            with safe_to_rerun(operation):
                result = {
                    "ranOn": ran_on(run_in_process),
                    **_run_once(catalog, operation, table, params, runner, author, run),
                }
            return {**result, "replanned": attempt} if attempt else result
        except CommitConflict:
            if attempt == replans or OPERATIONS[operation].table == "none":
                raise
    raise AssertionError("unreachable")


def _run_once(
    catalog: Catalog,
    operation: str,
    table: str | None,
    params: Mapping[str, object],
    runner: Runner,
    author: str,
    run: JobRun,
) -> dict[str, Any]:
    keywords = job_keywords(operation, params)
    op = OPERATIONS[operation]
    if not op.available:
        raise DuckLakeError(
            f"{operation} is not available yet; available: "
            + ", ".join(name for name, o in OPERATIONS.items() if o.available)
        )
    if op.table == "required" and not table:
        raise SpecError(f"{operation} needs a table (schema.table)")
    if op.table == "none" and table:
        raise SpecError(f"{operation} works on the whole catalog, not on {table}")
    schema, name = split_table(table, operation)
    if operation == "compact":
        from .compact import compact

        return compact(catalog, schema, name, author=author, runner=runner, run=run, **keywords)  # type: ignore[arg-type]
    if operation == "rewriteDeletes":
        from .rewrite_deletes import rewrite_deletes

        return rewrite_deletes(catalog, schema, name, author=author, runner=runner, run=run, **keywords)  # type: ignore[arg-type]
    if operation == "repartition":
        from .repartition import repartition

        return repartition(catalog, schema, name, author=author, runner=runner, run=run, **keywords)  # type: ignore[arg-type]
    if operation == "rewriteColumnType":
        from .rewrite_column_type import rewrite_column_type

        return rewrite_column_type(catalog, schema, name, author=author, runner=runner, run=run, **keywords)  # type: ignore[arg-type]
    if operation == "ingest":
        from .ingest import ingest

        return ingest(catalog, schema, name, author=author, runner=runner, run=run, **keywords)  # type: ignore[arg-type]
    if operation == "flushInlinedData":
        from .flush import flush_inlined_data

        return flush_inlined_data(catalog, schema, name, author=author, run=run, **keywords)
    from . import housekeeping

    if operation == "expireSnapshots":
        return housekeeping.expire(catalog, **keywords)
    if operation == "cleanupFiles":
        return housekeeping.cleanup_files(catalog, **keywords)
    return housekeeping.delete_orphan_files(catalog, **keywords)
