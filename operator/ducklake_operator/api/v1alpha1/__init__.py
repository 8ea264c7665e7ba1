"""``ducklake.dev/v1alpha1``, declared once: one module per kind, each declaring its spec
(read by ``api.load``), its status and its printer columns (rendered by ``api.crd``)."""

from __future__ import annotations

from .catalog import CATALOG
from .job import JOB
from .kind import Kind
from .policy import POLICY
from .schema import SCHEMA
from .table import TABLE

KINDS: dict[str, Kind] = {k.name: k for k in (CATALOG, SCHEMA, TABLE, POLICY, JOB)}
