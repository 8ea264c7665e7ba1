"""``ducklake.dev/v1alpha1``, declared once: one module per kind, each declaring its spec
(read by ``api.load``), its status and its printer columns (rendered by ``api.crd``)."""

from __future__ import annotations

from .catalog import CATALOG, CatalogSpec
from .job import JOB, JobSpec
from .kind import Kind
from .policy import POLICY, MaintenancePolicySpec
from .schema import SCHEMA, SchemaSpec
from .table import TABLE, TableSpec

KINDS: dict[str, Kind] = {k.name: k for k in (CATALOG, SCHEMA, TABLE, POLICY, JOB)}
Manifest = CatalogSpec | SchemaSpec | TableSpec | MaintenancePolicySpec | JobSpec
