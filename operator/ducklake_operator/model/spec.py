"""Desired state: the five kinds of ``ducklake.dev/v1alpha1`` as typed, validated values.

Each kind is declared once, with its fields, in ``api/v1alpha1/<kind>.py``: its spec dataclass
and the declaration the loader reads it by and the CRD renders. This module names them for the
layers below the API. CRD fields are camelCase, Python fields snake_case; columns are
``types.Field`` trees (struct fields carry ``renamed_from`` too); defaults are already encoded
as DuckDB stores them.
"""

from __future__ import annotations

from ..api.v1alpha1 import KINDS as _KINDS
from ..api.v1alpha1 import Manifest
from ..api.v1alpha1.catalog import SSL_MODE, URL_STYLE, CatalogSpec, PostgresSpec, S3Spec, SqliteSpec
from ..api.v1alpha1.common import DELETION_POLICY, ObjectRef, SecretRef
from ..api.v1alpha1.fields import Choice, DefaultChoice
from ..api.v1alpha1.job import JOB_OPERATION, JOB_OPERATIONS, JobSpec
from ..api.v1alpha1.names import (
    API_VERSION,
    CATALOG_LABEL,
    CATALOGS,
    GROUP,
    JOBS,
    OPERATION_LABEL,
    POLICIES,
    SCHEMAS,
    TABLES,
    VERSION,
)
from ..api.v1alpha1.policy import (
    DEFAULT_TIMEZONE,
    SELECTOR_OPERATOR,
    WINDOW_TIME_PATTERN,
    CleanupSettings,
    CompactionSettings,
    DeleteRewriteSettings,
    ExpirySettings,
    MaintenancePolicySpec,
    RepartitionSettings,
    Schedule,
    SelectorRequirement,
    Window,
)
from ..api.v1alpha1.schema import SchemaSpec
from ..api.v1alpha1.spark import IMAGE_PULL_POLICY, LAUNCHER, SparkSettings
from ..api.v1alpha1.table import (
    CAST_ERRORS,
    DEFAULT_SCHEMA,
    EVOLUTION_MODE,
    NULL_ORDER,
    ON_DRIFT,
    SORT_DIRECTION,
    TRANSFORM,
    TRANSFORMS,
    TYPE_CHANGES,
    EvolutionPolicy,
    PartitionKey,
    SortKey,
    TableSpec,
)

KINDS = tuple(_KINDS)

__all__ = [
    "API_VERSION",
    "CAST_ERRORS",
    "CATALOGS",
    "CATALOG_LABEL",
    "DEFAULT_SCHEMA",
    "DEFAULT_TIMEZONE",
    "DELETION_POLICY",
    "EVOLUTION_MODE",
    "GROUP",
    "IMAGE_PULL_POLICY",
    "JOBS",
    "JOB_OPERATION",
    "JOB_OPERATIONS",
    "KINDS",
    "LAUNCHER",
    "NULL_ORDER",
    "ON_DRIFT",
    "OPERATION_LABEL",
    "POLICIES",
    "SCHEMAS",
    "SELECTOR_OPERATOR",
    "SORT_DIRECTION",
    "SSL_MODE",
    "TABLES",
    "TRANSFORM",
    "TRANSFORMS",
    "TYPE_CHANGES",
    "URL_STYLE",
    "VERSION",
    "WINDOW_TIME_PATTERN",
    "CatalogSpec",
    "Choice",
    "CleanupSettings",
    "CompactionSettings",
    "DefaultChoice",
    "DeleteRewriteSettings",
    "EvolutionPolicy",
    "ExpirySettings",
    "JobSpec",
    "MaintenancePolicySpec",
    "Manifest",
    "ObjectRef",
    "PartitionKey",
    "PostgresSpec",
    "RepartitionSettings",
    "S3Spec",
    "Schedule",
    "SchemaSpec",
    "SecretRef",
    "SelectorRequirement",
    "SortKey",
    "SparkSettings",
    "SqliteSpec",
    "TableSpec",
    "Window",
]
