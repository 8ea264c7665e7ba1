"""The rest of a manifest's plan, committed with its heavy changes: a DuckLakeTable whose plan
retypes columns by a rewrite (``typeChanges: rewrite``) gets one snapshot for all of it, so no
reader ever sees a schema nobody declared (some columns converted and others not, a column
added but the types still old).

``ducklake apply`` and the operator commit nothing of such a plan themselves: they run one
rewriteColumnType job for its heavy changes with the manifest, and the job plans the manifest
again where it reads (its base snapshot; never a plan replayed on a catalog that moved), checks
that the plan's heavy changes are the job's, and commits the plan's other changes in its own
snapshot, after checking inside that commit that the plan is still the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ducklake_operator.api.v1alpha1.table import TableSpec
from ducklake_operator.catalog import Catalog
from ducklake_operator.errors import CommitConflict, DuckLakeError, JobFailed
from ducklake_operator.evolution.manifest_plans import commit_message, plan_for, plan_table_names
from ducklake_operator.model.changes import RewriteColumnType, SetNullable, SetPartitioning
from ducklake_operator.model.names import fold
from ducklake_operator.model.plans import TablePlan
from ducklake_operator.model.state import TableState
from ducklake_operator.model.types import DuckLakeType


@dataclass(frozen=True)
class ManifestPlan:
    spec: TableSpec
    plan: TablePlan  # at the job's base snapshot
    table: str  # schema.table, for messages

    @property
    def repartitions(self) -> bool:
        """The plan changes the table's partitioning."""
        return any(isinstance(c, SetPartitioning) for c in self.plan.light_changes)

    def retypes(self, table: TableState) -> tuple[tuple[tuple[str, ...], DuckLakeType], ...]:
        """The plan's rewrites as (the column's path in the catalog now, new type): the plan
        names columns as the manifest does, and one it also renames is found by its id."""
        out = []
        for c in self.plan.heavy_changes:
            assert isinstance(c, RewriteColumnType)
            path: list[str] = []
            column = table.column_by_id(c.column_id)
            while column is not None:
                path.insert(0, column.name)
                column = table.column_by_id(column.parent_id) if column.parent_id is not None else None
            out.append((tuple(path), c.new_type))
        return tuple(out)

    def report(self) -> dict[str, Any]:
        return {
            "manifest": str(self.spec.ref),
            "planHash": self.plan.hash,
            "otherChanges": [c.describe() for c in self.plan.light_changes],
        }

    def describe_others(self) -> str:
        return "; ".join(c.describe() for c in self.plan.light_changes)

    def extra_info(self) -> str:
        """What ``ducklake apply``'s own commits say of the manifest (its source, generation, plan)."""
        return commit_message(self.spec, self.plan)[1]

    def check_at(self, catalog: Catalog, snapshot: int) -> None:
        """Inside the commit: the plan made at ``snapshot`` (the latest) is still this one."""
        now = _plan(catalog, self.spec, snapshot)
        if now.hash != self.plan.hash:
            raise CommitConflict(
                f"rewriteColumnType {self.table}: the plan of {self.spec.ref} changed after snapshot "
                f"{self.plan.base_snapshot} (the table changed); nothing was committed"
            )

    def check_nulls(self, nulled: Mapping[tuple[str, ...], int]) -> None:
        """A column the plan makes NOT NULL got no NULL from values that did not convert."""
        for c in self.plan.light_changes:
            if isinstance(c, SetNullable) and not c.nullable and nulled.get(c.path):
                raise JobFailed(
                    f"rewriteColumnType {self.table}: {nulled[c.path]} value(s) of {'.'.join(c.path)} did not convert "
                    f"and became NULL (onCastError: null), and {self.spec.ref} makes it NOT NULL; nothing was "
                    "committed and the job's files were deleted"
                )


def _plan(catalog: Catalog, spec: TableSpec, snapshot: int) -> TablePlan:
    state = catalog.state(snapshot, include_files=False, table_names=plan_table_names(spec))
    return plan_for(spec, state)


def manifest_plan(
    catalog: Catalog,
    spec: TableSpec,
    table: TableState,
    snapshot: int,
    asked: Sequence[tuple[tuple[str, ...], DuckLakeType]],
) -> ManifestPlan | None:
    """The manifest's plan at ``snapshot``, whose heavy changes must be the job's (``asked``);
    None when it has none and the columns have their types already (nothing to do)."""
    plan = _plan(catalog, spec, snapshot)
    name = table.qualified_name
    if plan.is_refused:
        reasons = "; ".join([b.describe() for b in plan.blocked] + list(plan.unsupported))
        raise DuckLakeError(
            f"rewriteColumnType {name}: the plan of {spec.ref} is refused: {reasons}; nothing was committed"
        )
    heavy = [c for c in plan.heavy_changes if isinstance(c, RewriteColumnType)]
    theirs = {(tuple(fold(n) for n in c.path), c.new_type) for c in heavy if c.table_id == table.table_id}
    mine = {(tuple(fold(n) for n in path), new_type) for path, new_type in asked}
    if not heavy and all(_has_type(table, path, new_type) for path, new_type in asked):
        return None
    if theirs != mine or len(theirs) != len(heavy):
        said = ", ".join(f"{'.'.join(c.path)} {c.old_type} → {c.new_type}" for c in heavy) or "nothing"
        raise DuckLakeError(
            f"rewriteColumnType {name}: the plan of {spec.ref} at snapshot {snapshot} rewrites {said}, not what this "
            "job was given; nothing was committed (the manifest or the table changed: reconcile again)"
        )
    return ManifestPlan(spec, plan, name)


def _has_type(table: TableState, path: tuple[str, ...], new_type: DuckLakeType) -> bool:
    level, found = table.columns, None
    for n in path:
        found = next((c for c in level if fold(c.name) == fold(n)), None)
        if found is None:
            return False
        level = found.children
    return found is not None and found.type == new_type
