"""What every data-writing job does after it planned: write its output, then commit it (or
discard the output when the commit is known not to have landed), its JSON report, and the
one-line reason of a failure."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from ducklake_operator import storage
from ducklake_operator.errors import NOTHING_COMMITTED, DuckLakeError, JobFailed
from ducklake_operator.model.jvm_errors import innermost_jvm_error

from . import job_timings
from .fault_points import fault_point
from .run_context import JobRun
from .task_runners import Runner, ran_on, run_in_process

if TYPE_CHECKING:  # a task module's worker imports this module: not the catalog (SQLAlchemy) with it
    from ducklake_operator.catalog import Catalog

W = TypeVar("W")
R = TypeVar("R")


def discard(paths: Iterable[str]) -> None:
    for path in paths:
        storage.delete(path)


def produce_and_commit(
    planned_outputs: Callable[[], Iterable[str]],
    produce: Callable[[], R],
    commit: Callable[[R], W],
    committing: Callable[[], None] | None = None,
) -> tuple[R, W]:
    """Write the output, then commit it (``committing`` is told in between). On any failure
    known not to have committed, every file the job planned to write is deleted (a killed
    job leaves orphans instead, which deleteOrphanFiles removes)."""
    try:
        produced = produce()
        fault_point("before_commit")
        if committing is not None:
            committing()
        committed = commit(produced)
        job_timings.enter(job_timings.PLANNING)  # what follows a commit: the report, or planning the next batch
        fault_point("after_commit")
    except BaseException as exc:
        if not isinstance(exc, DuckLakeError) or exc.cleanable:
            discard(planned_outputs())
        if isinstance(exc, Exception) and not isinstance(exc, DuckLakeError):
            raise JobFailed(f"{reason(exc)}; {NOTHING_COMMITTED}") from exc
        raise
    return produced, committed


def write_and_commit(
    catalog: Catalog,
    run: JobRun,
    report: Report,
    runner: Runner,
    tasks: list[W],
    write: Callable[[W], R],
    *,
    planned_outputs: Callable[[], Iterable[str]],
    change: Callable[[list[R]], Any],
    message: Callable[[list[R]], str],
    written: Callable[[list[R]], dict[str, Any]],
    author: str,
    base_snapshot: int,
) -> dict[str, Any]:
    """A file-rewriting job's last steps: ``write`` every task (a file group) with ``runner``,
    commit the ``change`` of their outputs as one snapshot from ``base_snapshot`` (marked with
    the job and its report so far), and report what was ``written`` and committed."""
    outputs, commit = produce_and_commit(
        planned_outputs,
        lambda: run.run_file_groups(runner, write, tasks),
        lambda outs: catalog.commit(
            [change(outs)],
            author=author,
            base_snapshot=base_snapshot,
            message=message(outs),
            extra_info=run.extra_info(report.done(**written(outs))),
            before_commit=lambda: fault_point("in_commit"),  # the transaction is open, nothing is visible yet
        ),
        committing=lambda: run.committing(len(tasks)),
    )
    return report.done(**written(outputs), committedSnapshot=commit.snapshot_id)


_ERROR_LINE = re.compile(r"^\s*(?:[A-Za-z_]\w*\.)*([A-Z]\w*): (.+)$")  # pyarrow.lib.ArrowInvalid: ...


def reason(exc: BaseException) -> str:
    """One line saying why: the innermost ``SomeError: message`` line of the text (a Spark
    task's failure arrives as a Python traceback inside a Java one), else the innermost Java
    cause (a Py4J error: Spark could not start, say), else the first line."""
    text = str(exc)
    found = [m for m in map(_ERROR_LINE.match, text.splitlines()) if m]
    if found:
        return f"{found[-1].group(1)}: {found[-1].group(2).strip()}"
    java = innermost_jvm_error(text)
    if java:
        return java
    first = text.strip().splitlines()[0] if text.strip() else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


class Report:
    """The JSON result every job prints: what it read and wrote, and the snapshots."""

    def __init__(self, operation: str, **fields: Any) -> None:
        self.started = time.perf_counter()
        self.fields: dict[str, Any] = {"operation": operation, **fields}

    def done(self, **fields: Any) -> dict[str, Any]:
        return {**self.fields, **fields, "seconds": round(time.perf_counter() - self.started, 3)}

    def nothing_written(self, **fields: Any) -> dict[str, Any]:
        """A dry run's report, or one with nothing to do: it ran in this process."""
        return self.done(filesWritten=0, committedSnapshot=None, ranOn=ran_on(run_in_process), **fields)

    def runner(self, run: JobRun, runner: Runner, input_bytes: int) -> Runner:
        """Where the file groups run (``run``'s choice for ``input_bytes`` of planned input),
        said in the report."""
        chosen = run.runner_for(runner, input_bytes)
        self.fields["ranOn"] = ran_on(chosen)
        return chosen
