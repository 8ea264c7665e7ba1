"""DuckLakeMaintenancePolicy: scheduled maintenance of tables and of their catalog. Each
operation's section holds its cron ``schedule`` and its settings, declared once in
``model/job_params.POLICY_SETTINGS``. The sections an operation declares with itself
(``model/job_params.PolicySection``) are read here without code of their own, into
``MaintenancePolicySpec.sections``."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from ...model.job_params import DECLARED_SECTIONS, POLICY_SETTINGS, PolicySection
from ...model.maintenance_params import (
    CLEANUP_GRACE,
    DRY_RUN,
    HISTORY_LIMIT,
    MIN_INPUT_FILES,
    ORPHAN_FILES,
    SORT,
    SUSPEND,
)
from ..problems import Problems
from .common import CATALOG_REF, ObjectRef
from .fields import Anything, Arr, Choice, Obj, Str, obj, setting, settings
from .kind import AGE, READY_COLUMN, Kind
from .names import POLICIES, POLICY_KIND
from .spark import SparkSettings, spark
from .status import status

DEFAULT_TIMEZONE = "UTC"  # a policy's window, and schedules without a window, are read in it
WINDOW_TIME_PATTERN = r"^([01]\d|2[0-3]):[0-5]\d$"  # HH:MM, 00:00 to 23:59
SELECTOR_OPERATOR = Choice(("In", "NotIn", "Exists", "DoesNotExist"))


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
class SectionSettings:
    """A section an operation declares (``model/job_params.PolicySection``): its schedule and
    its settings by field name (None: not set, the job's default)."""

    schedule: Schedule
    values: Mapping[str, Any]


@dataclass(frozen=True)
class Window:
    start: str  # HH:MM
    end: str
    timezone: str = DEFAULT_TIMEZONE


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
    sections: Mapping[str, SectionSettings] = field(default_factory=dict)  # the sections operations declare, if set


def _cron(p: Problems, o: Any, key: str, path: str) -> str:
    cron: str = p.get(o, key, path, str, required=True, default="0 0 * * *")
    if not croniter.is_valid(cron) or len(cron.split()) != 5:
        p.add(f"{path}.{key}", f"{cron!r} is not a 5-field cron schedule (minute hour day month weekday)")
    return cron


SCHEDULE = Str(desc="Cron schedule (5 fields, in spec.window.timezone).", min_length=9, reader=_cron, shared=True)


def section(name: str, desc: str, build: Callable[[Schedule, dict[str, Any]], Any], **more: Any) -> Obj:
    """An operation's section: its schedule and its settings, built by ``build``; None when absent."""

    def to(schedule: str, **values: Any) -> Any:
        return build(Schedule(schedule, values.pop("whenSmallFilesAbove", None)), values)

    return obj(desc, {"schedule": SCHEDULE, **settings(POLICY_SETTINGS[name])}, to=to, absent="none", **more)


def declared_section(name: str, declared: PolicySection) -> Obj:
    """A section an operation declares, read into ``MaintenancePolicySpec.sections[name]``
    (when set) by its ``after`` hook: the spec has no field per such section."""

    def into_sections(value: SectionSettings | None, before: Mapping[str, Any], path: str, p: Problems) -> None:
        if value is not None:
            assert isinstance(before, dict)  # the values being read (``Obj.values``)
            before["sections"] = {**before.get("sections", {}), name: value}

    return obj(
        declared.description,
        {"schedule": SCHEDULE, **settings(declared.settings)},
        to=lambda schedule, **values: SectionSettings(Schedule(schedule), values),
        absent="none",
        attr=None,
        after=into_sections,
    )


def _retention_given(values: dict[str, Any], raw: Mapping[str, Any], path: str, p: Problems) -> None:
    if not any(raw.get(k) is not None for k in ("olderThan", "retainLast")):
        p.add(path, "needs olderThan and/or retainLast")


def _time(p: Problems, o: Any, key: str, path: str) -> str:
    t: str = p.get(o, key, path, str, required=True, default="00:00")
    return t


def _timezone(p: Problems, o: Any, key: str, path: str) -> str:
    tz: str = p.get(o, key, path, str, default=DEFAULT_TIMEZONE)
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        p.add(f"{path}.{key}", f"{tz!r} is not an IANA time zone")
    return tz


def _window_has_length(values: dict[str, Any], raw: Mapping[str, Any], path: str, p: Problems) -> None:
    """HH:MM times, apart."""
    for key in ("start", "end"):
        if not re.match(WINDOW_TIME_PATTERN, values[key]):
            p.add(f"{path}.{key}", f"{values[key]!r} is not HH:MM")
    if values["start"] == values["end"] and "start" in raw:  # all day or never? neither is worth a window: say so
        p.add(path, f"start and end are both {values['start']}; a window needs a length (omit it to run any time)")


def _tables(p: Problems, o: Any, key: str, path: str) -> tuple[Any, ...]:
    if "tableSelector" in o and key in o:
        p.add(path, "give tableSelector or tables, not both")
    tables = tuple(p.get(o, key, path, list, default=[]))
    for i, t in enumerate(tables):
        if not isinstance(t, str) or "." not in t:
            p.add(f"{path}.{key}[{i}]", f"{t!r} is not schema.table")
    return tables


def _selector(p: Problems, o: Any, key: str, path: str) -> tuple[Any, Any]:
    """``matchLabels`` (as sorted pairs) and ``matchExpressions``."""
    selector = p.get(o, key, path, dict, default={})
    at = f"{path}.{key}"
    p.keys(selector, at, ("matchLabels", "matchExpressions"))
    labels = p.get(selector, "matchLabels", at, dict, default={})
    expressions = _expressions(p.get(selector, "matchExpressions", at, list, default=[]), f"{at}.matchExpressions", p)
    return tuple(sorted((str(k), str(v)) for k, v in labels.items())), expressions


def _expressions(raw: list[Any], path: str, p: Problems) -> tuple[SelectorRequirement, ...]:
    """``matchExpressions`` with Kubernetes' rules: In/NotIn need values, Exists/DoesNotExist none."""
    out = []
    for i, item in enumerate(raw):
        at = f"{path}[{i}]"
        if not isinstance(item, Mapping):
            p.add(at, "must be a mapping with key, operator and values")
            continue
        p.keys(item, at, ("key", "operator", "values"))
        key = p.get(item, "key", at, str, required=True, default="")
        operator = p.enum(item, "operator", at, SELECTOR_OPERATOR.values, None)
        if operator is None:
            p.add(f"{at}.operator", f"is required: one of {', '.join(SELECTOR_OPERATOR.values)}")
            continue
        values = p.get(item, "values", at, list, default=[])
        if operator in ("In", "NotIn") and not values:
            p.add(f"{at}.values", f"must not be empty for {operator}")
        if operator in ("Exists", "DoesNotExist") and values:
            p.add(f"{at}.values", f"must be empty for {operator}")
        out.append(SelectorRequirement(key, operator, tuple(str(v) for v in values)))
    return tuple(out)


def _concurrency(p: Problems, o: Any, key: str, path: str) -> Mapping[str, Any]:
    """``concurrency``, its fields checked; its limit is read after the catalog (``_limit``)."""
    raw: Mapping[str, Any] = p.get(o, key, path, dict, default={})
    p.keys(raw, f"{path}.{key}", tuple(POLICY_SETTINGS[key]))
    return raw


def _limit(values: dict[str, Any], raw: Mapping[str, Any], path: str, p: Problems) -> None:
    """The run limit (read after the catalog, where the loader has always reported it)."""
    limit = POLICY_SETTINGS["concurrency"]["maxJobsPerCatalog"]
    values["max_jobs_per_catalog"] = p.setting(
        values["max_jobs_per_catalog"], "maxJobsPerCatalog", f"{path}.concurrency", limit
    )


def _selection(values: dict[str, Any], raw: Mapping[str, Any], path: str, p: Problems) -> None:
    """``tableSelector`` is read into two fields."""
    values["table_selector"], values["table_selector_expressions"] = values["table_selector"]


def policy_spec(declared: Mapping[str, PolicySection]) -> Obj:
    """The spec's declaration with the sections operations declare (``declared``) after
    ``fileCleanup``: without any, the CRD the sections written out here make."""
    sections = {name: declared_section(name, d) for name, d in declared.items()}
    return obj(
        "Maintenance of the selected tables and of the catalog.",
        {
            "catalogRef": CATALOG_REF,
            "tableSelector": Anything(desc="Label selector over DuckLakeTables.", mapping=True, reader=_selector),
            "tables": Arr(desc="Tables by name (schema.table).", items=Str(desc="schema.table"), reader=_tables),
            "compaction": section(
                "compaction",
                "Merge small files.",
                lambda s, c: CompactionSettings(
                    s, c["targetFileSize"], c["minInputFiles"], c["smallFileThreshold"], c["sort"]
                ),
            ),
            "deleteRewrite": section(
                "deleteRewrite",
                "Rewrite files whose rows are mostly deleted.",
                lambda s, d: DeleteRewriteSettings(s, d["deleteRatioThreshold"]),
            ),
            "inlinedDataFlush": section("inlinedDataFlush", "Move inlined rows into Parquet.", lambda s, _: s),
            "partitionRewrite": section(
                "partitionRewrite",
                "Rewrite files written under older partition specs.",
                lambda s, r: RepartitionSettings(s, r["maxBytesPerCommit"]),
            ),
            "snapshotExpiry": section(
                "snapshotExpiry",
                "Catalog-wide: expire old snapshots (give olderThan and/or retainLast).",
                lambda s, e: ExpirySettings(s, e["olderThan"], e["retainLast"]),
                rules=(("has(self.olderThan) || has(self.retainLast)", "needs olderThan and/or retainLast"),),
                check=_retention_given,
            ),
            "fileCleanup": section(
                "fileCleanup",
                "Catalog-wide: delete files no longer referenced.",
                lambda s, f: CleanupSettings(s, f["olderThan"], f["orphanFiles"], f["dryRun"]),
            ),
            **sections,
            "window": obj(
                "No run starts outside this window.",
                {
                    "start": Str(desc="HH:MM.", pattern=WINDOW_TIME_PATTERN, reader=_time),
                    "end": Str(desc="HH:MM.", pattern=WINDOW_TIME_PATTERN, reader=_time),
                    "timezone": Str(desc="IANA time zone.", default=DEFAULT_TIMEZONE, reader=_timezone),
                },
                order=("timezone", "start", "end"),
                check=_window_has_length,
                to=Window,
                absent="none",
            ),
            **{key: setting(param) for key, param in POLICY_SETTINGS["spec"].items()},
            "concurrency": obj(
                "Limits.",
                settings(POLICY_SETTINGS["concurrency"]),
                reader=_concurrency,
                attr="max_jobs_per_catalog",
            ),
            "spark": spark("How this policy's runs run (a job's own spark block overrides it)."),
        },
        required=("catalogRef",),
        rules=(("!(has(self.tableSelector) && has(self.tables))", "give tableSelector or tables, not both"),),
        allowed=(
            "catalogRef",
            "tableSelector",
            "tables",
            "compaction",
            "deleteRewrite",
            "inlinedDataFlush",
            "partitionRewrite",
            "snapshotExpiry",
            "fileCleanup",
            *sections,
            "window",
            "suspend",
            "concurrency",
            "spark",
            "historyLimit",
            "dryRun",
        ),  # fmt: skip
        order=(
            "tables",
            "tableSelector",
            "compaction",
            "deleteRewrite",
            "inlinedDataFlush",
            "partitionRewrite",
            "snapshotExpiry",
            "fileCleanup",
            *sections,
            "window",
            "concurrency",
            "suspend",
            "historyLimit",
            "dryRun",
            "spark",
            "catalogRef",
            _limit,
        ),  # fmt: skip
        check=_selection,
        to=MaintenancePolicySpec,
    )


SPEC = policy_spec(DECLARED_SECTIONS)
STATUS = status({"operations": Anything(desc="Last and next run per operation and table.", mapping=True)})
POLICY = Kind(
    POLICY_KIND,
    POLICIES,
    ("dlmp",),
    "Scheduled maintenance of DuckLake tables and of their catalog.",
    SPEC,
    STATUS,
    (
        {"name": "Catalog", "type": "string", "jsonPath": ".spec.catalogRef.name"},
        {"name": "Suspended", "type": "boolean", "jsonPath": ".spec.suspend"},
        READY_COLUMN,
        AGE,
    ),
)
