"""Every maintenance setting, defined once (pure): its kind (and so its unit or format), default,
bounds and help text. (A parameter only one operation has may instead be defined beside that
operation, in ``job_params``; the same rules hold for it.)

A DuckLakeJob's ``params``, a DuckLakeMaintenancePolicy's sections and ``ducklake run-job``
use the same definitions: the manifest loader checks and defaults with them (with field
paths), the CRD generator renders them (``minimum``, ``maximum``, ``default``, ``pattern``,
description), the CLI prints and parses them, the policy mapping resolves them, and the
planners' and jobs' keyword defaults are read from them. ``tests/unit/test_maintenance_params.py``
checks that every one of those agrees with the definition.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard

from ..errors import SpecError
from .durations import parse_duration
from .options import DEFAULT_REWRITE_DELETE_THRESHOLD, DEFAULT_TARGET_FILE_SIZE, parse_size, render_size
from .types import DuckLakeType, parse_type

Kind = Literal[
    "integer",
    "size",
    "fraction",
    "duration",
    "boolean",
    "snapshot_ids",
    "column_path",
    "type",
    "column_types",
    "manifest",
    "choice",
    "text",
]

FORMATS: dict[str, str] = {
    "size": "a size such as 128MB or 1GiB, where KB = 1000 bytes and KiB = 1024 as in DuckDB",
    "duration": "a duration such as 30m, 12h, 3d or '2 weeks'",
    "column_path": "a column name, or parent.field for a struct field (a name holding a dot in double quotes)",
    "type": "a DuckLake type name or its DuckDB spelling",
    "column_types": "a mapping of column paths (as column takes them) to types, {code: int64, s.day: date}",
    "manifest": "a DuckLakeTable (apiVersion, kind, metadata, spec)",
    "text": "a path or s3:// URI",
}


@dataclass(frozen=True)
class Param:
    """One setting. ``default`` is the fixed default; when there is none, ``option`` names the
    DuckLake option (in force for the table: table > schema > catalog) that supplies the value,
    and ``fallback`` is DuckDB's default when that option is unset too; ``unset`` says what an
    unset value means otherwise."""

    kind: Kind
    help: str
    keyword: str | None = None  # the job function's keyword argument (and the planner option's field)
    default: Any = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    option: str | None = None
    fallback: Any = None
    unset: str | None = None
    choices: tuple[str, ...] = ()  # the words a "choice" takes
    required: bool = False

    def parse(self, value: object, read_manifest: Callable[[object], Any] | None = None) -> Any:
        """The value as the jobs take it; ``ValueError`` with a sentence when it is not one.
        ``read_manifest``: how a "manifest" value (a DuckLakeTable) becomes its TableSpec, the
        API's loader, a layer above this one (``api.load.job_keywords`` and ``parse_args`` pass it)."""
        if self.kind == "choice":
            if value is None and "null" in self.choices:  # YAML reads an unquoted null as no value
                value = "null"
            if value not in self.choices:
                raise ValueError(f"{value!r} is not one of {', '.join(self.choices)}")
            return value
        if self.kind == "column_path":
            return parse_column_path(value)
        if self.kind == "column_types":
            if not isinstance(value, dict) or not value:
                raise ValueError(f"{value!r} is not {FORMATS['column_types']}")
            return tuple((parse_column_path(k), self._type(v)) for k, v in value.items())
        if self.kind == "manifest":
            if read_manifest is None:
                raise ValueError("a DuckLakeTable is read by the API's loader (ducklake_operator.api.load)")
            return read_manifest(value)
        if self.kind == "text":
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{value!r} is not {FORMATS['text']}")
            return value.strip()
        if self.kind == "type":
            return self._type(value)
        if self.kind == "boolean":
            if not isinstance(value, bool):
                raise ValueError(f"{value!r} is not true or false")
            return value
        if self.kind == "size":
            return parse_size(value)
        if self.kind == "duration":
            if not isinstance(value, str):
                raise ValueError(f"{value!r} is not {FORMATS['duration']}")
            try:
                parse_duration(value)
            except SpecError as exc:
                raise ValueError(exc.problems[0]) from None
            return value
        if self.kind == "snapshot_ids":
            if not isinstance(value, list) or not all(_is_int(v) and v >= 0 for v in value):
                raise ValueError(f"{value!r} is not a list of snapshot ids")
            return list(value)
        if self.kind == "fraction":
            if not _is_number(value) or not self._within(value):
                raise ValueError(f"{value!r} is not a fraction between {self.minimum:g} and {self.maximum:g}")
            return float(value)
        if not _is_int(value):
            raise ValueError(f"{value!r} is not an integer")
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"must be at least {self.minimum}, got {value}")
        if self.maximum is not None and value > self.maximum:
            raise ValueError(f"must be at most {self.maximum}, got {value}")
        return value

    @staticmethod
    def _type(value: object) -> DuckLakeType:
        if not isinstance(value, str):
            raise ValueError(f"{value!r} is not {FORMATS['type']}")
        try:
            return parse_type(value)
        except SpecError as exc:
            raise ValueError(exc.problems[0]) from None

    def _within(self, value: float) -> bool:
        return (self.minimum is None or value >= self.minimum) and (self.maximum is None or value <= self.maximum)

    def resolve(self, value: Any, option_in_force: Callable[[str], str | None]) -> Any:
        """``value`` when set, else the table's option in force, else DuckDB's default."""
        if value is not None or self.option is None:
            return value
        stored = option_in_force(self.option)  # stored as DuckDB's set_option normalises it
        if stored is None:
            return self.fallback
        return float(stored) if self.kind == "fraction" else int(stored)

    @property
    def default_text(self) -> str | None:
        """What applies when the setting is not given, in words (None: nothing)."""
        if self.default is not None:
            return f"{str(self.default).lower() if isinstance(self.default, bool) else self.default}"
        if self.option is not None:
            fallback = render_size(self.fallback) if self.kind == "size" else f"{self.fallback:g}"
            return f"the {self.option} option, else {fallback}"
        return self.unset

    def describe(self) -> str:
        """Help text with the format and the default, for the CLI and the CRD descriptions."""
        notes = [FORMATS[self.kind]] if self.kind in FORMATS else []
        notes += [f"one of {', '.join(self.choices)}"] if self.choices else []
        notes += ["required"] if self.required else []
        if self.kind == "integer":
            notes += [f"at least {self.minimum}"] if self.minimum is not None else []
            notes += [f"at most {self.maximum}"] if self.maximum is not None else []
        if self.default_text is not None:
            notes.append(f"default: {self.default_text}")
        return self.help + (f" ({'; '.join(notes)})" if notes else "")


def parse_column_path(value: object) -> tuple[str, ...]:
    """``s.a`` -> ("s", "a"); a name holding a dot or a quote is written in double quotes with
    quotes doubled (``"a.b".c``), as in DuckDB; a list of names is taken as it is."""
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{value!r} is not {FORMATS['column_path']}")
    names, name, quoted, i = [], "", False, 0
    while i < len(value):
        ch = value[i]
        if quoted and ch == '"' and value[i + 1 : i + 2] == '"':
            name, i = name + '"', i + 2
            continue
        if ch == '"' and (quoted or not name):
            quoted = not quoted
        elif ch == "." and not quoted:
            names.append(name)
            name = ""
        else:
            name += ch
        i += 1
    names.append(name)
    if quoted or not all(names):
        raise ValueError(f"{value!r} is not {FORMATS['column_path']}")
    return tuple(names)


def render_column_path(path: tuple[str, ...]) -> str:
    """The text ``parse_column_path`` reads back as ``path``."""
    return ".".join(f'"{n.replace(chr(34), chr(34) * 2)}"' if "." in n or '"' in n else n for n in path)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# Files scheduled for deletion, and unreferenced files, younger than this are kept: as the
# managed services do (DuckDB's own default, the delete_older_than option, is 2 days).
CLEANUP_GRACE = "3d"

TARGET_FILE_SIZE = Param(
    "size",
    "merge into files of about this size",
    keyword="target_file_size",
    option="target_file_size",
    fallback=DEFAULT_TARGET_FILE_SIZE,
)
SMALL_FILE_THRESHOLD = Param(
    "size", "only files smaller than this are merged", keyword="small_file_threshold", unset="the target size"
)
MIN_INPUT_FILES = Param(
    "integer",
    "a file group is merged only when it has at least this many files; one file alone is no merge",
    keyword="min_input_files",
    default=2,
    minimum=2,
)
MAX_FILES_PER_RUN = Param(
    "integer",
    "at most this many output files (file groups) per run, as DuckDB's max_compacted_files",
    keyword="max_groups",
    minimum=1,
    unset="no limit",
)
APPLY_DELETES = Param(
    "boolean",
    "merge files that have deletes too: rows deleted before the oldest snapshot are dropped, later "
    "deletes carried over in a delete file; false leaves such files alone, as DuckDB's "
    "merge_adjacent_files does",
    keyword="apply_deletes",
    default=True,
)
SORT = Param(
    "boolean",
    "write merged files in the table's sort order when it has one, as DuckDB does; false keeps row-id order",
    keyword="sort",
    default=True,
)
DELETE_THRESHOLD = Param(
    "fraction",
    "rewrite files with at least this fraction of their rows deleted",
    keyword="delete_threshold",
    minimum=0,
    maximum=1,
    option="rewrite_delete_threshold",
    fallback=DEFAULT_REWRITE_DELETE_THRESHOLD,
)
EXPIRE_OLDER_THAN = Param("duration", "expire snapshots older than this", keyword="older_than")
RETAIN_LAST = Param("integer", "always keep this many newest snapshots", keyword="retain_last", minimum=1)
VERSIONS = Param("snapshot_ids", "expire exactly these snapshot ids", keyword="versions")
CLEANUP_OLDER_THAN = Param(
    "duration", "delete files scheduled for deletion longer ago than this", keyword="older_than", default=CLEANUP_GRACE
)
ORPHAN_OLDER_THAN = Param(
    "duration", "delete unreferenced files older than this", keyword="older_than", default=CLEANUP_GRACE
)
DRY_RUN = Param("boolean", "list what would change; change nothing", keyword="dry_run", default=False)
MAX_BYTES_PER_COMMIT = Param(
    "size",
    "rewrite about this much input per snapshot: each batch of files commits as it is done",
    keyword="max_bytes_per_commit",
    unset="everything in one snapshot",
)
COLUMN = Param(
    "column_path",
    "the column, or struct field, whose type changes (with type; or columns)",
    keyword="column",
)
NEW_TYPE = Param(
    "type",
    "its new type: numbers to wider numbers or varchar, varchar to numbers or date, timestamp to and from date, "
    "integer (yyyymmdd) to date, decimal to decimal",
    keyword="new_type",
)
COLUMNS = Param(
    "column_types",
    "several columns (or struct fields) and their new types, rewritten in one pass over the files and one "
    "snapshot (instead of column and type)",
    keyword="columns",
)
MANIFEST = Param(
    "manifest",
    "the DuckLakeTable whose plan these type changes are: its other changes are committed in the same snapshot, "
    "and the job checks that the plan's rewrites are these (set by the operator and ducklake apply)",
    keyword="manifest",
    unset="none: only the types change",
)
ON_CAST_ERROR = Param(
    "choice",
    "a value that does not convert fails the job, naming it and its row id (nothing changes), or becomes NULL",
    keyword="on_cast_error",
    default="fail",
    choices=("fail", "null"),
)

INGEST_PATH = Param(
    "text",
    "the files to append: one file, a directory (every file under it), or a pattern of file names (*.json)",
    keyword="path",
    required=True,
)
INGEST_FORMAT = Param(
    "choice",
    "the files' format; auto: by extension (.json, .jsonl and .ndjson are JSON lines, .csv, .parquet; "
    ".gz after json and csv ones), files of other extensions in a directory left alone",
    keyword="file_format",
    default="auto",
    choices=("auto", "json", "csv", "parquet"),
)
ON_BAD_RECORD = Param(
    "choice",
    "a record that cannot be read (a line that is not a JSON object, a CSV row that does not parse) fails the job, "
    "naming its file and line, or is skipped and counted",
    keyword="on_bad_record",
    default="fail",
    choices=("fail", "skip"),
)
REINGEST = Param(
    "boolean",
    "ingest files an earlier ingest of the table took in (same path, size and modification time) again; "
    "false refuses them",
    keyword="reingest",
    default=False,
)
INGEST_EVOLVE = Param(
    "boolean",
    "add the columns the records need (the table's schema evolves); false: the records must fit the columns the "
    "table has, else the job fails naming the fields and commits nothing. On Kubernetes the operator sets it from "
    "the table's DuckLakeTable: false unless its spec.evolution.mode is auto",
    keyword="evolve",
    default=True,
)

# Policy settings that are not job parameters.
FILE_CLEANUP_OLDER_THAN = Param(
    "duration",
    "grace period: files scheduled for deletion (and, with orphanFiles, unreferenced files) younger than this are kept",
    default=CLEANUP_GRACE,
)
ORPHAN_FILES = Param("boolean", "also delete orphan files: files no row refers to, older than olderThan", default=False)
WHEN_SMALL_FILES_ABOVE = Param(
    "integer", "also run, between scheduled runs, when a table has more small files than this", minimum=1
)
MAX_JOBS_PER_CATALOG = Param("integer", "runs at the same time per catalog", minimum=1, unset="no limit")
SUSPEND = Param("boolean", "start no runs", default=False)
POLICY_DRY_RUN = Param(
    "boolean", "every run the policy starts only lists what it would change (try a policy out)", default=False
)
HISTORY_LIMIT = Param(
    "integer", "finished runs kept per table and operation; older DuckLakeJobs are deleted", default=3, minimum=0
)
RETRIES = Param("integer", "retries after a failure that committed nothing", default=0, minimum=0)

# DuckLakeMaintenancePolicy: section -> field -> definition ("spec" for top-level fields;
# every section also has its cron ``schedule``), for the sections written out in the
# policy's code; ``job_params.POLICY_SETTINGS`` adds those operations declare.
BASE_POLICY_SETTINGS: dict[str, dict[str, Param]] = {
    "compaction": {
        "targetFileSize": TARGET_FILE_SIZE,
        "minInputFiles": MIN_INPUT_FILES,
        "smallFileThreshold": SMALL_FILE_THRESHOLD,
        "sort": SORT,
        "whenSmallFilesAbove": WHEN_SMALL_FILES_ABOVE,
    },
    "deleteRewrite": {"deleteRatioThreshold": DELETE_THRESHOLD},
    "inlinedDataFlush": {},
    "partitionRewrite": {"maxBytesPerCommit": MAX_BYTES_PER_COMMIT},
    "snapshotExpiry": {"olderThan": EXPIRE_OLDER_THAN, "retainLast": RETAIN_LAST},
    "fileCleanup": {"olderThan": FILE_CLEANUP_OLDER_THAN, "orphanFiles": ORPHAN_FILES, "dryRun": DRY_RUN},
    "concurrency": {"maxJobsPerCatalog": MAX_JOBS_PER_CATALOG},
    "spec": {"suspend": SUSPEND, "historyLimit": HISTORY_LIMIT, "dryRun": POLICY_DRY_RUN},
}
JOB_SETTINGS: dict[str, Param] = {"retries": RETRIES}  # DuckLakeJob spec fields
