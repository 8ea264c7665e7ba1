"""Drift: the plan read backwards, as "the catalog differs from the manifest" findings."""

from __future__ import annotations

from ..model.changes import (
    AddColumn,
    Change,
    CreateTable,
    DropColumn,
    PromoteColumn,
    RenameColumn,
    RenameTable,
    RewriteColumnType,
)
from ..model.plans import TablePlan


def drift_lines(plan: TablePlan) -> list[str]:
    return [_line(c) for c in plan.changes] + [f"cannot be reconciled: {u}" for u in plan.unsupported]


def _line(c: Change) -> str:
    if isinstance(c, CreateTable):
        return f"table {c.schema}.{c.name} is declared but missing from the catalog"
    if isinstance(c, RenameTable):
        return f"table {c.old_name} is called {c.new_name} in the manifest"
    if isinstance(c, AddColumn):
        return f"{'.'.join(c.path)} is declared but missing from the catalog"
    if isinstance(c, DropColumn):
        return f"{'.'.join(c.path)} is in the catalog but not in the manifest"
    if isinstance(c, RenameColumn):
        return f"{'.'.join(c.path)} is called {c.new_name} in the manifest"
    if isinstance(c, (PromoteColumn, RewriteColumnType)):
        return f"{'.'.join(c.path)} is {c.old_type} in the catalog but {c.new_type} in the manifest"
    return f"catalog differs: would {c.describe().lstrip('+-~ ')}"
