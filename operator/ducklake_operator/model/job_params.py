"""The maintenance operations, one declaration each (pure): its name, the maintenance policy
section that schedules it (the one mapping between the policy's names and the operations'),
its table scope, its parameters (defined in ``maintenance_params``, or here when only it has
them), the typed arguments they parse into and, when it declares it, its policy section
(``PolicySection``: read, scheduled and passed through with no code of its own). Shared by the manifest loader (a DuckLakeJob's ``params`` are checked at
apply time), the policy (``maintenance.policy_params``), ``ducklake run-job`` and the jobs
(``ducklake_jobs.operation_registry`` pairs each with its job function)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from difflib import get_close_matches
from typing import Any, Generic, Literal, TypeVar

from ..errors import SpecError
from .maintenance_params import (
    APPLY_DELETES,
    BASE_POLICY_SETTINGS,
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
from .types import DuckLakeType

# how a "manifest" parameter's DuckLakeTable becomes its TableSpec: the API's loader, a layer
# above this one, passes it (api.load.job_keywords, api.load.parse_args)
ManifestReader = Callable[[object], Any] | None

Scope = Literal["required", "optional", "none"]  # an operation's table: needed, optional, or catalog-wide only


# The typed arguments of each operation's job function: what its parameters parse into (one
# field per parameter, named by its ``Param.keyword``; None: the job's own default).


@dataclass(frozen=True)
class CompactArgs:
    target_file_size: int | None = None
    small_file_threshold: int | None = None
    min_input_files: int | None = None
    max_groups: int | None = None
    apply_deletes: bool | None = None
    sort: bool = SORT.default
    dry_run: bool = DRY_RUN.default


@dataclass(frozen=True)
class RewriteDeletesArgs:
    delete_threshold: float | None = None
    dry_run: bool = DRY_RUN.default


@dataclass(frozen=True)
class FlushArgs:
    dry_run: bool = DRY_RUN.default


@dataclass(frozen=True)
class ExpireArgs:
    older_than: str | None = None
    retain_last: int | None = None
    versions: list[int] | None = None
    dry_run: bool = DRY_RUN.default


@dataclass(frozen=True)
class CleanupArgs:
    older_than: str = CLEANUP_OLDER_THAN.default
    dry_run: bool = DRY_RUN.default


@dataclass(frozen=True)
class OrphanArgs:
    older_than: str = ORPHAN_OLDER_THAN.default
    dry_run: bool = DRY_RUN.default


@dataclass(frozen=True)
class RepartitionArgs:
    max_bytes_per_commit: int | None = None
    target_file_size: int | None = None
    dry_run: bool = DRY_RUN.default


@dataclass(frozen=True)
class RewriteColumnTypeArgs:
    column: tuple[str, ...] | None = None
    new_type: DuckLakeType | None = None
    columns: tuple[tuple[tuple[str, ...], DuckLakeType], ...] | None = None
    on_cast_error: str = ON_CAST_ERROR.default
    manifest: Any = None  # the DuckLakeTable's TableSpec (api.v1alpha1.table), read by the API's loader
    dry_run: bool = DRY_RUN.default


@dataclass(frozen=True)
class IngestArgs:
    path: str
    file_format: str = INGEST_FORMAT.default
    on_bad_record: str = ON_BAD_RECORD.default
    reingest: bool = REINGEST.default
    evolve: bool = INGEST_EVOLVE.default
    dry_run: bool = DRY_RUN.default


A = TypeVar("A")


@dataclass(frozen=True)
class PolicySection:
    """A maintenance policy section an operation declares with itself: the policy reads it
    (``api/v1alpha1/policy.py``), schedules it and passes its settings to the operation's
    runs under the same keys (``maintenance/policy_params.py``), with no code of its own.
    Each setting is one of the operation's parameters. (The sections written out in
    ``maintenance_params.BASE_POLICY_SETTINGS`` resolve table options or map settings onto
    other parameters.)"""

    description: str  # the CRD's
    settings: Mapping[str, Param] = field(default_factory=dict)


@dataclass(frozen=True)
class Operation(Generic[A]):
    """One maintenance operation as the API knows it. ``section``: the maintenance policy's
    section that schedules it (the policy's name for it; None: only a DuckLakeJob runs it);
    ``policy``: that section's declaration, when the operation declares it (``PolicySection``);
    ``args``: the typed arguments its parameters parse into (``parse``)."""

    name: str
    table: Scope
    params: Mapping[str, Param]  # every one has a keyword, a field of ``args``
    args: type[A]
    section: str | None = None
    available: bool = True
    policy: PolicySection | None = None
    # its file groups run as Spark tasks, unless the run keeps them in the job's process
    # (``--no-spark``, ``spark.inProcessBelow``); else the job's process does all its work
    spark_tasks: bool = False

    def __post_init__(self) -> None:
        # The arguments are written out as a dataclass so the job functions are typed
        # statically; this check keeps them the parameters' keywords, one for one (at import).
        keywords = sorted(str(p.keyword) for p in self.params.values())
        if keywords != sorted(f.name for f in fields(self.args)):  # type: ignore[arg-type]  # A: a dataclass
            raise TypeError(f"{self.name}: {self.args.__name__}'s fields are not its parameters' keywords {keywords}")
        if self.policy is None:
            return
        if self.section is None or self.section in BASE_POLICY_SETTINGS:
            raise TypeError(f"{self.name} declares a policy section but names no new section ({self.section!r})")
        foreign = [k for k, p in self.policy.settings.items() if self.params.get(k) is not p]
        if foreign:
            raise TypeError(f"{self.name}'s section {self.section} sets {', '.join(foreign)}, not its parameters")

    def parse(self, params: Mapping[str, object], where: str = "params", read_manifest: ManifestReader = None) -> A:
        """The typed arguments of ``params``; every problem reported at once (``SpecError``)."""
        return self.args(**job_keywords(self.name, params, where, read_manifest))


COMPACT: Operation[CompactArgs] = Operation(
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
    CompactArgs,
    section="compaction",
    spark_tasks=True,
)
REWRITE_DELETES: Operation[RewriteDeletesArgs] = Operation(
    "rewriteDeletes",
    "required",
    {"deleteThreshold": DELETE_THRESHOLD, "dryRun": DRY_RUN},
    RewriteDeletesArgs,
    section="deleteRewrite",
    spark_tasks=True,
)
FLUSH_INLINED_DATA: Operation[FlushArgs] = Operation(
    "flushInlinedData", "optional", {"dryRun": DRY_RUN}, FlushArgs, section="inlinedDataFlush"
)
EXPIRE_SNAPSHOTS: Operation[ExpireArgs] = Operation(
    "expireSnapshots",
    "none",
    {"olderThan": EXPIRE_OLDER_THAN, "retainLast": RETAIN_LAST, "versions": VERSIONS, "dryRun": DRY_RUN},
    ExpireArgs,
    section="snapshotExpiry",
)
CLEANUP_FILES: Operation[CleanupArgs] = Operation(
    "cleanupFiles",
    "none",
    {"olderThan": CLEANUP_OLDER_THAN, "dryRun": DRY_RUN},
    CleanupArgs,
    section="fileCleanup",
)
# scheduled by fileCleanup too, when it says orphanFiles: true
DELETE_ORPHAN_FILES: Operation[OrphanArgs] = Operation(
    "deleteOrphanFiles",
    "none",
    {"olderThan": ORPHAN_OLDER_THAN, "dryRun": DRY_RUN},
    OrphanArgs,
    section="fileCleanup",
)
REPARTITION: Operation[RepartitionArgs] = Operation(
    "repartition",
    "required",
    {"maxBytesPerCommit": MAX_BYTES_PER_COMMIT, "targetFileSize": TARGET_FILE_SIZE, "dryRun": DRY_RUN},
    RepartitionArgs,
    section="partitionRewrite",
    spark_tasks=True,
)
REWRITE_COLUMN_TYPE: Operation[RewriteColumnTypeArgs] = Operation(
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
    RewriteColumnTypeArgs,
    spark_tasks=True,
)
INGEST: Operation[IngestArgs] = Operation(
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
    IngestArgs,
    spark_tasks=True,
)

OPERATIONS: dict[str, Operation[Any]] = {
    op.name: op
    for op in (
        COMPACT,
        REWRITE_DELETES,
        FLUSH_INLINED_DATA,
        EXPIRE_SNAPSHOTS,
        CLEANUP_FILES,
        DELETE_ORPHAN_FILES,
        REPARTITION,
        REWRITE_COLUMN_TYPE,
        INGEST,
    )
}

# Sections operations declare (``Operation.policy``), by name.
DECLARED_SECTIONS: dict[str, PolicySection] = {
    op.section: op.policy for op in OPERATIONS.values() if op.section is not None and op.policy is not None
}


def _policy_settings() -> dict[str, Mapping[str, Param]]:
    """Every section's settings: the declared sections follow ``fileCleanup``, the last
    section written out, so the CRD keeps its order."""
    out: dict[str, Mapping[str, Param]] = {}
    for name, params in BASE_POLICY_SETTINGS.items():
        out[name] = params
        if name == "fileCleanup":
            out.update((section, declared.settings) for section, declared in DECLARED_SECTIONS.items())
    return out


# DuckLakeMaintenancePolicy: section -> field -> definition ("spec" for top-level fields;
# every section also has its cron ``schedule``).
POLICY_SETTINGS: dict[str, Mapping[str, Param]] = _policy_settings()


def parse_args(
    operation: str, params: Mapping[str, object], where: str = "params", read_manifest: ManifestReader = None
) -> object:
    """The typed arguments (an ``Operation.args``) of ``operation``'s job for ``params``:
    parsed once per process, every problem at once (``SpecError``)."""
    op = OPERATIONS.get(operation)
    if op is None:
        raise SpecError(f"unknown operation {operation!r}; one of {', '.join(OPERATIONS)}")
    return op.parse(params, where, read_manifest)


def operations_of(section: str) -> tuple[str, ...]:
    """The operations a maintenance policy's ``section`` schedules."""
    return tuple(name for name, op in OPERATIONS.items() if op.section == section)


def params_help() -> list[tuple[str, list[tuple[str, str]]]]:
    """Every available operation with its parameters and what each does (for the CRD's
    description and the CLI's help)."""
    return [
        (name, [(key, p.describe()) for key, p in op.params.items()]) for name, op in OPERATIONS.items() if op.available
    ]


def job_keywords(
    operation: str, params: Mapping[str, object], where: str = "params", read_manifest: ManifestReader = None
) -> dict[str, Any]:
    """Check a job's parameters and return the job function's keyword arguments; every
    problem is reported with its field path. ``read_manifest`` reads a "manifest" value (a
    DuckLakeTable): the API's loader gives it (``api.load.job_keywords``)."""
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
            out[param.keyword] = param.parse(value, read_manifest)
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
