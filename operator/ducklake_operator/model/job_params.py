"""The maintenance operations and their parameters (pure): one definition shared by the
manifest loader (a DuckLakeJob's ``params`` are checked at apply time) and the job entry
points (which turn them into keyword arguments)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any

from ..errors import SpecError
from .durations import parse_duration
from .options import parse_size


def _positive_int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{value!r} is not a positive integer")
    return value


def _fraction(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"{value!r} is not a fraction between 0 and 1")
    return float(value)


def _duration(value: object) -> str:
    parse_duration(str(value))
    return str(value)


def _boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{value!r} is not true or false")
    return value


def _snapshot_ids(value: object) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        raise ValueError(f"{value!r} is not a list of snapshot ids")
    return list(value)


@dataclass(frozen=True)
class Param:
    keyword: str  # the job function's keyword argument
    parse: Callable[[object], Any]
    help: str


@dataclass(frozen=True)
class Operation:
    name: str
    table: str  # "required", "optional" or "none"
    params: Mapping[str, Param]
    available: bool = True


DRY_RUN = Param("dry_run", _boolean, "list what would change; change nothing")
OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        Operation(
            "compact",
            "required",
            {
                "targetFileSize": Param(
                    "target_file_size",
                    parse_size,
                    "merge into files of about this size (default: the target_file_size option, else 512MiB)",
                ),
                "smallFileThreshold": Param(
                    "small_file_threshold",
                    parse_size,
                    "only files smaller than this are merged (default: the target size)",
                ),
                "minInputFiles": Param(
                    "min_input_files", _positive_int, "a group needs at least this many files (default 2)"
                ),
                "maxFilesPerRun": Param(
                    "max_groups", _positive_int, "at most this many output files per run (DuckDB's max_compacted_files)"
                ),
                "applyDeletes": Param(
                    "apply_deletes",
                    _boolean,
                    "merge files that have deletes too (default true): rows deleted "
                    "before the oldest snapshot are dropped, later deletes carried over in a delete file; false "
                    "leaves such files alone, as DuckDB's merge_adjacent_files does",
                ),
                "sort": Param(
                    "sort",
                    _boolean,
                    "write merged files in the table's sort order when it has one (default "
                    "true, as DuckDB does); false keeps row-id order",
                ),
                "dryRun": DRY_RUN,
            },
        ),
        Operation(
            "rewriteDeletes",
            "required",
            {
                "deleteThreshold": Param(
                    "delete_threshold",
                    _fraction,
                    "rewrite files with at least this fraction of rows "
                    "deleted (default: the rewrite_delete_threshold option, else 0.95)",
                ),
                "dryRun": DRY_RUN,
            },
        ),
        Operation("flushInlinedData", "optional", {"dryRun": DRY_RUN}),
        Operation(
            "expireSnapshots",
            "none",
            {
                "olderThan": Param("older_than", _duration, "expire snapshots older than this (e.g. 7d)"),
                "retainLast": Param("retain_last", _positive_int, "always keep this many newest snapshots"),
                "versions": Param("versions", _snapshot_ids, "expire exactly these snapshot ids"),
                "dryRun": DRY_RUN,
            },
        ),
        Operation(
            "cleanupFiles",
            "none",
            {
                "olderThan": Param("older_than", _duration, "delete files scheduled longer ago than this (default 3d)"),
                "dryRun": DRY_RUN,
            },
        ),
        Operation(
            "deleteOrphanFiles",
            "none",
            {
                "olderThan": Param("older_than", _duration, "delete unreferenced files older than this (default 3d)"),
                "dryRun": DRY_RUN,
            },
        ),
        Operation("repartition", "required", {}, available=False),
        Operation("rewriteColumnType", "required", {}, available=False),
        Operation("ingest", "required", {}, available=False),
    )
}


def params_help() -> list[tuple[str, list[tuple[str, str]]]]:
    """Every available operation with its parameters and what each does (for the CRD's
    description and the CLI's help)."""
    return [(name, [(key, p.help) for key, p in op.params.items()]) for name, op in OPERATIONS.items() if op.available]


def job_keywords(operation: str, params: Mapping[str, object], where: str = "params") -> dict[str, Any]:
    """Check a job's parameters and return the job function's keyword arguments; every
    problem is reported with its field path."""
    op = OPERATIONS.get(operation)
    if op is None:
        raise SpecError(f"unknown operation {operation!r}; one of {', '.join(OPERATIONS)}")
    problems, out = [], {}
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
        try:
            out[param.keyword] = param.parse(value)
        except (ValueError, SpecError) as exc:
            problems.append(f"{where}.{key}: {exc.problems[0] if isinstance(exc, SpecError) else exc}")
    if operation == "expireSnapshots" and "versions" in params and ("olderThan" in params or "retainLast" in params):
        problems.append(f"{where}: versions cannot be combined with olderThan or retainLast")
    if problems:
        raise SpecError(problems)
    return out
