"""DuckLakeTable: a table declared whole (columns, partitioning, sort order, evolution policy)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...model.maintenance_params import ON_CAST_ERROR
from ...model.names import fold, identifier_problem
from ...model.types import Field
from ..problems import Problems
from .columns import column, read_columns
from .common import (
    CATALOG_REF,
    DELETION,
    DELETION_POLICY,
    NAME_PATTERN,
    ObjectRef,
    comment,
    identifier,
    options,
    renamed_from,
    tags,
)
from .fields import Anything, Arr, Bool, DefaultChoice, Int, Str, obj
from .kind import AGE, READY_COLUMN, Kind
from .names import TABLE_KIND, TABLES
from .status import plan_status, status

TRANSFORM = DefaultChoice(("identity", "year", "month", "day", "hour"), "identity")
TRANSFORMS = TRANSFORM.values
SORT_DIRECTION = DefaultChoice(("asc", "desc"), "asc")
NULL_ORDER = DefaultChoice(("first", "last"), "last")
TYPE_CHANGES = DefaultChoice(("promote", "rewrite"), "promote")
EVOLUTION_MODE = DefaultChoice(("declared", "auto"), "declared")
ON_DRIFT = DefaultChoice(("report", "revert"), "report")
CAST_ERRORS = DefaultChoice(ON_CAST_ERROR.choices, ON_CAST_ERROR.default)  # the rewriteColumnType job's
DEFAULT_SCHEMA = "main"  # a table's schema when its manifest names none (DuckDB's default schema)
TEMPORAL = ("date", "timestamp", "timestamptz", "timestamp_s", "timestamp_ms", "timestamp_ns")


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


def _schema_name(p: Problems, o: Any, key: str, path: str) -> str:
    schema: str = p.get(o, key, path, str, default=DEFAULT_SCHEMA)
    problem = identifier_problem(schema, "schema")
    if problem:
        p.add(f"{path}.{key}", problem)
    return schema


def _on_cast_error(p: Problems, o: Any, key: str, path: str) -> str | None:
    # YAML reads an unquoted null as no value: onCastError: null means the word here
    if isinstance(o, Mapping) and key in o and o[key] is None:
        return "null"
    return p.enum(o, key, path, CAST_ERRORS.values, CAST_ERRORS.default)


def _partition_key(key: PartitionKey, path: str, before: Mapping[str, Any], p: Problems) -> None:
    """A partition key names a top-level column; a transform needs a date or a timestamp."""
    col = next((c for c in before["columns"] if fold(c.name) == fold(key.column)), None)
    if key.column and col is None:
        p.add(f"{path}.column", f"{key.column!r} is not a top-level column of the table")
    elif col is not None and key.transform != "identity" and col.type.name not in TEMPORAL:
        p.add(f"{path}.transform", f"{key.transform} needs a date or timestamp column; {key.column} is {col.type}")


def _sort_key(key: SortKey, path: str, before: Mapping[str, Any], p: Problems) -> None:
    if key.column and all(fold(c.name) != fold(key.column) for c in before["columns"]):
        p.add(f"{path}.column", f"{key.column!r} is not a top-level column of the table")


SPEC = obj(
    "Desired state of a DuckLake table; the operator plans and applies the difference as one snapshot.",
    {
        "catalogRef": CATALOG_REF,
        "schema": Str(desc="Schema of the table.", default=DEFAULT_SCHEMA, pattern=NAME_PATTERN, reader=_schema_name),
        "name": identifier("table", "Table name in the catalog."),
        "renamedFrom": renamed_from("Earlier names of the table: declares a rename."),
        "comment": comment("Table comment (DuckDB COMMENT ON TABLE)."),
        "tags": tags("Table tags."),
        "columns": Arr(
            desc="Columns in order. New columns go last (DuckLake appends); existing ones cannot be reordered.",
            items=column(3),
            reader=read_columns,
        ),
        "partitionBy": Arr(
            desc="Partition keys (top-level columns).",
            items=obj(
                "A partition key.",
                {
                    "column": Str(desc="Column name.", min_length=1),
                    "transform": Str(desc="identity, or year/month/day/hour of a date or timestamp.", choice=TRANSFORM),
                },
                required=("column",),
                to=PartitionKey,
            ),
            each=_partition_key,
        ),
        "sortBy": Arr(
            desc="Sort order used by inserts and compaction.",
            items=obj(
                "A sort key.",
                {
                    "column": Str(desc="Column name.", min_length=1),
                    "direction": Str(desc="asc or desc.", choice=SORT_DIRECTION),
                    "nulls": Str(desc="first or last.", choice=NULL_ORDER),
                },
                required=("column",),
                to=SortKey,
            ),
            each=_sort_key,
        ),
        "options": options("table"),
        "evolution": obj(
            "What the operator may change.",
            {
                "allowDropColumns": Bool(
                    desc="Allow dropping columns and fields (their data is no longer readable).", default=False
                ),
                "typeChanges": Str(
                    desc="promote: only lossless promotions (metadata only). rewrite: other casts by rewriting the "
                    "data.",
                    choice=TYPE_CHANGES,
                ),
                "mode": Str(
                    desc="declared: the manifest is the whole truth. auto: columns added by ingestion are kept.",
                    choice=EVOLUTION_MODE,
                ),
                "onDrift": Str(
                    desc="report or revert changes made outside the operator (checked on a timer).", choice=ON_DRIFT
                ),
                "onCastError": Str(
                    desc="With typeChanges: rewrite, what a value that does not convert to the new type does: fail "
                    "(the rewriteColumnType job fails naming it, nothing changes) or null (it becomes NULL). "
                    'Quote "null" in YAML.',
                    choice=CAST_ERRORS,
                    reader=_on_cast_error,
                ),
                "approvedPlan": Str(
                    desc="Hash of a blocked plan (status.pendingPlan.hash) to apply it anyway; void once the plan "
                    "changes.",
                    pattern=r"^[0-9a-f]{16}$",
                    reader=lambda p, o, key, path: p.get(o, key, path, str) or None,
                ),
            },
            to=EvolutionPolicy,
        ),
        "deletionPolicy": DELETION,
    },
    required=("catalogRef", "name", "columns"),
    allowed=(
        "catalogRef",
        "schema",
        "name",
        "comment",
        "tags",
        "columns",
        "partitionBy",
        "sortBy",
        "options",
        "evolution",
        "deletionPolicy",
        "renamedFrom",
    ),  # fmt: skip
    order=(
        "name",
        "schema",
        "columns",
        "partitionBy",
        "sortBy",
        "evolution",
        "catalogRef",
        "comment",
        "tags",
        "options",
        "deletionPolicy",
        "renamedFrom",
    ),  # fmt: skip
    to=TableSpec,
)
STATUS = status(
    {
        "tableId": Int(desc="table_id in the catalog."),
        "tableUuid": Str(desc="table_uuid in the catalog."),
        "snapshot": Int(desc="The latest snapshot that changed the table's definition or its files."),
        "schemaVersion": Int(desc="The catalog's schema_version when the table's layout last changed."),
        "columnCount": Int(desc="Number of top-level columns."),
        "columns": Arr(
            desc="Columns with their ids (field ids in Parquet).",
            items=obj(
                "A column.",
                {
                    "name": Str(desc="Path of the column."),
                    "id": Int(desc="column_id."),
                    "type": Str(desc="DuckLake type."),
                },
            ),
        ),
        **plan_status(),
        "drift": Arr(desc="Where the catalog differs from the manifest.", items=Str(desc="A difference.")),
        "heavyJob": obj(
            "The DuckLakeJob doing the plan (its heavy changes, typeChanges: rewrite, and the rest in the same "
            "snapshot), while there is one.",
            {
                "name": Str(desc="The DuckLakeJob."),
                "operation": Str(desc="Its operation."),
                "params": Anything(desc="Its params.", mapping=True),
                "state": Str(desc="Its state when last seen."),
            },
        ),
        "stats": obj(
            "Table health from the catalog.",
            {
                "rows": Int(desc="Rows in live files minus deletes."),
                "files": Int(desc="Live data files."),
                "bytes": Int(desc="Bytes in live data files."),
                "smallFiles": Int(desc="Files under the small-file threshold."),
                "deleteFiles": Int(desc="Live delete files."),
            },
        ),
    }
)
TABLE = Kind(
    TABLE_KIND,
    TABLES,
    ("dlt",),
    "A DuckLake table, declared: columns, partitioning, sort order, evolution policy.",
    SPEC,
    STATUS,
    (
        {"name": "Schema", "type": "string", "jsonPath": ".spec.schema"},
        {"name": "Snapshot", "type": "integer", "jsonPath": ".status.snapshot"},
        {"name": "Columns", "type": "integer", "jsonPath": ".status.columnCount"},
        {"name": "Files", "type": "integer", "jsonPath": ".status.stats.files"},
        READY_COLUMN,
        AGE,
    ),
)
