"""The job a table plan's heavy changes need (pure): the seam between planning and running.

A plan with heavy changes (type changes a rewrite does) is done by one rewriteColumnType job:
every column in one pass over the files and one snapshot, which also holds the plan's other
changes (the job is given the manifest: ``with_plan``), so no snapshot reads a schema nobody
declared. A plan without heavy changes commits its ``light_changes`` in one snapshot itself.
``ducklake apply`` runs the job in its own process; the controller creates a DuckLakeJob
(operation and params as below, checked by ``model.job_params`` like any job's, with the
DuckLakeTable as its ``manifest``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ..api.v1alpha1.table import EvolutionPolicy
from ..model.changes import RenameTable, RewriteColumnType
from ..model.maintenance_params import render_column_path
from ..model.plans import TablePlan


@dataclass(frozen=True)
class HeavyJob:
    operation: str
    table: str  # schema.table, as the catalog names it now
    params: dict[str, Any]  # a DuckLakeJob's spec.params (but the manifest)
    with_plan: bool = False  # the plan has other changes: the job is given the manifest and commits them too

    def describe(self) -> str:
        params = ", ".join(f"{k}={_text(v)}" for k, v in self.params.items())
        return f"{self.operation} {self.table} ({params})" + (
            " with the plan's other changes" if self.with_plan else ""
        )

    @property
    def key(self) -> str:
        """Stable over plans and processes (12 hex): the same job for the same change, so a
        controller can name its DuckLakeJob by it and create it once."""
        text = json.dumps([self.operation, self.table, self.params], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def _text(value: Any) -> str:
    """A param as a manifest would write it (``{code: int64, d: date}``)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}"
    return str(value)


def heavy_jobs(plan: TablePlan, evolution: EvolutionPolicy) -> tuple[HeavyJob, ...]:
    """The job that does ``plan``'s heavy changes (none for a refused plan, or one without)."""
    retypes = [c for c in plan.heavy_changes if isinstance(c, RewriteColumnType)]
    if plan.is_refused or not retypes:
        return ()
    columns = {render_column_path(c.path): c.new_type.name for c in retypes}
    params: dict[str, Any] = (
        {"column": next(iter(columns)), "type": next(iter(columns.values()))}
        if len(columns) == 1
        else {"columns": columns}
    )
    renamed = next((c for c in plan.light_changes if isinstance(c, RenameTable)), None)
    table = renamed.old_name if renamed is not None else retypes[0].table
    return (
        HeavyJob(
            "rewriteColumnType", table, {**params, "onCastError": evolution.on_cast_error}, bool(plan.light_changes)
        ),
    )
