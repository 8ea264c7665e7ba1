"""The five CustomResourceDefinitions, defined once in Python.

``crds/*.yaml`` and ``charts/ducklake-operator/crds/*.yaml`` are generated from this module
(``python -m ducklake_operator.controller.crds``) and a test checks both are byte-identical
to it. Schemas are structural, with a description on every field (``kubectl explain``),
enums and patterns, and CEL rules for invariants a user can get wrong.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import yaml

from ..model.durations import DURATION_PATTERN
from ..model.job_params import params_help
from ..model.maintenance_params import JOB_SETTINGS, POLICY_SETTINGS, Param
from ..model.options import OPTIONS, SIZE_PATTERN
from ..model.run_env import NAME_PATTERN as ENV_NAME_PATTERN
from ..model.run_env import RESERVED as RESERVED_ENV
from ..model.spec import (
    CAST_ERRORS,
    CATALOGS,
    DEFAULT_SCHEMA,
    DEFAULT_TIMEZONE,
    DELETION_POLICY,
    EVOLUTION_MODE,
    GROUP,
    IMAGE_PULL_POLICY,
    JOB_OPERATION,
    JOBS,
    LAUNCHER,
    NULL_ORDER,
    ON_DRIFT,
    POLICIES,
    SCHEMAS,
    SORT_DIRECTION,
    SSL_MODE,
    TABLES,
    TRANSFORM,
    TYPE_CHANGES,
    URL_STYLE,
    VERSION,
    WINDOW_TIME_PATTERN,
    Choice,
)
from ..model.types import ALIASES, PRIMITIVES
from .launchers.render import CPU_PATTERN, JVM_MEMORY_PATTERN

Schema = dict[str, Any]


def string(
    desc: str,
    *,
    choice: Choice | None = None,
    pattern: str | None = None,
    default: str | None = None,
    min_length: int | None = None,
) -> Schema:
    s: Schema = {"type": "string", "description": desc}
    if choice is not None:
        s["enum"] = list(choice.values)
        default = choice.default
    if pattern:
        s["pattern"] = pattern
    if default is not None:
        s["default"] = default
    if min_length is not None:
        s["minLength"] = min_length
    return s


def integer(
    desc: str, *, minimum: float | None = None, maximum: float | None = None, default: int | None = None
) -> Schema:
    s: Schema = {"type": "integer", "description": desc}
    if minimum is not None:
        s["minimum"] = minimum
    if maximum is not None:
        s["maximum"] = maximum
    if default is not None:
        s["default"] = default
    return s


def boolean(desc: str, default: bool | None = None) -> Schema:
    s: Schema = {"type": "boolean", "description": desc}
    if default is not None:
        s["default"] = default
    return s


def obj(
    desc: str, props: dict[str, Schema], *, required: tuple[str, ...] = (), rules: list[tuple[str, str]] | None = None
) -> Schema:
    s: Schema = {"type": "object", "description": desc, "properties": props}
    if required:
        s["required"] = list(required)
    if rules:
        s["x-kubernetes-validations"] = [{"rule": r, "message": m} for r, m in rules]
    return s


def array(desc: str, items: Schema, *, max_items: int | None = None) -> Schema:
    s: Schema = {"type": "array", "description": desc, "items": items}
    if max_items is not None:
        s["maxItems"] = max_items
    return s


def string_map(desc: str) -> Schema:
    return {"type": "object", "description": desc, "additionalProperties": {"type": "string"}}


def any_value(desc: str) -> Schema:
    return {"description": desc, "x-kubernetes-preserve-unknown-fields": True}


def int_or_string(desc: str) -> Schema:
    return {"description": desc, "x-kubernetes-int-or-string": True}


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:] + "."


def case_insensitive(pattern: str) -> str:
    """A pattern of ours (Python, compiled with re.I) for the API server (Go's RE2)."""
    return "(?i)" + pattern


def setting(param: Param) -> Schema:
    """A maintenance setting from its one definition (``model/maintenance_params.py``)."""
    desc = _sentence(param.describe())
    if param.kind == "integer":
        return integer(desc, minimum=param.minimum, maximum=param.maximum, default=param.default)
    if param.kind == "boolean":
        return boolean(desc, param.default)
    if param.kind == "size":  # an integer is bytes; a string must read as a size
        return {**int_or_string(desc), "pattern": case_insensitive(SIZE_PATTERN)}
    if param.kind == "duration":
        return string(desc, pattern=case_insensitive(DURATION_PATTERN), default=param.default)
    if param.kind == "fraction":
        return {"type": "number", "description": desc, "minimum": param.minimum, "maximum": param.maximum}
    raise AssertionError(f"{param.kind} settings are job params only")


def settings(section: str) -> dict[str, Schema]:
    """Every setting of a policy section."""
    return {key: setting(param) for key, param in POLICY_SETTINGS[section].items()}


def secret_ref(what: str) -> Schema:
    return obj(
        f"Secret (same namespace) holding the {what}.",
        {
            "name": string("Name of the Secret.", min_length=1),
            "usernameKey": string("Key of the user name in the Secret.", default="username"),
            "passwordKey": string("Key of the password in the Secret.", default="password"),
        },
        required=("name",),
    )


def catalog_ref() -> Schema:
    return obj(
        "The DuckLakeCatalog (same namespace) this object belongs to. Immutable.",
        {"name": string("Name of the DuckLakeCatalog.", min_length=1)},
        required=("name",),
        rules=[("self == oldSelf", "catalogRef is immutable")],
    )


NAME_PATTERN = r"^[^\s\x00-\x1f](.*[^\s\x00-\x1f])?$"
TYPE_DOC = (
    "DuckLake type: " + ", ".join(PRIMITIVES) + ", decimal(P,S), or struct/list/map with fields/element/key+value. "
    "DuckDB spellings are accepted and normalised ("
    + ", ".join(sorted(a for a in ALIASES if " " not in a)[:12])
    + ", ...)."
)


def column(depth: int) -> Schema:
    """A column or struct field; nested ``fields`` are spelled out a few levels deep (CRD
    schemas cannot recurse), deeper levels are validated by the operator."""
    props: dict[str, Schema] = {
        "name": string(
            "Column name (case-insensitive in DuckDB; quotes and semicolons are fine).", pattern=NAME_PATTERN
        ),
        "type": string(TYPE_DOC, min_length=1),
        "nullable": boolean(
            "Whether NULL is allowed. Setting false on an existing column is a destructive change.", True
        ),
        "default": any_value(
            "Default for new rows and for rows written before the column existed: a constant, or "
            "{expression: <DuckDB SQL>} (only when the column is created with its table)."
        ),
        "comment": string("Column comment (DuckDB COMMENT ON COLUMN)."),
        "tags": {
            **string_map(
                "Column tags: must be empty. DuckDB 1.5.5 cannot read a table whose columns carry tags other "
                "than the comment (use comment, or the table's tags)."
            ),
            "maxProperties": 0,
        },
        "renamedFrom": array(
            "Earlier names of this column: declares a rename, keeping the column id and its data.",
            string("An earlier name."),
        ),
        "element": any_value("For type list: the element type (a type name, or a mapping with type and fields)."),
        "key": any_value("For type map: the key type."),
        "value": any_value("For type map: the value type (a type name, or a mapping with type and fields)."),
    }
    if depth > 0:
        props["fields"] = array("For type struct: its fields, same shape as columns.", column(depth - 1))
    else:
        props["fields"] = array("For type struct: its fields, same shape as columns.", any_value("A field."))
    return obj("A column: name, type and options.", props, required=("name", "type"))


def condition() -> Schema:
    return obj(
        "Standard Kubernetes condition.",
        {
            "type": string("Ready, Progressing, Blocked, Drifted, CatalogReachable, ..."),
            "status": string("True, False or Unknown.", choice=Choice(("True", "False", "Unknown"))),
            "reason": string("One-word CamelCase reason."),
            "message": string("Human-readable details."),
            "observedGeneration": integer("Generation the condition was computed for."),
            "lastTransitionTime": string("When the status last changed (RFC 3339)."),
        },
        required=("type", "status"),
    )


def status_common(extra: dict[str, Schema]) -> Schema:
    props = {
        "conditions": array("Current conditions.", condition()),
        "observedGeneration": integer("The spec generation last reconciled."),
        "kopf": {
            **any_value("The operator's bookkeeping (kopf): handler progress and the last spec handled."),
            "type": "object",
        },
    }
    props.update(extra)
    return obj("Observed state, written by the operator.", props)


def options_doc(scope: str) -> str:
    """The options that may be set at ``scope`` (``model/options.py``)."""
    names = [manifest for manifest, _, scopes in OPTIONS.values() if scope in scopes]
    return f"DuckLake options (ducklake_metadata) for this {'catalog' if scope == 'global' else scope}: " + (
        ", ".join(names) + "."
    )


DELETION = string(
    "Retain (default): deleting the resource leaves the lake untouched. Delete: the object is dropped "
    "from the catalog in one snapshot.",
    choice=DELETION_POLICY,
)


def catalog_schema() -> Schema:
    spec = obj(
        "Desired state of a DuckLake catalog.",
        {
            "metadata": obj(
                "Where the catalog's metadata lives: exactly one of postgres or sqlite.",
                {
                    "postgres": obj(
                        "A PostgreSQL database (for several writers).",
                        {
                            "host": string("Host name.", min_length=1),
                            "port": integer("Port.", minimum=1, maximum=65535, default=5432),
                            "database": string("Database name.", min_length=1),
                            "schema": string(
                                "Schema holding the ducklake_* tables (DuckDB's METADATA_SCHEMA); default public."
                            ),
                            "sslMode": string(
                                "libpq sslmode.",
                                choice=SSL_MODE,
                            ),
                            "credentialsSecretRef": secret_ref("database user and password"),
                        },
                        required=("host", "database"),
                    ),
                    "sqlite": obj(
                        "A SQLite file (single node; the embedded default).",
                        {"path": string("Path of the SQLite file (a PVC path in a cluster).", min_length=1)},
                        required=("path",),
                    ),
                },
                rules=[
                    ("has(self.postgres) != has(self.sqlite)", "spec.metadata needs exactly one of postgres or sqlite")
                ],
            ),
            "dataPath": string(
                "Where Parquet files live: s3://bucket/prefix/ or a local/PVC path. Must end with '/'.",
                pattern=r".*/$",
                min_length=2,
            ),
            "storage": obj(
                "Object store settings.",
                {
                    "s3": obj(
                        "S3 or S3-compatible storage.",
                        {
                            "endpoint": string("Endpoint URL (for S3-compatible stores)."),
                            "region": string("Region."),
                            "urlStyle": string("path or vhost.", choice=URL_STYLE),
                            "credentialsSecretRef": secret_ref("access key id (usernameKey) and secret (passwordKey)"),
                        },
                    )
                },
            ),
            "options": {**any_value(options_doc("global")), "type": "object"},
            "deletionPolicy": string(
                "Retain (default): deleting the resource leaves the lake untouched. Delete: once no "
                "DuckLakeSchema or DuckLakeTable uses the catalog, every file it refers to is deleted and "
                "its metadata tables are dropped (files no row refers to are left: run deleteOrphanFiles "
                "first).",
                choice=DELETION_POLICY,
            ),
        },
        required=("metadata", "dataPath"),
    )
    status = status_common(
        {
            "formatVersion": string("ducklake_metadata.version of the catalog."),
            "currentSnapshot": integer("Latest snapshot id."),
            "schemaVersion": integer("Latest schema_version."),
            "backend": string("postgres or sqlite."),
            "dataPath": string("The catalog's data path."),
        }
    )
    return {"spec": spec, "status": status}


def plan_status() -> dict[str, Schema]:
    """Status of the plans of a schema or a table (status.plan_fields writes them)."""
    return {
        "lastPlan": obj(
            "The changes last applied.",
            {
                "hash": string("Plan hash."),
                "snapshot": integer("Snapshot committed."),
                "changes": array("One line per change.", string("A change.")),
            },
        ),
        "pendingPlan": obj(
            "A plan that is blocked or cannot be applied.",
            {
                "hash": string("Plan hash; copy into spec.evolution.approvedPlan to approve."),
                "changes": array("One line per change.", string("A change.")),
            },
        ),
        "blockedChanges": array(
            "Changes refused and how to allow them.",
            obj(
                "A blocked change.",
                {
                    "change": string("The change."),
                    "reason": string("Why it is blocked."),
                    "allow": string("How to allow it."),
                },
            ),
        ),
    }


def schema_schema() -> Schema:
    spec = obj(
        "Desired state of a schema in a DuckLake catalog.",
        {
            "catalogRef": catalog_ref(),
            "name": string("Schema name in the catalog.", pattern=NAME_PATTERN),
            "comment": string("Schema comment."),
            "tags": string_map("Schema tags."),
            "deletionPolicy": DELETION,
        },
        required=("catalogRef", "name"),
    )
    status = status_common(
        {
            "schemaId": integer("schema_id in the catalog."),
            "snapshot": integer("The snapshot that created the schema."),
            **plan_status(),
        }
    )
    return {"spec": spec, "status": status}


def table_schema() -> Schema:
    spec = obj(
        "Desired state of a DuckLake table; the operator plans and applies the difference as one snapshot.",
        {
            "catalogRef": catalog_ref(),
            "schema": string("Schema of the table.", default=DEFAULT_SCHEMA, pattern=NAME_PATTERN),
            "name": string("Table name in the catalog.", pattern=NAME_PATTERN),
            "renamedFrom": array("Earlier names of the table: declares a rename.", string("An earlier name.")),
            "comment": string("Table comment (DuckDB COMMENT ON TABLE)."),
            "tags": string_map("Table tags."),
            "columns": array(
                "Columns in order. New columns go last (DuckLake appends); existing ones cannot be reordered.",
                column(3),
            ),
            "partitionBy": array(
                "Partition keys (top-level columns).",
                obj(
                    "A partition key.",
                    {
                        "column": string("Column name.", min_length=1),
                        "transform": string(
                            "identity, or year/month/day/hour of a date or timestamp.",
                            choice=TRANSFORM,
                        ),
                    },
                    required=("column",),
                ),
            ),
            "sortBy": array(
                "Sort order used by inserts and compaction.",
                obj(
                    "A sort key.",
                    {
                        "column": string("Column name.", min_length=1),
                        "direction": string("asc or desc.", choice=SORT_DIRECTION),
                        "nulls": string("first or last.", choice=NULL_ORDER),
                    },
                    required=("column",),
                ),
            ),
            "options": {**any_value(options_doc("table")), "type": "object"},
            "evolution": obj(
                "What the operator may change.",
                {
                    "allowDropColumns": boolean(
                        "Allow dropping columns and fields (their data is no longer readable).", False
                    ),
                    "typeChanges": string(
                        "promote: only lossless promotions (metadata only). rewrite: other casts by rewriting the data.",
                        choice=TYPE_CHANGES,
                    ),
                    "mode": string(
                        "declared: the manifest is the whole truth. auto: columns added by ingestion are kept.",
                        choice=EVOLUTION_MODE,
                    ),
                    "onDrift": string(
                        "report or revert changes made outside the operator (checked on a timer).",
                        choice=ON_DRIFT,
                    ),
                    "onCastError": string(
                        "With typeChanges: rewrite, what a value that does not convert to the new type does: fail "
                        "(the rewriteColumnType job fails naming it, nothing changes) or null (it becomes NULL). "
                        'Quote "null" in YAML.',
                        choice=CAST_ERRORS,
                    ),
                    "approvedPlan": string(
                        "Hash of a blocked plan (status.pendingPlan.hash) to apply it anyway; void once the plan changes.",
                        pattern=r"^[0-9a-f]{16}$",
                    ),
                },
            ),
            "deletionPolicy": DELETION,
        },
        required=("catalogRef", "name", "columns"),
    )
    status = status_common(
        {
            "tableId": integer("table_id in the catalog."),
            "tableUuid": string("table_uuid in the catalog."),
            "snapshot": integer("The latest snapshot that changed the table's definition or its files."),
            "schemaVersion": integer("The catalog's schema_version when the table's layout last changed."),
            "columnCount": integer("Number of top-level columns."),
            "columns": array(
                "Columns with their ids (field ids in Parquet).",
                obj(
                    "A column.",
                    {
                        "name": string("Path of the column."),
                        "id": integer("column_id."),
                        "type": string("DuckLake type."),
                    },
                ),
            ),
            **plan_status(),
            "drift": array("Where the catalog differs from the manifest.", string("A difference.")),
            "heavyJob": obj(
                "The DuckLakeJob doing the plan (its heavy changes, typeChanges: rewrite, and the rest in the same "
                "snapshot), while there is one.",
                {
                    "name": string("The DuckLakeJob."),
                    "operation": string("Its operation."),
                    "params": {**any_value("Its params."), "type": "object"},
                    "state": string("Its state when last seen."),
                },
            ),
            "stats": obj(
                "Table health from the catalog.",
                {
                    "rows": integer("Rows in live files minus deletes."),
                    "files": integer("Live data files."),
                    "bytes": integer("Bytes in live data files."),
                    "smallFiles": integer("Files under the small-file threshold."),
                    "deleteFiles": integer("Live delete files."),
                },
            ),
        }
    )
    return {"spec": spec, "status": status}


def policy_schema() -> Schema:
    schedule = string("Cron schedule (5 fields, in spec.window.timezone).", min_length=9)
    spec = obj(
        "Maintenance of the selected tables and of the catalog.",
        {
            "catalogRef": catalog_ref(),
            "tableSelector": {**any_value("Label selector over DuckLakeTables."), "type": "object"},
            "tables": array("Tables by name (schema.table).", string("schema.table")),
            "compaction": obj("Merge small files.", {"schedule": schedule, **settings("compaction")}),
            "deleteRewrite": obj(
                "Rewrite files whose rows are mostly deleted.", {"schedule": schedule, **settings("deleteRewrite")}
            ),
            "inlinedDataFlush": obj(
                "Move inlined rows into Parquet.", {"schedule": schedule, **settings("inlinedDataFlush")}
            ),
            "partitionRewrite": obj(
                "Rewrite files written under older partition specs.",
                {"schedule": schedule, **settings("partitionRewrite")},
            ),
            "snapshotExpiry": obj(
                "Catalog-wide: expire old snapshots (give olderThan and/or retainLast).",
                {"schedule": schedule, **settings("snapshotExpiry")},
                rules=[("has(self.olderThan) || has(self.retainLast)", "needs olderThan and/or retainLast")],
            ),
            "fileCleanup": obj(
                "Catalog-wide: delete files no longer referenced.", {"schedule": schedule, **settings("fileCleanup")}
            ),
            "window": obj(
                "No run starts outside this window.",
                {
                    "start": string("HH:MM.", pattern=WINDOW_TIME_PATTERN),
                    "end": string("HH:MM.", pattern=WINDOW_TIME_PATTERN),
                    "timezone": string("IANA time zone.", default=DEFAULT_TIMEZONE),
                },
            ),
            **settings("spec"),
            "concurrency": obj("Limits.", settings("concurrency")),
            "spark": spark_settings("How this policy's runs run (a job's own spark block overrides it)."),
        },
        required=("catalogRef",),
        rules=[("!(has(self.tableSelector) && has(self.tables))", "give tableSelector or tables, not both")],
    )
    status = status_common(
        {"operations": {**any_value("Last and next run per operation and table."), "type": "object"}}
    )
    return {"spec": spec, "status": status}


def _params_description() -> str:
    """The parameters of each operation, from their one definition (checked at apply time)."""
    lines = ["Operation parameters (checked by the operator, with the field path of each problem):"]
    for name, params in params_help():
        lines.append(f"{name}:" + ("" if params else " none."))
        lines += [f"- {key}: {text}." for key, text in params]
    return "\n".join(lines)


def jvm_memory(example: str) -> Schema:
    return {**string(f"A JVM memory size as Spark reads it, e.g. {example} (no unit: MiB)."),
            "pattern": case_insensitive(JVM_MEMORY_PATTERN)}  # fmt: skip


def cpus(whose: str, more: str = "") -> Schema:
    text = f'CPUs {whose} requests, e.g. 2, "0.5" or 500m (never limited: it uses what the node has spare).{more}'
    return {**int_or_string(text), "pattern": CPU_PATTERN, "minimum": 1}


def spark_settings(desc: str) -> Schema:
    """The ``spark`` block of a policy or a job: unset fields take the next level's."""
    return obj(
        desc,
        {
            "launcher": string(
                "Local (a child process of the operator), Job (a batch/v1 Job running spark-submit in client mode) "
                "or SparkApplication (the Kubeflow Spark Operator). Default: the operator's (chart value "
                "jobs.spark.launcher).",
                choice=LAUNCHER,
            ),
            "image": string("Image with the job program and PySpark; default: the operator's own image."),
            "imagePullPolicy": string(
                "Pull policy of the image, for the driver and the executors; default: the operator's (chart value "
                "image.pullPolicy), else Kubernetes' (Always for :latest, else IfNotPresent).",
                choice=IMAGE_PULL_POLICY,
            ),
            "serviceAccount": string("Service account of the driver (and executors)."),
            "driver": obj(
                "Driver resources.",
                {"cores": cpus("the driver's pod"), "memory": jvm_memory("2g")},
            ),
            "executor": obj(
                "Executor resources.",
                {
                    "instances": integer("Executors.", minimum=0),
                    "cores": cpus("each executor's pod", " Its task slots are the whole CPUs in it, at least 1."),
                    "memory": jvm_memory("4g"),
                },
            ),
            "conf": string_map("Extra Spark configuration."),
            "env": env_list(),
            "inProcessBelow": {
                **int_or_string(
                    "Run in-process, without starting Spark, when the planned input is smaller than this (e.g. "
                    "64MB); off when unset."
                ),
                "pattern": case_insensitive(SIZE_PATTERN),
            },
        },
    )


def env_list() -> Schema:
    """``spark.env``: a container's ``env`` as users write it, one entry per name."""
    reserved = ", ".join(RESERVED_ENV)
    entry = obj(
        "An environment variable: a value, or a key of a Secret in the run's namespace.",
        {
            "name": {**string("Its name.", pattern=ENV_NAME_PATTERN, min_length=1), "maxLength": 256},
            "value": string("Its value, as the program gets it ($(NAME) is not expanded)."),
            "valueFrom": obj(
                "Where its value comes from.",
                {
                    "secretKeyRef": obj(
                        "A key of a Secret in the run's namespace (the Local launcher reads it as the operator: "
                        "grant it with the chart's rbac.catalogSecrets).",
                        {"name": string("The Secret.", min_length=1), "key": string("Its key.", min_length=1)},
                        required=("name", "key"),
                    )
                },
                required=("secretKeyRef",),
            ),
        },
        required=("name",),
        rules=[
            ("!(has(self.value) && has(self.valueFrom))", "give value or valueFrom, not both"),
            (
                f"!(self.name in {json.dumps(list(RESERVED_ENV))})",
                f"the operator sets this variable itself ({reserved}): a run's credentials come from its catalog's "
                "Secrets",
            ),
        ],  # fmt: skip
    )
    return {
        **array(
            "Environment variables of the run's programs, on the driver and the executors (the Local launcher's "
            "process): a job's replace its policy's and the operator's (chart value jobs.spark.env) of the same "
            f"name. Names the operator sets are refused: {reserved}.",
            entry,
            max_items=100,
        ),
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
    }


JOB_FIELDS_FIXED = ("catalogRef", "table", "operation", "params", "timeout", "retries", "spark")


def _unchanged(name: str) -> str:
    return f"has(self.{name}) == has(oldSelf.{name}) && (!has(self.{name}) || self.{name} == oldSelf.{name})"


def job_schema() -> Schema:
    spec = obj(
        "One maintenance run. Immutable once created.",
        {
            "catalogRef": catalog_ref(),
            "table": string("schema.table (not for catalog-wide operations).", pattern=r"^[^.]+\..+$"),
            "operation": string("What to run.", choice=JOB_OPERATION),
            "params": {**any_value(_params_description()), "type": "object"},
            "timeout": {
                **int_or_string("Deadline: seconds, or a duration such as 30m."),
                "pattern": case_insensitive(DURATION_PATTERN),
            },
            "retries": setting(JOB_SETTINGS["retries"]),
            "spark": spark_settings("How this run runs; overrides its policy's spark block."),
            "cancel": boolean("Set true to cancel the run (deleting the DuckLakeJob cancels it too).", False),
        },
        required=("catalogRef", "operation"),
        rules=[
            (" && ".join(_unchanged(f) for f in JOB_FIELDS_FIXED), "a DuckLakeJob is immutable but for spec.cancel"),
            ("!has(oldSelf.cancel) || !oldSelf.cancel || self.cancel", "a cancelled run stays cancelled"),
        ],
    )
    status = status_common(
        {
            "state": string(
                "Pending, Running, Succeeded, Failed or Cancelled.",
                choice=Choice(("Pending", "Running", "Succeeded", "Failed", "Cancelled")),
            ),
            "progress": string("Human-readable progress."),
            "attempts": integer("Attempts so far."),
            "startTime": string("Start (RFC 3339)."),
            "completionTime": string("End (RFC 3339)."),
            "deadline": string("Deadline (RFC 3339)."),
            "baseSnapshot": integer("Snapshot planned against."),
            "committedSnapshot": integer("Snapshot committed."),
            "filesRead": integer("Files read."),
            "filesWritten": integer("Files written."),
            "bytesRead": integer("Bytes read."),
            "bytesWritten": integer("Bytes written."),
            "rowsRead": integer("Rows read."),
            "rowsWritten": integer("Rows written."),
            "before": {**any_value("Table health before."), "type": "object"},
            "after": {**any_value("Table health after."), "type": "object"},
            "message": string("What happened, or what the run waits for."),
            "waitingFor": string("Why a Pending run has not started (a lock, a catalog slot)."),
            "nextAttemptAt": string("When a failed attempt is retried (RFC 3339)."),
            "duration": string("How long the run took, from its first attempt's start to its end (any end)."),
            "ranOn": string("spark or in-process."),
            "locks": array("Leases the run holds (coordination.k8s.io).", string("A Lease name.")),
            "launched": obj(
                "What was launched.",
                {
                    "kind": string("SparkApplication, Job or Local."),
                    "name": string("Its name."),
                    "detail": {**any_value("Launcher specifics (the Local launcher's process)."), "type": "object"},
                },
            ),
            "attemptFailure": obj(
                "Why the current attempt failed while its objects still ran (a pod that cannot start, or be "
                "scheduled): the controller stops them, then ends or retries the run with this reason.",
                {
                    "message": string("What failed, and what to do."),
                    "retriable": boolean("Whether another attempt could fare better."),
                },
            ),
            "jobReport": {
                **any_value("The job program's final report (written by the job program)."),
                "type": "object",
            },  # fmt: skip
        }
    )
    return {"spec": spec, "status": status}


READY = {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'}
AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}

KINDS: list[dict[str, Any]] = [
    {
        "kind": "DuckLakeCatalog",
        "plural": CATALOGS,
        "short": ["dlc", "dlcat"],
        "schema": catalog_schema,
        "description": "A DuckLake catalog: metadata database and data path.",
        "columns": [
            {"name": "Snapshot", "type": "integer", "jsonPath": ".status.currentSnapshot"},
            {"name": "Format", "type": "string", "jsonPath": ".status.formatVersion"},
            READY,
            AGE,
        ],
    },
    {
        "kind": "DuckLakeSchema",
        "plural": SCHEMAS,
        "short": ["dls"],
        "schema": schema_schema,
        "description": "A schema in a DuckLake catalog.",
        "columns": [
            {"name": "Catalog", "type": "string", "jsonPath": ".spec.catalogRef.name"},
            {"name": "Schema", "type": "string", "jsonPath": ".spec.name"},
            READY,
            AGE,
        ],
    },
    {
        "kind": "DuckLakeTable",
        "plural": TABLES,
        "short": ["dlt"],
        "schema": table_schema,
        "description": "A DuckLake table, declared: columns, partitioning, sort order, evolution policy.",
        "columns": [
            {"name": "Schema", "type": "string", "jsonPath": ".spec.schema"},
            {"name": "Snapshot", "type": "integer", "jsonPath": ".status.snapshot"},
            {"name": "Columns", "type": "integer", "jsonPath": ".status.columnCount"},
            {"name": "Files", "type": "integer", "jsonPath": ".status.stats.files"},
            READY,
            AGE,
        ],
    },
    {
        "kind": "DuckLakeMaintenancePolicy",
        "plural": POLICIES,
        "short": ["dlmp"],
        "schema": policy_schema,
        "description": "Scheduled maintenance of DuckLake tables and of their catalog.",
        "columns": [
            {"name": "Catalog", "type": "string", "jsonPath": ".spec.catalogRef.name"},
            {"name": "Suspended", "type": "boolean", "jsonPath": ".spec.suspend"},
            READY,
            AGE,
        ],
    },
    {
        "kind": "DuckLakeJob",
        "plural": JOBS,
        "short": ["dlj"],
        "schema": job_schema,
        "description": "One maintenance run (compaction, expiry, cleanup, ...).",
        "columns": [
            {"name": "Table", "type": "string", "jsonPath": ".spec.table"},
            {"name": "Operation", "type": "string", "jsonPath": ".spec.operation"},
            {"name": "State", "type": "string", "jsonPath": ".status.state"},
            {"name": "Progress", "type": "string", "jsonPath": ".status.progress"},
            {"name": "Started", "type": "date", "jsonPath": ".status.startTime"},
            {"name": "Duration", "type": "string", "jsonPath": ".status.duration"},
            {"name": "Message", "type": "string", "jsonPath": ".status.message"},
        ],
    },
]


def crd(entry: dict[str, Any]) -> dict[str, Any]:
    parts = entry["schema"]()
    schema = {
        "type": "object",
        "description": entry["description"],
        "properties": {
            "apiVersion": string("API version: ducklake.dev/v1alpha1."),
            "kind": string("Kind of the object."),
            "metadata": {"type": "object"},  # the API server allows nothing more here
            "spec": parts["spec"],
            "status": parts["status"],
        },
        "required": ["spec"],
    }
    singular = entry["kind"].lower()
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{entry['plural']}.{GROUP}",
            "labels": {"app.kubernetes.io/part-of": "ducklake-operator"},
        },
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": entry["kind"],
                "listKind": entry["kind"] + "List",
                "plural": entry["plural"],
                "singular": singular,
                "shortNames": entry["short"],
                "categories": ["ducklake"],
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": entry["columns"],
                }
            ],
        },
    }


def render(entry: dict[str, Any]) -> str:
    header = "# Generated by `python -m ducklake_operator.controller.crds`; do not edit.\n"
    return header + yaml.safe_dump(crd(entry), sort_keys=False, width=120)


def file_name(entry: dict[str, Any]) -> str:
    return f"{GROUP}_{entry['plural']}.yaml"


def write_all(root: str) -> list[str]:
    written = []
    for target in ("crds", os.path.join("charts", "ducklake-operator", "crds")):
        os.makedirs(os.path.join(root, target), exist_ok=True)
        for entry in KINDS:
            path = os.path.join(root, target, file_name(entry))
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(render(entry))
            written.append(path)
    return written


if __name__ == "__main__":
    for p in write_all(sys.argv[1] if len(sys.argv) > 1 else "."):
        print(p)
