"""Desired state: the five kinds of ``ducklake.dev/v1alpha1`` as typed, validated values.

CRD fields are camelCase, Python fields snake_case; ``api.load`` maps them once. Columns
are ``types.Field`` trees (struct fields carry ``renamed_from`` too); defaults are
already encoded as DuckDB stores them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .job_params import OPERATIONS
from .maintenance_params import (
    CLEANUP_GRACE,
    DRY_RUN,
    HISTORY_LIMIT,
    MIN_INPUT_FILES,
    ON_CAST_ERROR,
    ORPHAN_FILES,
    RETRIES,
    SORT,
    SUSPEND,
)
from .run_env import EnvVar
from .types import Field

GROUP = "ducklake.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
# the kinds' plurals, as the API server serves them
CATALOGS, SCHEMAS, TABLES = "ducklakecatalogs", "ducklakeschemas", "ducklaketables"
POLICIES, JOBS = "ducklakemaintenancepolicies", "ducklakejobs"
# labels on what runs create: the run's catalog and operation
CATALOG_LABEL, OPERATION_LABEL = "ducklake.dev/catalog", "ducklake.dev/operation"
KINDS = ("DuckLakeCatalog", "DuckLakeSchema", "DuckLakeTable", "DuckLakeMaintenancePolicy", "DuckLakeJob")
JOB_OPERATIONS = tuple(OPERATIONS)


@dataclass(frozen=True)
class Choice:
    """A field that takes one of a few words: the loader checks it, the CRD lists it as an enum."""

    values: tuple[str, ...]
    default: str | None = None  # None: the field may be absent (and means something else then)


@dataclass(frozen=True)
class DefaultChoice(Choice):
    """A choice with a default: its field always has one of the words."""

    default: str


TRANSFORM = DefaultChoice(("identity", "year", "month", "day", "hour"), "identity")
TRANSFORMS = TRANSFORM.values
DELETION_POLICY = DefaultChoice(("Retain", "Delete"), "Retain")
SORT_DIRECTION = DefaultChoice(("asc", "desc"), "asc")
NULL_ORDER = DefaultChoice(("first", "last"), "last")
TYPE_CHANGES = DefaultChoice(("promote", "rewrite"), "promote")
EVOLUTION_MODE = DefaultChoice(("declared", "auto"), "declared")
ON_DRIFT = DefaultChoice(("report", "revert"), "report")
CAST_ERRORS = DefaultChoice(ON_CAST_ERROR.choices, ON_CAST_ERROR.default)  # the rewriteColumnType job's
SSL_MODE = Choice(("disable", "allow", "prefer", "require", "verify-ca", "verify-full"))
URL_STYLE = Choice(("path", "vhost"))
LAUNCHER = Choice(("SparkApplication", "Job", "Local"))  # unset: the next level's (run_settings)
IMAGE_PULL_POLICY = Choice(
    ("Always", "IfNotPresent", "Never")
)  # a container's imagePullPolicy; unset: the next level's
SELECTOR_OPERATOR = Choice(("In", "NotIn", "Exists", "DoesNotExist"))
JOB_OPERATION = Choice(JOB_OPERATIONS)
DEFAULT_TIMEZONE = "UTC"  # a policy's window, and schedules without a window, are read in it
WINDOW_TIME_PATTERN = r"^([01]\d|2[0-3]):[0-5]\d$"  # HH:MM, 00:00 to 23:59
DEFAULT_SCHEMA = "main"  # a table's schema when its manifest names none (DuckDB's default schema)


@dataclass(frozen=True)
class ObjectRef:
    """Kubernetes identity of a manifest and where it came from (for messages)."""

    kind: str
    name: str
    namespace: str | None = None
    source: str | None = None  # file path, or "namespace/name" in a cluster
    generation: int | None = None
    labels: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        where = f" ({self.source})" if self.source else ""
        return f"{self.kind} {self.name}{where}"


@dataclass(frozen=True)
class SecretRef:
    name: str
    username_key: str = "username"
    password_key: str = "password"


@dataclass(frozen=True)
class PostgresSpec:
    host: str
    database: str
    port: int = 5432
    schema: str | None = None
    ssl_mode: str | None = None
    credentials: SecretRef | None = None


@dataclass(frozen=True)
class SqliteSpec:
    path: str


@dataclass(frozen=True)
class S3Spec:
    endpoint: str | None = None
    region: str | None = None
    url_style: str | None = None
    credentials: SecretRef | None = None


@dataclass(frozen=True)
class CatalogSpec:
    ref: ObjectRef
    backend: PostgresSpec | SqliteSpec
    data_path: str
    options: tuple[tuple[str, str], ...] = ()  # catalog keys, normalised values
    s3: S3Spec | None = None
    deletion_policy: str = DELETION_POLICY.default


@dataclass(frozen=True)
class SchemaSpec:
    ref: ObjectRef
    catalog: str
    name: str
    tags: tuple[tuple[str, str], ...] = ()  # 'comment' included
    deletion_policy: str = DELETION_POLICY.default


@dataclass(frozen=True)
class PartitionKey:
    column: str
    transform: str = TRANSFORM.default


@dataclass(frozen=True)
class SortKey:
    column: str
    direction: str = SORT_DIRECTION.default
    nulls: str = NULL_ORDER.default


@dataclass(frozen=True)
class EvolutionPolicy:
    allow_drop_columns: bool = False
    type_changes: str = TYPE_CHANGES.default
    mode: str = EVOLUTION_MODE.default
    on_drift: str = ON_DRIFT.default
    on_cast_error: str = CAST_ERRORS.default  # what a heavy type change's job does with a value that does not convert
    approved_plan: str | None = None


@dataclass(frozen=True)
class TableSpec:
    ref: ObjectRef
    catalog: str
    schema: str
    name: str
    columns: tuple[Field, ...]
    tags: tuple[tuple[str, str], ...] = ()  # 'comment' included
    partition_by: tuple[PartitionKey, ...] = ()
    sort_by: tuple[SortKey, ...] = ()
    options: tuple[tuple[str, str], ...] = ()
    evolution: EvolutionPolicy = field(default_factory=EvolutionPolicy)
    deletion_policy: str = DELETION_POLICY.default
    renamed_from: tuple[str, ...] = ()  # earlier names of the table

    @property
    def qualified_name(self) -> str:
        return f"{self.schema}.{self.name}"


@dataclass(frozen=True)
class Schedule:
    cron: str  # 5-field cron, validated
    when_small_files_above: int | None = None  # compaction also runs when a table has more


@dataclass(frozen=True)
class CompactionSettings:
    schedule: Schedule
    target_file_size: int | None = None  # bytes; None: the table's option (or DuckDB's 512 MiB)
    min_input_files: int = MIN_INPUT_FILES.default
    small_file_threshold: int | None = None
    sort: bool = SORT.default


@dataclass(frozen=True)
class RepartitionSettings:
    schedule: Schedule
    max_bytes_per_commit: int | None = None  # None: everything in one snapshot


@dataclass(frozen=True)
class DeleteRewriteSettings:
    schedule: Schedule
    delete_ratio_threshold: float | None = None  # None: the table's rewrite_delete_threshold option, else DuckDB's


@dataclass(frozen=True)
class ExpirySettings:
    schedule: Schedule
    older_than: str | None = None
    retain_last: int | None = None


@dataclass(frozen=True)
class CleanupSettings:
    schedule: Schedule
    older_than: str = CLEANUP_GRACE
    orphan_files: bool = ORPHAN_FILES.default
    dry_run: bool = DRY_RUN.default


@dataclass(frozen=True)
class Window:
    start: str  # HH:MM
    end: str
    timezone: str = DEFAULT_TIMEZONE


@dataclass(frozen=True)
class SparkSettings:
    """How runs run. Unset fields (None, empty) take the next level's: a job's over its
    policy's over the operator's defaults (``controller/run_settings.py``)."""

    launcher: str | None = None  # one of LAUNCHER
    image: str | None = None
    image_pull_policy: str | None = None  # one of IMAGE_PULL_POLICY
    service_account: str | None = None
    driver: tuple[tuple[str, str], ...] = ()
    executor: tuple[tuple[str, str], ...] = ()
    conf: tuple[tuple[str, str], ...] = ()
    in_process_below: int | None = None  # bytes of planned input under which a run skips Spark
    env: tuple[EnvVar, ...] = ()  # the programs' environment variables (model/run_env.py), merged by name


@dataclass(frozen=True)
class SelectorRequirement:
    """One ``matchExpressions`` entry of a Kubernetes label selector."""

    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class MaintenancePolicySpec:
    ref: ObjectRef
    catalog: str
    tables: tuple[str, ...] = ()  # schema.table
    table_selector: tuple[tuple[str, str], ...] = ()  # matchLabels
    table_selector_expressions: tuple[SelectorRequirement, ...] = ()  # matchExpressions
    compaction: CompactionSettings | None = None
    delete_rewrite: DeleteRewriteSettings | None = None
    inlined_data_flush: Schedule | None = None
    partition_rewrite: RepartitionSettings | None = None
    snapshot_expiry: ExpirySettings | None = None  # catalog-wide
    file_cleanup: CleanupSettings | None = None  # catalog-wide
    window: Window | None = None
    suspend: bool = SUSPEND.default
    max_jobs_per_catalog: int | None = None
    spark: SparkSettings | None = None
    history_limit: int = HISTORY_LIMIT.default  # as a CronJob's successfulJobsHistoryLimit
    dry_run: bool = False  # every run it starts is a dry run


@dataclass(frozen=True)
class JobSpec:
    ref: ObjectRef
    catalog: str
    table: str | None  # "schema.table"; None for catalog-wide operations
    operation: str
    params: dict[str, Any]  # the job function's keyword arguments (job_params.job_keywords)
    timeout_seconds: int | None = None
    retries: int = RETRIES.default
    spark: SparkSettings | None = None
    cancel: bool = False


Manifest = CatalogSpec | SchemaSpec | TableSpec | MaintenancePolicySpec | JobSpec
