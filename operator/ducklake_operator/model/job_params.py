"""The maintenance operations and the parameters each takes (pure; the parameters themselves
are defined in ``maintenance_params``): shared by the manifest loader (a DuckLakeJob's
``params`` are checked at apply time), ``ducklake run-job`` and the job entry points (which
turn them into keyword arguments)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any

from ..errors import SpecError
from .maintenance_params import (
    APPLY_DELETES,
    CLEANUP_OLDER_THAN,
    COLUMN,
    COLUMNS,
    DELETE_THRESHOLD,
    DRY_RUN,
    EXPIRE_OLDER_THAN,
    INGEST_EVOLVE,
    INGEST_FORMAT,
    INGEST_PATH,
    MANIFEST,
    MAX_BYTES_PER_COMMIT,
    MAX_FILES_PER_RUN,
    MIN_INPUT_FILES,
    NEW_TYPE,
    ON_BAD_RECORD,
    ON_CAST_ERROR,
    ORPHAN_OLDER_THAN,
    REINGEST,
    RETAIN_LAST,
    SMALL_FILE_THRESHOLD,
    SORT,
    TARGET_FILE_SIZE,
    VERSIONS,
    Param,
)


@dataclass(frozen=True)
class Operation:
    name: str
    table: str  # "required", "optional" or "none"
    params: Mapping[str, Param]  # every one has a keyword
    available: bool = True


OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        Operation(
            "compact",
            "required",
            {
                "targetFileSize": TARGET_FILE_SIZE,
                "smallFileThreshold": SMALL_FILE_THRESHOLD,
                "minInputFiles": MIN_INPUT_FILES,
                "maxFilesPerRun": MAX_FILES_PER_RUN,
                "applyDeletes": APPLY_DELETES,
                "sort": SORT,
                "dryRun": DRY_RUN,
            },
        ),
        Operation("rewriteDeletes", "required", {"deleteThreshold": DELETE_THRESHOLD, "dryRun": DRY_RUN}),
        Operation("flushInlinedData", "optional", {"dryRun": DRY_RUN}),
        Operation(
            "expireSnapshots",
            "none",
            {"olderThan": EXPIRE_OLDER_THAN, "retainLast": RETAIN_LAST, "versions": VERSIONS, "dryRun": DRY_RUN},
        ),
        Operation("cleanupFiles", "none", {"olderThan": CLEANUP_OLDER_THAN, "dryRun": DRY_RUN}),
        Operation("deleteOrphanFiles", "none", {"olderThan": ORPHAN_OLDER_THAN, "dryRun": DRY_RUN}),
        Operation(
            "repartition",
            "required",
            {"maxBytesPerCommit": MAX_BYTES_PER_COMMIT, "targetFileSize": TARGET_FILE_SIZE, "dryRun": DRY_RUN},
        ),
        Operation(
            "rewriteColumnType",
            "required",
            {
                "column": COLUMN,
                "type": NEW_TYPE,
                "columns": COLUMNS,
                "onCastError": ON_CAST_ERROR,
                "manifest": MANIFEST,
                "dryRun": DRY_RUN,
            },
        ),
        Operation(
            "ingest",
            "required",
            {
                "path": INGEST_PATH,
                "format": INGEST_FORMAT,
                "onBadRecord": ON_BAD_RECORD,
                "reingest": REINGEST,
                "evolve": INGEST_EVOLVE,
                "dryRun": DRY_RUN,
            },
        ),
    )
}


def params_help() -> list[tuple[str, list[tuple[str, str]]]]:
    """Every available operation with its parameters and what each does (for the CRD's
    description and the CLI's help)."""
    return [
        (name, [(key, p.describe()) for key, p in op.params.items()]) for name, op in OPERATIONS.items() if op.available
    ]


def job_keywords(operation: str, params: Mapping[str, object], where: str = "params") -> dict[str, Any]:
    """Check a job's parameters and return the job function's keyword arguments; every
    problem is reported with its field path."""
    op = OPERATIONS.get(operation)
    if op is None:
        raise SpecError(f"unknown operation {operation!r}; one of {', '.join(OPERATIONS)}")
    problems: list[str] = []
    out: dict[str, Any] = {}
    for key, value in params.items():
        param = op.params.get(key)
        if param is None:
            near = get_close_matches(key, list(op.params), n=1)
            allowed = ", ".join(op.params) or "none"
            problems.append(
                f"{where}.{key}: not a parameter of {operation}"
                + (f" (did you mean {near[0]}?)" if near else f"; allowed: {allowed}")
            )
            continue
        assert param.keyword is not None, f"{operation}.{key} has no keyword"  # every operation's parameter has one
        try:
            out[param.keyword] = param.parse(value)
        except ValueError as exc:
            problems.append(f"{where}.{key}: {exc}")
    problems += [f"{where}.{key}: is required" for key, p in op.params.items() if p.required and key not in params]
    if operation == "expireSnapshots" and "versions" in params and ("olderThan" in params or "retainLast" in params):
        problems.append(f"{where}: versions cannot be combined with olderThan or retainLast")
    if operation == "rewriteColumnType":
        if "columns" in params and ("column" in params or "type" in params):
            problems.append(f"{where}: columns cannot be combined with column and type")
        elif "columns" not in params:
            problems += [f"{where}.{key}: is required (or columns)" for key in ("column", "type") if key not in params]
    if problems:
        raise SpecError(problems)
    return out
