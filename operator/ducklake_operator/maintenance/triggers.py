"""Health triggers (pure): a table's state asks for a run before its schedule does.

* ``compaction.whenSmallFilesAbove: N``: more than N small files, counted as the files the
  next ``compact`` run would merge (``plan_compaction`` with that run's params), so a trigger
  never launches a run with nothing to do, and the count in its reason is the run's input.
* ``deleteRewrite.deleteRatioThreshold``: a file whose deleted fraction reaches the
  threshold, as ``plan_delete_rewrite`` computes it (delete file + inlined deletions), i.e.
  a file the next ``rewriteDeletes`` run would rewrite.

Whether a trigger may fire (the window, a run already pending or running, the minimum
interval) is the caller's rule (``policy_runs``); this module only reads the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..api.v1alpha1.policy import MaintenancePolicySpec
from .compaction import plan_compaction
from .delete_rewrite import plan_delete_rewrite
from .policy_params import MaintainedTable, compaction_options

TRIGGERED_OPERATIONS = ("compact", "rewriteDeletes")


def small_files(table: MaintainedTable, params: Mapping[str, Any]) -> int:
    """Files the next ``compact`` run with ``params`` would merge."""
    plan = plan_compaction(
        table.state,
        0,  # the base snapshot names the plan; it selects nothing
        list(table.schema_versions),
        compaction_options(params),
        files_with_inlined_deletes=tuple(table.inlined_deletions),
    )
    return plan.input_files


def files_to_rewrite(table: MaintainedTable, threshold: float) -> int:
    """Files whose deleted fraction reached ``threshold`` (what ``rewriteDeletes`` rewrites)."""
    plan = plan_delete_rewrite(
        table.state, 0, list(table.schema_versions), threshold, inlined_deletions=table.inlined_deletions
    )
    return plan.input_files


def trigger_reason(
    policy: MaintenancePolicySpec, operation: str, table: MaintainedTable, params: Mapping[str, Any]
) -> str | None:
    """Why ``table`` needs ``operation`` now ("12 small files > 10"), or None."""
    if operation == "compact" and policy.compaction is not None:
        limit = policy.compaction.schedule.when_small_files_above
        if limit is None:
            return None
        count = small_files(table, params)
        return f"{count} small files > {limit}" if count > limit else None
    if operation == "rewriteDeletes" and policy.delete_rewrite is not None:
        threshold = params["deleteThreshold"]
        count = files_to_rewrite(table, threshold)
        if count == 0:
            return None
        return f"{count} file{'s' if count > 1 else ''} with a delete ratio >= {threshold:g}"
    return None
