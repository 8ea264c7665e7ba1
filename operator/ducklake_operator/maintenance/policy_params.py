"""What a maintenance policy asks of each operation: the DuckLakeJob ``params`` its runs get
(pure).

Each value is resolved once, here, in this order: the policy's setting, else the table's
option in force (table > schema > catalog, as DuckDB reads it), else the planner's default.
The result is both the runs' params and the "effective settings" the policy publishes per
table, so what a person reads in the status is what the job gets. Every params dict is
valid for ``model.job_params`` (the tests check it with ``job_keywords``).

Policy section -> operation: each operation's declaration names its section
(``model.job_params``, ``Operation.section``); ``fileCleanup`` schedules
``deleteOrphanFiles`` only with ``orphanFiles: true``. A section an operation declares
with itself (``Operation.policy``) is scheduled and its settings passed through to its runs
under the same keys, with no code here of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ..api.v1alpha1.policy import MaintenancePolicySpec, Schedule
from ..model.job_params import OPERATIONS, job_keywords
from ..model.maintenance_params import APPLY_DELETES, DELETE_THRESHOLD, TARGET_FILE_SIZE
from ..model.state import TableState
from .compaction import CompactionOptions


@dataclass(frozen=True)
class MaintainedTable:
    """A table a policy selects, as read from the catalog at one snapshot."""

    name: str  # schema.table
    state: TableState
    options: Mapping[str, str] | None = None  # options in force (table > schema > catalog); None: the table's own
    schema_versions: tuple[tuple[int, int], ...] = ()  # (begin_snapshot, schema_version), for compaction's groups
    inlined_deletions: Mapping[int, int] = field(default_factory=dict)  # data file id -> inlined deletions

    def option(self, key: str) -> str | None:
        return (self.options if self.options is not None else self.state.options).get(key)


def section_schedules(policy: MaintenancePolicySpec) -> dict[str, Schedule]:
    """Policy section -> its schedule, for the sections the policy sets (a flush is all schedule)."""
    sections = {
        "compaction": policy.compaction.schedule if policy.compaction else None,
        "deleteRewrite": policy.delete_rewrite.schedule if policy.delete_rewrite else None,
        "inlinedDataFlush": policy.inlined_data_flush,
        "partitionRewrite": policy.partition_rewrite.schedule if policy.partition_rewrite else None,
        "snapshotExpiry": policy.snapshot_expiry.schedule if policy.snapshot_expiry else None,
        "fileCleanup": policy.file_cleanup.schedule if policy.file_cleanup else None,
        **{name: s.schedule for name, s in policy.sections.items()},
    }
    return {name: s for name, s in sections.items() if s is not None}


def _schedules(policy: MaintenancePolicySpec, catalog_wide: bool) -> dict[str, Schedule]:
    """Operation -> its schedule: its section's (``model.job_params`` maps sections to operations)."""
    given = section_schedules(policy)
    return {
        name: given[op.section]
        for name, op in OPERATIONS.items()
        if op.section in given
        and (op.table == "none") == catalog_wide
        and (name != "deleteOrphanFiles" or bool(policy.file_cleanup and policy.file_cleanup.orphan_files))
    }


def table_schedules(policy: MaintenancePolicySpec) -> dict[str, Schedule]:
    """Per-table operation -> its schedule, for the sections the policy sets."""
    return _schedules(policy, catalog_wide=False)


def catalog_schedules(policy: MaintenancePolicySpec) -> dict[str, Schedule]:
    """Catalog-wide operation -> its schedule (orphan deletion shares fileCleanup's, when it
    says ``orphanFiles: true``)."""
    return _schedules(policy, catalog_wide=True)


def sets_catalog_wide(policy: MaintenancePolicySpec) -> bool:
    return bool(catalog_schedules(policy))


def table_params(policy: MaintenancePolicySpec, table: MaintainedTable) -> dict[str, dict[str, Any]]:
    """Operation -> the params a run of it on ``table`` gets (operations without params
    have ``{}``; ``repartition`` too: its runs take the job's defaults)."""
    out: dict[str, dict[str, Any]] = {op: {} for op in table_schedules(policy)}
    if (c := policy.compaction) is not None:
        target = TARGET_FILE_SIZE.resolve(c.target_file_size, table.option)
        out["compact"] = {
            "targetFileSize": target,
            "smallFileThreshold": c.small_file_threshold or target,  # the planner's own default
            "minInputFiles": c.min_input_files,
            "sort": c.sort,
            # said explicitly (the job's default), so that the small-file trigger counts
            # exactly the files the run will merge
            "applyDeletes": APPLY_DELETES.default,
        }
    if (d := policy.delete_rewrite) is not None:
        out["rewriteDeletes"] = {"deleteThreshold": DELETE_THRESHOLD.resolve(d.delete_ratio_threshold, table.option)}
    if (r := policy.partition_rewrite) is not None and r.max_bytes_per_commit is not None:
        out["repartition"] = {"maxBytesPerCommit": r.max_bytes_per_commit}
    return _dry_run(policy, {**out, **_declared_params(policy, catalog_wide=False)})


def catalog_params(policy: MaintenancePolicySpec) -> dict[str, dict[str, Any]]:
    """Catalog-wide operation -> its params; ``dryRun`` passes through to cleanup and orphans."""
    out: dict[str, dict[str, Any]] = {}
    if (e := policy.snapshot_expiry) is not None:
        out["expireSnapshots"] = {
            **({"olderThan": e.older_than} if e.older_than is not None else {}),
            **({"retainLast": e.retain_last} if e.retain_last is not None else {}),
        }
    if (f := policy.file_cleanup) is not None:
        cleanup = {"olderThan": f.older_than, "dryRun": f.dry_run}  # the spec defaults olderThan
        out["cleanupFiles"] = cleanup
        if f.orphan_files:
            out["deleteOrphanFiles"] = dict(cleanup)
    return _dry_run(policy, {**out, **_declared_params(policy, catalog_wide=True)})


def _declared_params(policy: MaintenancePolicySpec, catalog_wide: bool) -> dict[str, dict[str, Any]]:
    """Operation -> its params, for the sections operations declare: the settings given (or
    defaulted) under their own keys; an unset one is the job's default."""
    out: dict[str, dict[str, Any]] = {}
    for name, op in OPERATIONS.items():
        given = policy.sections.get(op.section) if op.section is not None else None
        if given is not None and (op.table == "none") == catalog_wide:
            out[name] = {key: value for key, value in given.values.items() if value is not None}
    return out


def _dry_run(policy: MaintenancePolicySpec, params: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """A policy's ``dryRun`` makes every run it starts a dry run (each operation takes one)."""
    if not policy.dry_run:
        return params
    return {op: {**p, "dryRun": True} if "dryRun" in OPERATIONS[op].params else p for op, p in params.items()}


def compaction_options(params: Mapping[str, Any]) -> CompactionOptions:
    """The planner's options for ``compact`` params: what the job will plan with."""
    keywords = job_keywords("compact", params)
    names = {f.name for f in fields(CompactionOptions)}
    return CompactionOptions(**{k: v for k, v in keywords.items() if k in names})
