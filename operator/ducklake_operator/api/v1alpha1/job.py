"""DuckLakeJob: one maintenance run, immutable once created but for ``cancel``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import SpecError
from ...model.durations import DURATION_PATTERN, parse_duration
from ...model.job_params import OPERATIONS, params_help
from ...model.maintenance_params import JOB_SETTINGS, RETRIES
from ..problems import Problems
from .common import CATALOG_REF, ObjectRef
from .fields import Anything, Arr, Bool, Choice, Int, IntOrStr, Str, case_insensitive, obj, setting
from .kind import Kind
from .names import JOB_KIND, JOBS
from .spark import SparkSettings, spark
from .status import status

JOB_OPERATIONS = tuple(OPERATIONS)
JOB_OPERATION = Choice(JOB_OPERATIONS)
# a run's states (status.state)
PENDING, RUNNING, SUCCEEDED, FAILED, CANCELLED = "Pending", "Running", "Succeeded", "Failed", "Cancelled"
ACTIVE_STATES = (PENDING, RUNNING)
ENDED_STATES = (SUCCEEDED, FAILED, CANCELLED)
STATES = Choice((PENDING, RUNNING, SUCCEEDED, FAILED, CANCELLED))
# what a DuckLakeJob may not change once created
FIXED = ("catalogRef", "table", "operation", "params", "timeout", "retries", "spark")


@dataclass(frozen=True)
class JobSpec:
    ref: ObjectRef
    catalog: str
    table: str | None  # "schema.table"; None for catalog-wide operations
    operation: str
    params: dict[str, Any]  # as the manifest has them: what a run's document carries to the job program
    timeout_seconds: int | None = None
    retries: int = RETRIES.default
    spark: SparkSettings | None = None
    cancel: bool = False
    # the typed arguments ``params`` parse into (the operation's ``args``), parsed once when the
    # manifest is read; None when they do not parse (the problems are reported)
    args: Any = None


def _params_description() -> str:
    """The parameters of each operation, from their one definition (checked at apply time)."""
    lines = ["Operation parameters (checked by the operator, with the field path of each problem):"]
    for name, params in params_help():
        lines.append(f"{name}:" + ("" if params else " none."))
        lines += [f"- {key}: {text}." for key, text in params]
    return "\n".join(lines)


def _unchanged(name: str) -> str:
    return f"has(self.{name}) == has(oldSelf.{name}) && (!has(self.{name}) || self.{name} == oldSelf.{name})"


def _table(p: Problems, o: Any, key: str, path: str) -> str | None:
    table: str | None = p.get(o, key, path, str)
    if table and "." not in table:
        p.add(f"{path}.{key}", f"{table!r} is not schema.table")
    return table


def _operation(p: Problems, o: Any, key: str, path: str) -> str:
    operation = p.enum(o, key, path, JOB_OPERATION.values, None)
    if isinstance(o, Mapping) and o.get(key) is None:
        p.add(f"{path}.{key}", f"is required: one of {', '.join(JOB_OPERATION.values)}")
    return operation or ""


def _seconds(values: dict[str, Any], raw: Mapping[str, Any], path: str, p: Problems) -> None:
    """The timeout in seconds (read after the catalog, where the loader has always reported it)."""
    value = values["timeout_seconds"]
    if isinstance(value, str):
        try:
            values["timeout_seconds"] = int(parse_duration(value).total_seconds())
        except SpecError as exc:
            p.add(f"{path}.timeout", exc.problems[0])
            values["timeout_seconds"] = None


def _args(values: dict[str, Any], raw: Mapping[str, Any], path: str, p: Problems) -> None:
    """The table and the params the operation takes (it is reported above when missing or
    unknown), and the typed arguments the params parse into."""
    operation, table = values["operation"], values["table"]
    values["args"] = None
    if operation not in OPERATIONS:
        return
    op = OPERATIONS[operation]
    if op.table == "required" and not table:
        p.add(f"{path}.table", f"is required for {operation} (schema.table)")
    if op.table == "none" and table:
        p.add(f"{path}.table", f"{operation} works on the whole catalog; remove the table")
    try:
        values["args"] = op.parse(values["params"], f"{path}.params", _read_table_manifest)
    except SpecError as exc:
        p.items.extend(exc.problems)


SPEC = obj(
    "One maintenance run. Immutable once created.",
    {
        "catalogRef": CATALOG_REF,
        "table": Str(desc="schema.table (not for catalog-wide operations).", pattern=r"^[^.]+\..+$", reader=_table),
        "operation": Str(desc="What to run.", choice=JOB_OPERATION, reader=_operation),
        "params": Anything(
            desc=_params_description(),
            mapping=True,
            reader=lambda p, o, key, path: dict(p.get(o, key, path, dict, default={})),
        ),
        "timeout": IntOrStr(
            desc="Deadline: seconds, or a duration such as 30m.",
            pattern=case_insensitive(DURATION_PATTERN),
            reader=lambda p, o, key, path: p.get(o, key, path, (int, str)),
            attr="timeout_seconds",
        ),
        "retries": setting(JOB_SETTINGS["retries"]),
        "spark": spark("How this run runs; overrides its policy's spark block."),
        "cancel": Bool(desc="Set true to cancel the run (deleting the DuckLakeJob cancels it too).", default=False),
    },
    required=("catalogRef", "operation"),
    rules=(
        (" && ".join(_unchanged(f) for f in FIXED), "a DuckLakeJob is immutable but for spec.cancel"),
        ("!has(oldSelf.cancel) || !oldSelf.cancel || self.cancel", "a cancelled run stays cancelled"),
    ),
    order=("operation", "table", "params", _args, "timeout", "catalogRef", _seconds, "retries", "spark", "cancel"),
    to=JobSpec,
)
STATUS = status(
    {
        "state": Str(desc=", ".join(STATES.values[:-1]) + f" or {STATES.values[-1]}.", choice=STATES),
        "progress": Str(desc="Human-readable progress."),
        "attempts": Int(desc="Attempts so far."),
        "startTime": Str(desc="Start (RFC 3339)."),
        "completionTime": Str(desc="End (RFC 3339)."),
        "deadline": Str(desc="Deadline (RFC 3339)."),
        "baseSnapshot": Int(desc="Snapshot planned against."),
        "committedSnapshot": Int(desc="Snapshot committed."),
        "filesRead": Int(desc="Files read."),
        "filesWritten": Int(desc="Files written."),
        "bytesRead": Int(desc="Bytes read."),
        "bytesWritten": Int(desc="Bytes written."),
        "rowsRead": Int(desc="Rows read."),
        "rowsWritten": Int(desc="Rows written."),
        "before": Anything(desc="Table health before.", mapping=True),
        "after": Anything(desc="Table health after.", mapping=True),
        "message": Str(desc="What happened, or what the run waits for."),
        "waitingFor": Str(desc="Why a Pending run has not started (a lock, a catalog slot)."),
        "nextAttemptAt": Str(desc="When a failed attempt is retried (RFC 3339)."),
        "duration": Str(desc="How long the run took, from its first attempt's start to its end (any end)."),
        "ranOn": Str(desc="spark or in-process."),
        "locks": Arr(desc="Leases the run holds (coordination.k8s.io).", items=Str(desc="A Lease name.")),
        "launcher": Str(
            desc="The launcher its attempts go to (spark.launcher), written before each launch with the Leases: "
            "where what a launch that never returned left is looked for."
        ),
        "launched": obj(
            "What was launched.",
            {
                "kind": Str(desc="SparkApplication, Job or Local."),
                "name": Str(desc="Its name."),
                "detail": Anything(desc="Launcher specifics (the Local launcher's process).", mapping=True),
            },
        ),
        "attemptFailure": obj(
            "Why the current attempt failed while its objects still ran (a pod that cannot start, or be "
            "scheduled): the controller stops them, then ends or retries the run with this reason.",
            {
                "message": Str(desc="What failed, and what to do."),
                "retriable": Bool(desc="Whether another attempt could fare better."),
            },
        ),
        "jobReport": Anything(desc="The job program's final report (written by the job program).", mapping=True),
    }
)
JOB = Kind(
    JOB_KIND,
    JOBS,
    ("dlj",),
    "One maintenance run (compaction, expiry, cleanup, ...).",
    SPEC,
    STATUS,
    (
        {"name": "Table", "type": "string", "jsonPath": ".spec.table"},
        {"name": "Operation", "type": "string", "jsonPath": ".spec.operation"},
        {"name": "State", "type": "string", "jsonPath": ".status.state"},
        {"name": "Progress", "type": "string", "jsonPath": ".status.progress"},
        {"name": "Started", "type": "date", "jsonPath": ".status.startTime"},
        {"name": "Duration", "type": "string", "jsonPath": ".status.duration"},
        {"name": "Message", "type": "string", "jsonPath": ".status.message"},
    ),
)


def _read_table_manifest(value: object) -> Any:
    """A "manifest" parameter's DuckLakeTable read by the loader this declaration is read by
    (imported here, when it runs: the loader imports the declarations)."""
    from ..load import read_table_manifest

    return read_table_manifest(value)
