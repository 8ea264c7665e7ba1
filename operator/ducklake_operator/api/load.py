"""Manifests (YAML files or kopf bodies) -> typed specs.

``parse_manifest`` is pure: a dict in, a spec out, or one ``SpecError`` listing every
problem with its field path (``spec.columns[3].type: 'int65' is not a DuckLake type; did
you mean int64?``). ``load_paths`` is the file-reading edge used by the CLI.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, overload
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from croniter import croniter

from ..errors import SpecError
from ..model.defaults import encode_default
from ..model.durations import parse_duration
from ..model.job_params import OPERATIONS, job_keywords
from ..model.maintenance_params import JOB_SETTINGS, POLICY_SETTINGS, Param
from ..model.names import fold, identifier_problem
from ..model.options import normalize_option, parse_size
from ..model.run_env import read_env
from ..model.spec import (
    API_VERSION,
    CAST_ERRORS,
    DEFAULT_SCHEMA,
    DEFAULT_TIMEZONE,
    DELETION_POLICY,
    EVOLUTION_MODE,
    IMAGE_PULL_POLICY,
    JOB_OPERATION,
    KINDS,
    LAUNCHER,
    NULL_ORDER,
    ON_DRIFT,
    SELECTOR_OPERATOR,
    SORT_DIRECTION,
    SSL_MODE,
    TRANSFORM,
    TYPE_CHANGES,
    URL_STYLE,
    WINDOW_TIME_PATTERN,
    CatalogSpec,
    Choice,
    CleanupSettings,
    CompactionSettings,
    DefaultChoice,
    DeleteRewriteSettings,
    EvolutionPolicy,
    ExpirySettings,
    JobSpec,
    MaintenancePolicySpec,
    Manifest,
    ObjectRef,
    PartitionKey,
    PostgresSpec,
    RepartitionSettings,
    S3Spec,
    Schedule,
    SchemaSpec,
    SecretRef,
    SelectorRequirement,
    SortKey,
    SparkSettings,
    SqliteSpec,
    TableSpec,
    Window,
)
from ..model.types import DuckLakeType, Field, ListOf, MapOf, Struct, parse_type

TEMPORAL = ("date", "timestamp", "timestamptz", "timestamp_s", "timestamp_ms", "timestamp_ns")


class _Problems:
    """Collects problems with field paths; raises them all at once."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(f"{path}: {message}")

    def keys(self, obj: Mapping[str, Any], path: str, allowed: Iterable[str]) -> None:
        allowed = tuple(allowed)
        for key in obj:
            if key not in allowed:
                self.add(f"{path}.{key}", f"unknown field; allowed: {', '.join(allowed)}")

    def get(
        self, obj: Any, key: str, path: str, kind: type | tuple[type, ...], required: bool = False, default: Any = None
    ) -> Any:
        if not isinstance(obj, Mapping):
            return default
        if key not in obj or obj[key] is None:
            if required:
                self.add(f"{path}.{key}", "is required")
            return default
        value = obj[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            self.add(f"{path}.{key}", f"must be {_article(names)}, got {type(value).__name__} {value!r}")
            return default
        return value

    @overload
    def enum(self, obj: Any, key: str, path: str, choice: DefaultChoice) -> str: ...
    @overload
    def enum(self, obj: Any, key: str, path: str, choice: Choice) -> str | None: ...
    def enum(self, obj: Any, key: str, path: str, choice: Choice) -> str | None:
        """One of ``choice``'s words; its default when absent (or wrong)."""
        value = self.get(obj, key, path, str)
        if value is None:
            return choice.default
        if value not in choice.values:
            self.add(f"{path}.{key}", f"{value!r} is not one of {', '.join(choice.values)}")
            return choice.default
        return value

    def setting(self, obj: Any, key: str, path: str, param: Param) -> Any:
        """A maintenance setting checked by its one definition; its default when absent."""
        if not isinstance(obj, Mapping) or obj.get(key) is None:
            return param.default
        try:
            return param.parse(obj[key])
        except ValueError as exc:
            self.add(f"{path}.{key}", str(exc))
            return param.default

    def settings(self, obj: Any, path: str, section: str) -> dict[str, Any]:
        """Every setting of a policy section, by field name."""
        return {key: self.setting(obj, key, path, param) for key, param in POLICY_SETTINGS[section].items()}


def _article(name: str) -> str:
    return {"dict": "a mapping", "list": "a list", "str": "a string", "int": "an integer", "bool": "true or false"}.get(
        name, name
    )


# ------------------------------------------------------------------ entry points


def parse_manifest(doc: Mapping[str, Any], source: str | None = None, base_dir: str | None = None) -> Manifest:
    """One manifest dict -> spec; SpecError lists every problem found."""
    problems = _Problems()
    if not isinstance(doc, Mapping):
        raise SpecError("a manifest must be a mapping", source=source)
    kind = doc.get("kind")
    meta = doc.get("metadata") or {}
    name = meta.get("name") if isinstance(meta, Mapping) else None
    ref = ObjectRef(
        kind=str(kind),
        name=str(name),
        namespace=meta.get("namespace") if isinstance(meta, Mapping) else None,
        source=source,
        generation=meta.get("generation") if isinstance(meta, Mapping) else None,
        labels=tuple(sorted((meta.get("labels") or {}).items())) if isinstance(meta, Mapping) else (),
    )
    if kind not in KINDS:
        raise SpecError(f"kind {kind!r} is not one of {', '.join(KINDS)}", source=source)
    if doc.get("apiVersion") not in (None, API_VERSION):
        problems.add("apiVersion", f"{doc.get('apiVersion')!r} is not {API_VERSION}")
    if not name or not isinstance(name, str):
        problems.add("metadata.name", "is required")
    spec = doc.get("spec")
    if not isinstance(spec, Mapping):
        problems.add("spec", "is required and must be a mapping")
        raise SpecError(problems.items, source=str(ref))
    parsers: dict[str, Callable[[ObjectRef, Mapping[str, Any], _Problems, str | None], Manifest]] = {
        "DuckLakeCatalog": _catalog,
        "DuckLakeSchema": _schema,
        "DuckLakeTable": _table,
        "DuckLakeMaintenancePolicy": _policy,
        "DuckLakeJob": _job,
    }
    result = parsers[kind](ref, spec, problems, base_dir)
    if problems.items:
        raise SpecError(problems.items, source=str(ref))
    return result


def load_paths(paths: Iterable[str]) -> list[Manifest]:
    """Read manifests from files and directories (``*.yaml``/``*.yml``, multi-document).

    Relative paths inside a manifest (sqlite path, local dataPath) are resolved against
    the directory of the file that holds it. Every problem of every file is reported.
    """
    out: list[Manifest] = []
    problems: list[str] = []
    for path in _files(paths):
        try:
            with open(path, encoding="utf-8") as fh:
                docs = [d for d in yaml.safe_load_all(fh) if d is not None]
        except (OSError, yaml.YAMLError) as exc:
            problems.append(f"{path}: {str(exc).splitlines()[0]}")
            continue
        for i, doc in enumerate(docs):
            source = path if len(docs) == 1 else f"{path}#{i + 1}"
            try:
                out.append(parse_manifest(doc, source, os.path.dirname(os.path.abspath(path))))
            except SpecError as exc:
                problems.append(str(exc))
    if problems:
        raise SpecError(problems)
    _check_unique(out)
    return out


def _files(paths: Iterable[str]) -> list[str]:
    files: list[str] = []
    for p in paths:
        if os.path.isdir(p):  # not recursive, as kubectl apply -f DIR
            files += [os.path.join(p, n) for n in sorted(os.listdir(p)) if n.endswith((".yaml", ".yml"))]
        elif os.path.exists(p):
            files.append(p)
        else:
            raise SpecError(f"{p}: no such file or directory")
    return files


def _check_unique(manifests: list[Manifest]) -> None:
    seen: dict[tuple[str, str], str] = {}
    problems = []
    for m in manifests:
        key = (m.ref.kind, m.ref.name)
        if key in seen:
            problems.append(f"{m.ref}: another {m.ref.kind} is also named {m.ref.name!r} ({seen[key]})")
        seen[key] = m.ref.source or ""
    tables: dict[tuple[str, str, str], TableSpec] = {}
    for m in manifests:
        if isinstance(m, TableSpec):
            table = (m.catalog, fold(m.schema), fold(m.name))
            if table in tables:
                problems.append(f"{m.ref}: table {m.qualified_name} is also declared by {tables[table].ref}")
            tables[table] = m
    if problems:
        raise SpecError(problems)


# ------------------------------------------------------------------ kinds


def _catalog(ref: ObjectRef, spec: Mapping[str, Any], p: _Problems, base_dir: str | None) -> CatalogSpec:
    p.keys(spec, "spec", ("metadata", "dataPath", "storage", "options", "deletionPolicy"))
    meta = p.get(spec, "metadata", "spec", dict, required=True, default={})
    backends = [k for k in ("postgres", "sqlite") if k in meta]
    p.keys(meta, "spec.metadata", ("postgres", "sqlite"))
    backend: PostgresSpec | SqliteSpec = SqliteSpec("catalog.sqlite")
    if len(backends) != 1:
        p.add("spec.metadata", "needs exactly one of postgres or sqlite")
    elif backends[0] == "sqlite":
        sq = p.get(meta, "sqlite", "spec.metadata", dict, default={})
        p.keys(sq, "spec.metadata.sqlite", ("path",))
        backend = SqliteSpec(
            _local(p.get(sq, "path", "spec.metadata.sqlite", str, required=True, default=""), base_dir)
        )
    else:
        pg = p.get(meta, "postgres", "spec.metadata", dict, default={})
        path = "spec.metadata.postgres"
        p.keys(pg, path, ("host", "port", "database", "schema", "sslMode", "credentialsSecretRef"))
        backend = PostgresSpec(
            host=p.get(pg, "host", path, str, required=True, default=""),
            database=p.get(pg, "database", path, str, required=True, default=""),
            port=p.get(pg, "port", path, int, default=5432),
            schema=p.get(pg, "schema", path, str),
            ssl_mode=p.enum(pg, "sslMode", path, SSL_MODE),
            credentials=_secret(pg, path, p),
        )
    data_path = p.get(spec, "dataPath", "spec", str, required=True, default="")
    if data_path and not data_path.endswith("/"):
        p.add("spec.dataPath", f"{data_path!r} must end with '/'")
    if data_path and "://" not in data_path:
        data_path = _local(data_path, base_dir)
        data_path = data_path if data_path.endswith("/") else data_path + "/"
    storage = p.get(spec, "storage", "spec", dict, default={})
    p.keys(storage, "spec.storage", ("s3",))
    s3 = None
    if "s3" in storage:
        raw = p.get(storage, "s3", "spec.storage", dict, default={})
        p.keys(raw, "spec.storage.s3", ("endpoint", "region", "urlStyle", "credentialsSecretRef"))
        s3 = S3Spec(
            p.get(raw, "endpoint", "spec.storage.s3", str),
            p.get(raw, "region", "spec.storage.s3", str),
            p.enum(raw, "urlStyle", "spec.storage.s3", URL_STYLE),
            _secret(raw, "spec.storage.s3", p),
        )
    return CatalogSpec(
        ref,
        backend,
        data_path,
        _options(spec, p, "global"),
        s3,
        p.enum(spec, "deletionPolicy", "spec", DELETION_POLICY),
    )


def _schema(ref: ObjectRef, spec: Mapping[str, Any], p: _Problems, base_dir: str | None) -> SchemaSpec:
    p.keys(spec, "spec", ("catalogRef", "name", "comment", "tags", "deletionPolicy"))
    name = _identifier(spec, "name", "spec", p, "schema")
    return SchemaSpec(
        ref,
        _catalog_ref(spec, p),
        name,
        _tags(spec, "spec", p),
        p.enum(spec, "deletionPolicy", "spec", DELETION_POLICY),
    )


def _table(ref: ObjectRef, spec: Mapping[str, Any], p: _Problems, base_dir: str | None) -> TableSpec:
    p.keys(
        spec,
        "spec",
        (
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
        ),
    )
    name = _identifier(spec, "name", "spec", p, "table")
    schema = p.get(spec, "schema", "spec", str, default=DEFAULT_SCHEMA)
    problem = identifier_problem(schema, "schema")
    if problem:
        p.add("spec.schema", problem)
    raw_columns = p.get(spec, "columns", "spec", list, required=True, default=[])
    if not raw_columns and "columns" in spec:
        p.add("spec.columns", "a table needs at least one column")
    columns = _fields(raw_columns, "spec.columns", p)
    top = {fold(c.name): c for c in columns}

    partition = []
    for i, raw in enumerate(p.get(spec, "partitionBy", "spec", list, default=[])):
        path = f"spec.partitionBy[{i}]"
        p.keys(raw, path, ("column", "transform"))
        column = p.get(raw, "column", path, str, required=True, default="")
        transform = p.enum(raw, "transform", path, TRANSFORM)
        col = top.get(fold(column))
        if column and col is None:
            p.add(f"{path}.column", f"{column!r} is not a top-level column of the table")
        elif col is not None and transform != "identity" and col.type.name not in TEMPORAL:
            p.add(f"{path}.transform", f"{transform} needs a date or timestamp column; {column} is {col.type}")
        partition.append(PartitionKey(column, transform))
    sort = []
    for i, raw in enumerate(p.get(spec, "sortBy", "spec", list, default=[])):
        path = f"spec.sortBy[{i}]"
        p.keys(raw, path, ("column", "direction", "nulls"))
        column = p.get(raw, "column", path, str, required=True, default="")
        if column and fold(column) not in top:
            p.add(f"{path}.column", f"{column!r} is not a top-level column of the table")
        sort.append(
            SortKey(
                column,
                p.enum(raw, "direction", path, SORT_DIRECTION),
                p.enum(raw, "nulls", path, NULL_ORDER),
            )
        )

    evo = p.get(spec, "evolution", "spec", dict, default={})
    p.keys(evo, "spec.evolution", ("allowDropColumns", "typeChanges", "mode", "onDrift", "onCastError", "approvedPlan"))
    evolution = EvolutionPolicy(
        allow_drop_columns=p.get(evo, "allowDropColumns", "spec.evolution", bool, default=False),
        type_changes=p.enum(evo, "typeChanges", "spec.evolution", TYPE_CHANGES),
        mode=p.enum(evo, "mode", "spec.evolution", EVOLUTION_MODE),
        on_drift=p.enum(evo, "onDrift", "spec.evolution", ON_DRIFT),
        # YAML reads an unquoted null as no value: onCastError: null means the word here
        on_cast_error="null"
        if "onCastError" in evo and evo["onCastError"] is None
        else p.enum(evo, "onCastError", "spec.evolution", CAST_ERRORS),
        approved_plan=p.get(evo, "approvedPlan", "spec.evolution", str) or None,
    )
    return TableSpec(
        ref=ref,
        catalog=_catalog_ref(spec, p),
        schema=schema,
        name=name,
        columns=columns,
        tags=_tags(spec, "spec", p),
        partition_by=tuple(partition),
        sort_by=tuple(sort),
        options=_options(spec, p, "table"),
        evolution=evolution,
        deletion_policy=p.enum(spec, "deletionPolicy", "spec", DELETION_POLICY),
        renamed_from=_renamed_from(spec, "spec", p),
    )


def _policy(ref: ObjectRef, spec: Mapping[str, Any], p: _Problems, base_dir: str | None) -> MaintenancePolicySpec:
    p.keys(
        spec,
        "spec",
        (
            "catalogRef",
            "tableSelector",
            "tables",
            "compaction",
            "deleteRewrite",
            "inlinedDataFlush",
            "partitionRewrite",
            "snapshotExpiry",
            "fileCleanup",
            "window",
            "suspend",
            "concurrency",
            "spark",
            "historyLimit",
            "dryRun",
        ),
    )
    if "tableSelector" in spec and "tables" in spec:
        p.add("spec", "give tableSelector or tables, not both")
    tables = tuple(p.get(spec, "tables", "spec", list, default=[]))
    for i, t in enumerate(tables):
        if not isinstance(t, str) or "." not in t:
            p.add(f"spec.tables[{i}]", f"{t!r} is not schema.table")
    selector = p.get(spec, "tableSelector", "spec", dict, default={})
    p.keys(selector, "spec.tableSelector", ("matchLabels", "matchExpressions"))
    labels = p.get(selector, "matchLabels", "spec.tableSelector", dict, default={})
    expressions = _selector_expressions(p.get(selector, "matchExpressions", "spec.tableSelector", list, default=[]), p)

    def section(name: str) -> tuple[dict[str, Any], Schedule] | None:
        """A section's settings (checked, defaulted) and its schedule; None when absent."""
        raw = p.get(spec, name, "spec", dict)
        if raw is None:
            return None
        p.keys(raw, f"spec.{name}", ("schedule", *POLICY_SETTINGS[name]))
        cron = p.get(raw, "schedule", f"spec.{name}", str, required=True, default="0 0 * * *")
        if not croniter.is_valid(cron) or len(cron.split()) != 5:
            p.add(f"spec.{name}.schedule", f"{cron!r} is not a 5-field cron schedule (minute hour day month weekday)")
        settings = p.settings(raw, f"spec.{name}", name)
        return settings, Schedule(cron, settings.pop("whenSmallFilesAbove", None))

    compaction = delete_rewrite = expiry = cleanup = None
    if (found := section("compaction")) is not None:
        c, schedule = found
        compaction = CompactionSettings(
            schedule, c["targetFileSize"], c["minInputFiles"], c["smallFileThreshold"], c["sort"]
        )
    if (found := section("deleteRewrite")) is not None:
        delete_rewrite = DeleteRewriteSettings(found[1], found[0]["deleteRatioThreshold"])
    flush = found[1] if (found := section("inlinedDataFlush")) is not None else None
    repartition = None
    if (found := section("partitionRewrite")) is not None:
        repartition = RepartitionSettings(found[1], found[0]["maxBytesPerCommit"])
    if (found := section("snapshotExpiry")) is not None:
        e, schedule = found
        if not any(spec["snapshotExpiry"].get(k) is not None for k in ("olderThan", "retainLast")):
            p.add("spec.snapshotExpiry", "needs olderThan and/or retainLast")
        expiry = ExpirySettings(schedule, e["olderThan"], e["retainLast"])
    if (found := section("fileCleanup")) is not None:
        f, schedule = found
        cleanup = CleanupSettings(schedule, f["olderThan"], f["orphanFiles"], f["dryRun"])
    window = None
    if (raw := p.get(spec, "window", "spec", dict)) is not None:
        p.keys(raw, "spec.window", ("start", "end", "timezone"))
        tz = p.get(raw, "timezone", "spec.window", str, default=DEFAULT_TIMEZONE)
        try:
            ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            p.add("spec.window.timezone", f"{tz!r} is not an IANA time zone")
        times = [p.get(raw, k, "spec.window", str, required=True, default="00:00") for k in ("start", "end")]
        for k, t in zip(("start", "end"), times, strict=False):
            if not re.match(WINDOW_TIME_PATTERN, t):
                p.add(f"spec.window.{k}", f"{t!r} is not HH:MM")
        if times[0] == times[1] and "start" in raw:  # all day or never? neither is worth a window: say so
            p.add(
                "spec.window", f"start and end are both {times[0]}; a window needs a length (omit it to run any time)"
            )
        window = Window(times[0], times[1], tz)
    concurrency = p.get(spec, "concurrency", "spec", dict, default={})
    p.keys(concurrency, "spec.concurrency", tuple(POLICY_SETTINGS["concurrency"]))
    top = p.settings(spec, "spec", "spec")
    spark = _spark(spec, p)
    return MaintenancePolicySpec(
        ref,
        _catalog_ref(spec, p),
        tables=tables,
        table_selector=tuple(sorted((str(k), str(v)) for k, v in labels.items())),
        table_selector_expressions=expressions,
        compaction=compaction,
        delete_rewrite=delete_rewrite,
        inlined_data_flush=flush,
        partition_rewrite=repartition,
        snapshot_expiry=expiry,
        file_cleanup=cleanup,
        window=window,
        suspend=top["suspend"],
        max_jobs_per_catalog=p.settings(concurrency, "spec.concurrency", "concurrency")["maxJobsPerCatalog"],
        spark=spark,
        history_limit=top["historyLimit"],
        dry_run=top["dryRun"],
    )


def _selector_expressions(raw: list[Any], p: _Problems) -> tuple[SelectorRequirement, ...]:
    """``matchExpressions`` with Kubernetes' rules: In/NotIn need values, Exists/DoesNotExist none."""
    out = []
    for i, item in enumerate(raw):
        path = f"spec.tableSelector.matchExpressions[{i}]"
        if not isinstance(item, Mapping):
            p.add(path, "must be a mapping with key, operator and values")
            continue
        p.keys(item, path, ("key", "operator", "values"))
        key = p.get(item, "key", path, str, required=True, default="")
        operator = p.enum(item, "operator", path, SELECTOR_OPERATOR)
        if operator is None:
            p.add(f"{path}.operator", f"is required: one of {', '.join(SELECTOR_OPERATOR.values)}")
            continue
        values = p.get(item, "values", path, list, default=[])
        if operator in ("In", "NotIn") and not values:
            p.add(f"{path}.values", f"must not be empty for {operator}")
        if operator in ("Exists", "DoesNotExist") and values:
            p.add(f"{path}.values", f"must be empty for {operator}")
        out.append(SelectorRequirement(key, operator, tuple(str(v) for v in values)))
    return tuple(out)


def _spark(spec: Mapping[str, Any], p: _Problems) -> SparkSettings | None:
    """``spec.spark`` of a policy or a job; None when absent (the next level's settings apply)."""
    raw = p.get(spec, "spark", "spec", dict)
    if raw is None:
        return None
    keys = ("launcher", "image", "imagePullPolicy", "serviceAccount", "driver", "executor", "conf", "env",
            "inProcessBelow")  # fmt: skip
    p.keys(raw, "spec.spark", keys)
    env, problems = read_env(raw.get("env"), "spec.spark.env")
    p.items.extend(problems)
    below = p.get(raw, "inProcessBelow", "spec.spark", (int, str))
    in_process_below = None
    if below is not None:
        try:
            in_process_below = parse_size(below)
        except (SpecError, ValueError) as exc:
            p.add("spec.spark.inProcessBelow", exc.problems[0] if isinstance(exc, SpecError) else str(exc))

    def pairs(key: str) -> tuple[tuple[str, str], ...]:
        return tuple(sorted((k, str(v)) for k, v in p.get(raw, key, "spec.spark", dict, default={}).items()))

    return SparkSettings(
        launcher=p.enum(raw, "launcher", "spec.spark", LAUNCHER),
        image=p.get(raw, "image", "spec.spark", str),
        image_pull_policy=p.enum(raw, "imagePullPolicy", "spec.spark", IMAGE_PULL_POLICY),
        service_account=p.get(raw, "serviceAccount", "spec.spark", str),
        driver=pairs("driver"),
        executor=pairs("executor"),
        conf=pairs("conf"),
        in_process_below=in_process_below,
        env=env,
    )


def _job(ref: ObjectRef, spec: Mapping[str, Any], p: _Problems, base_dir: str | None) -> JobSpec:
    p.keys(spec, "spec", ("catalogRef", "table", "operation", "params", "timeout", "retries", "spark", "cancel"))
    operation = p.enum(spec, "operation", "spec", JOB_OPERATION)
    if spec.get("operation") is None:
        p.add("spec.operation", f"is required: one of {', '.join(JOB_OPERATION.values)}")
    table = p.get(spec, "table", "spec", str)
    if table and "." not in table:
        p.add("spec.table", f"{table!r} is not schema.table")
    params = dict(p.get(spec, "params", "spec", dict, default={}))
    if operation is not None:  # else it is reported above
        op = OPERATIONS[operation]
        if op.table == "required" and not table:
            p.add("spec.table", f"is required for {operation} (schema.table)")
        if op.table == "none" and table:
            p.add("spec.table", f"{operation} works on the whole catalog; remove the table")
        try:
            job_keywords(operation, params, "spec.params")
        except SpecError as exc:
            p.items.extend(exc.problems)
    timeout = p.get(spec, "timeout", "spec", (int, str))
    return JobSpec(
        ref,
        _catalog_ref(spec, p),
        table,
        operation or "",
        params,
        _seconds(timeout, p) if timeout is not None else None,
        p.setting(spec, "retries", "spec", JOB_SETTINGS["retries"]),
        spark=_spark(spec, p),
        cancel=p.get(spec, "cancel", "spec", bool, default=False),
    )


# ------------------------------------------------------------------ pieces


def _fields(raw: list[Any], path: str, p: _Problems) -> tuple[Field, ...]:
    out: list[Field] = []
    seen: dict[str, str] = {}
    claimed: dict[str, str] = {}
    for i, item in enumerate(raw):
        item_path = f"{path}[{i}]"
        if not isinstance(item, Mapping):
            p.add(item_path, "must be a mapping with name and type")
            continue
        f = _field(item, item_path, p)
        if f is None:
            continue
        if fold(f.name) in seen:
            p.add(
                f"{item_path}.name",
                f"duplicate column name {f.name!r} (also {seen[fold(f.name)]}; names are case-insensitive)",
            )
        seen[fold(f.name)] = item_path
        for old in f.renamed_from:
            if fold(old) == fold(f.name):
                p.add(f"{item_path}.renamedFrom", f"{old!r} is the column's own name")
            elif fold(old) in claimed:
                p.add(f"{item_path}.renamedFrom", f"{old!r} is also claimed by {claimed[fold(old)]}")
            claimed[fold(old)] = item_path
        out.append(f)
    for old, claimer in claimed.items():
        if old in seen and seen[old] != claimer:
            p.add(
                f"{claimer}.renamedFrom",
                f"{old!r} is still declared as a column ({seen[old]}); a renamed column must not stay",
            )
    return tuple(out)


def _field(item: Mapping[str, Any], path: str, p: _Problems) -> Field | None:
    p.keys(
        item,
        path,
        ("name", "type", "nullable", "default", "comment", "tags", "renamedFrom", "fields", "element", "key", "value"),
    )
    name = _identifier(item, "name", path, p, "column")
    type_ = _type(item, path, p)
    if type_ is None or not name:
        return None
    where = f"{path}.default"
    default = None
    if item.get("default") is not None:
        try:
            default = encode_default(item["default"], type_, at_create=True, where=where)
        except SpecError as exc:
            p.items.extend(exc.problems)
    comment = p.get(item, "comment", path, str)
    return Field(
        name=name,
        type=type_,
        nullable=p.get(item, "nullable", path, bool, default=True),
        default=default,
        comment=comment,
        tags=_column_tags(item, path, p),
        renamed_from=_renamed_from(item, path, p),
    )


# DuckDB 1.5.5 fails every query on a table (and SHOW TABLES on its catalog) when a column
# carries a tag other than its comment: "Only comment tags are supported for columns currently"
COLUMN_TAGS_REFUSED = (
    "DuckDB 1.5.5 cannot read a table whose columns carry tags (every query on it fails: 'Only comment tags "
    "are supported for columns currently'); say it in the column's comment, or tag the table"
)


def _column_tags(item: Mapping[str, Any], path: str, p: _Problems) -> tuple[tuple[str, str], ...]:
    """A column's tags: none (the field stays in the API for the day DuckDB reads them)."""
    if _tags(item, path, p, with_comment=False):
        p.add(f"{path}.tags", COLUMN_TAGS_REFUSED)
    return ()


def _type(item: Mapping[str, Any], path: str, p: _Problems) -> DuckLakeType | None:
    raw = item.get("type")
    if raw is None:
        p.add(f"{path}.type", "is required")
        return None
    if not isinstance(raw, str):
        p.add(f"{path}.type", f"must be a type name, got {raw!r}")
        return None
    lower = raw.strip().lower()
    if lower == "struct" and "fields" in item:
        fields = _fields(p.get(item, "fields", path, list, required=True, default=[]), f"{path}.fields", p)
        if not fields:
            p.add(f"{path}.fields", "a struct needs at least one field")
            return None
        return Struct(fields)
    if lower == "list" and "element" in item:
        element = _element(item["element"], f"{path}.element", p)
        return ListOf(element) if element is not None else None
    if lower == "map" and ("key" in item or "value" in item):
        key, value = _element(item.get("key"), f"{path}.key", p), _element(item.get("value"), f"{path}.value", p)
        return MapOf(key, value) if key is not None and value is not None else None
    if lower in ("struct", "list", "map"):
        needs = {"struct": "fields", "list": "element", "map": "key and value"}[lower]
        p.add(f"{path}.type", f"{lower} needs {needs}")
        return None
    for extra in ("fields", "element", "key", "value"):
        if extra in item:
            p.add(f"{path}.{extra}", f"only for struct, list or map types, not {raw}")
    try:
        return parse_type(raw)
    except SpecError as exc:
        p.add(f"{path}.type", exc.problems[0])
        return None


def _element(raw: Any, path: str, p: _Problems) -> DuckLakeType | None:
    if raw is None:
        p.add(path, "is required")
        return None
    if isinstance(raw, str):
        return _type({"type": raw}, path, p)
    if isinstance(raw, Mapping):
        p.keys(raw, path, ("type", "fields", "element", "key", "value"))
        return _type(raw, path, p)
    p.add(path, f"must be a type name or a mapping, got {raw!r}")
    return None


def _identifier(obj: Mapping[str, Any], key: str, path: str, p: _Problems, what: str) -> str:
    value = obj.get(key)
    if value is None:
        p.add(f"{path}.{key}", "is required")
        return ""
    problem = identifier_problem(value, what)
    if problem:
        p.add(f"{path}.{key}", problem)
        return ""
    return value


def _renamed_from(obj: Mapping[str, Any], path: str, p: _Problems) -> tuple[str, ...]:
    raw = obj.get("renamedFrom")
    if raw is None:
        return ()
    names = [raw] if isinstance(raw, str) else raw
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        p.add(f"{path}.renamedFrom", "must be a name or a list of earlier names")
        return ()
    return tuple(names)


def _tags(obj: Mapping[str, Any], path: str, p: _Problems, with_comment: bool = True) -> tuple[tuple[str, str], ...]:
    tags = p.get(obj, "tags", path, dict, default={})
    out = []
    for k, v in tags.items():
        if not isinstance(k, str) or not isinstance(v, (str, int, float, bool)):
            p.add(f"{path}.tags.{k}", "tags map names to strings")
            continue
        if k == "comment":
            p.add(f"{path}.tags.comment", "use the comment field for the comment")
            continue
        out.append((k, str(v)))
    comment = p.get(obj, "comment", path, str) if with_comment else None
    if comment is not None:
        out.append(("comment", comment))
    return tuple(sorted(out))


def _options(spec: Mapping[str, Any], p: _Problems, scope: str) -> tuple[tuple[str, str], ...]:
    out = []
    for k, v in p.get(spec, "options", "spec", dict, default={}).items():
        try:
            out.append(normalize_option(k, v, scope))
        except SpecError as exc:
            p.add(f"spec.options.{k}", exc.problems[0])
    return tuple(sorted(out))


def _catalog_ref(spec: Mapping[str, Any], p: _Problems) -> str:
    ref = p.get(spec, "catalogRef", "spec", dict, required=True, default={})
    p.keys(ref, "spec.catalogRef", ("name",))
    return p.get(ref, "name", "spec.catalogRef", str, required=True, default="")


def _secret(obj: Mapping[str, Any], path: str, p: _Problems) -> SecretRef | None:
    raw = p.get(obj, "credentialsSecretRef", path, dict)
    if raw is None:
        return None
    sp = f"{path}.credentialsSecretRef"
    p.keys(raw, sp, ("name", "usernameKey", "passwordKey"))
    return SecretRef(
        p.get(raw, "name", sp, str, required=True, default=""),
        p.get(raw, "usernameKey", sp, str, default="username"),
        p.get(raw, "passwordKey", sp, str, default="password"),
    )


def _local(path: str, base_dir: str | None) -> str:
    if not path or os.path.isabs(path) or base_dir is None:
        return path
    return os.path.normpath(os.path.join(base_dir, path)) + ("/" if path.endswith("/") else "")


def _seconds(value: int | str, p: _Problems) -> int | None:
    if isinstance(value, int):
        return value
    try:
        return int(parse_duration(value).total_seconds())
    except SpecError as exc:
        p.add("spec.timeout", exc.problems[0])
        return None
