"""A DuckLakeTable's or DuckLakeSchema's plan against the catalog (pure): the tables planning
it reads, the plan, and the message and extra info its commit carries. Shared by the
apply use case (``reconcile``) and the job that commits a plan with its heavy changes."""

from __future__ import annotations

import json

from ..api.v1alpha1.schema import SchemaSpec
from ..api.v1alpha1.table import TableSpec
from ..errors import DuckLakeError
from ..model.plans import TablePlan
from ..model.state import CatalogState
from .planner import plan_schema, plan_table


def commit_message(spec: TableSpec | SchemaSpec, plan: TablePlan) -> tuple[str, str]:
    message = f"{spec.ref.kind} {spec.ref.name}: {'; '.join(c.describe() for c in plan.light_changes)}"
    extra = json.dumps(
        {"manifest": spec.ref.source or spec.ref.name, "generation": spec.ref.generation, "planHash": plan.hash},
        sort_keys=True,
    )
    return message, extra


def plan_table_names(spec: TableSpec) -> list[tuple[str, str]]:
    """The tables planning ``spec`` reads: its own, and those it may be renamed from."""
    return [(spec.schema, spec.name)] + [(spec.schema, old) for old in spec.renamed_from]


def counts_files(spec: TableSpec) -> bool:
    """Its plan may have heavy changes, whose notes count the files they rewrite."""
    return spec.evolution.type_changes == "rewrite"


def plan_for(
    spec: TableSpec | SchemaSpec, state: CatalogState, pending_schemas: frozenset[str] = frozenset()
) -> TablePlan:
    if isinstance(spec, TableSpec):
        return plan_table(spec, state, pending_schemas)
    if isinstance(spec, SchemaSpec):
        return plan_schema(spec, state)
    raise DuckLakeError(f"{spec.ref.kind} has no schema plan")
