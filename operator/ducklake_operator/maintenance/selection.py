"""Which tables a policy maintains, and which policy runs a catalog's catalog-wide
operations (pure).

Tables: by name (``tables``, compared as DuckDB compares identifiers), else by a Kubernetes
label selector over the DuckLakeTable's labels (``matchLabels`` and ``matchExpressions``,
all of them must match; ``NotIn`` and ``DoesNotExist`` match a table without the label). A
policy with neither selects every table of its catalog, as an empty Kubernetes selector does.

Catalog-wide operations (snapshot expiry, file cleanup, orphan deletion, and those of the
sections operations declare, ``model/job_params``) have one owner per
catalog: among the catalog's policies that set any of them, the oldest by creation time,
ties broken by name. Ownership ignores ``suspend`` (suspending the owner pauses them; it
does not hand them to another policy). The others get ``Conflict=True`` and run none of
them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from ..api.v1alpha1.policy import MaintenancePolicySpec, SelectorRequirement
from ..model.job_params import OPERATIONS
from ..model.names import fold
from .policy_params import catalog_schedules, section_schedules, sets_catalog_wide


def matches(requirement: SelectorRequirement, labels: Mapping[str, str]) -> bool:
    value = labels.get(requirement.key)
    if requirement.operator == "In":
        return value is not None and value in requirement.values
    if requirement.operator == "NotIn":
        return value is None or value not in requirement.values
    if requirement.operator == "Exists":
        return value is not None
    if requirement.operator == "DoesNotExist":
        return value is None
    raise ValueError(f"unknown selector operator {requirement.operator!r}")  # the loader allows only these


def selects(policy: MaintenancePolicySpec, table_name: str, labels: Mapping[str, str]) -> bool:
    """Whether ``policy`` maintains the table ``schema.table`` whose DuckLakeTable has ``labels``
    (a catalog table no DuckLakeTable declares has none)."""
    if policy.tables:
        return fold(table_name) in {fold(t) for t in policy.tables}
    return all(labels.get(k) == v for k, v in policy.table_selector) and all(
        matches(r, labels) for r in policy.table_selector_expressions
    )


def catalog_wide_owner(policies: Iterable[tuple[MaintenancePolicySpec, datetime]]) -> str | None:
    """The name of the policy that runs the catalog-wide operations, among ``policies``
    (every policy of one catalog, with its creation time); None: no policy sets them."""
    policies = list(policies)
    catalogs = {(p.ref.namespace, p.catalog) for p, _ in policies}
    if len(catalogs) > 1:
        raise ValueError(f"policies of more than one catalog: {sorted(map(str, catalogs))}")
    contenders = sorted((created, p.ref.name) for p, created in policies if sets_catalog_wide(p))
    return contenders[0][1] if contenders else None


def conflict_message(policy: MaintenancePolicySpec, owner: str | None) -> str | None:
    """The ``Conflict`` condition's message for a policy that sets catalog-wide operations it
    does not own; None: no conflict."""
    if not sets_catalog_wide(policy) or owner == policy.ref.name:
        return None
    if owner is None:
        raise ValueError(f"{policy.ref} sets catalog-wide operations but no owner was given")
    given = section_schedules(policy)
    sections = list(
        dict.fromkeys(op.section for op in OPERATIONS.values() if op.table == "none" and op.section in given)
    )
    operations = ", ".join(catalog_schedules(policy))
    return (
        f"{' and '.join(sections)} of catalog {policy.catalog} are run by DuckLakeMaintenancePolicy {owner} "
        f"(the oldest policy of the catalog that sets catalog-wide operations); this policy runs none of them "
        f"({operations}): remove them from one of the two"
    )
