"""What a tick knows of the world besides the run itself: its catalog, the catalog's other
runs and policies, the effective Spark settings (``RunContext``), as the kopf handlers read
them from their indexes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...api.v1alpha1.catalog import CatalogSpec
from ...api.v1alpha1.policy import Window


@dataclass(frozen=True)
class OtherRun:
    """Another run of the same catalog that has not ended, as the controller last saw it."""

    name: str
    uid: str
    table: str | None
    state: str  # Pending | Running
    created: str  # creationTimestamp: waiting runs go in this order
    holds: bool  # it holds locks (Running, or between taking them and launching)
    retry_at: str | None = None  # a failed attempt's retry waits until then
    locks: tuple[str, ...] = ()  # the Leases it holds
    policy: str | None = None  # the uid of the policy that created it (its window applies)


@dataclass(frozen=True)
class PolicyWindow:
    """The window of a policy: its runs start only inside it."""

    name: str  # the policy's, for messages
    window: Window


@dataclass(frozen=True)
class RunContext:
    """Everything a tick needs besides the job itself."""

    catalog: CatalogSpec | None
    catalog_doc: dict[str, Any] | None  # the catalog manifest as in the cluster (for the run document)
    catalog_ready: bool
    max_jobs: int | None  # the catalog's limit of concurrent runs (None: no limit)
    spark: Mapping[str, Any]  # the effective spark settings (job over policy over defaults)
    others: tuple[OtherRun, ...] = ()
    created: str = ""  # this run's creationTimestamp
    policy: str | None = None  # the uid of the policy that created this run
    windows: Mapping[str, PolicyWindow] = field(default_factory=dict)  # by policy uid: the catalog's policies' windows
    table_evolution: str | None = None  # evolution.mode of the DuckLakeTable declaring the table (None: none)
