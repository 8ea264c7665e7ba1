"""The jobs a table plan's heavy changes need (pure): the seam between planning and running.

A plan that is not refused commits its ``light_changes`` in one snapshot; each of its
``heavy_changes`` then needs a maintenance job, in plan order, one at a time per table:
``ducklake apply`` runs them in its own process, the controller creates a DuckLakeJob for
each (operation and params as below, checked by ``model.job_params`` like any job's).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ..model.changes import RewriteColumnType
from ..model.maintenance_params import render_column_path
from ..model.plans import TablePlan
from ..model.spec import EvolutionPolicy


@dataclass(frozen=True)
class HeavyJob:
    operation: str
    table: str  # schema.table
    params: dict[str, Any]  # a DuckLakeJob's spec.params

    def describe(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.operation} {self.table} ({params})"

    @property
    def key(self) -> str:
        """Stable over plans and processes (12 hex): the same job for the same change, so a
        controller can name its DuckLakeJob by it and create it once."""
        text = json.dumps([self.operation, self.table, self.params], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def heavy_jobs(plan: TablePlan, evolution: EvolutionPolicy) -> tuple[HeavyJob, ...]:
    """The jobs that do ``plan``'s heavy changes, in order; none for a refused plan."""
    if plan.is_refused:
        return ()
    return tuple(
        HeavyJob(
            "rewriteColumnType",
            c.table,
            {"column": render_column_path(c.path), "type": c.new_type.name, "onCastError": evolution.on_cast_error},
        )
        for c in plan.heavy_changes
        if isinstance(c, RewriteColumnType)
    )
