"""What every data-writing job does after it planned: write its output, then commit it (or
discard the output when the commit is known not to have landed), its JSON report, and the
one-line reason of a failure."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ducklake_operator import storage
from ducklake_operator.errors import NOTHING_COMMITTED, DuckLakeError, JobFailed
from ducklake_operator.model.jvm_errors import innermost_jvm_error

from .fault_points import fault_point

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
        fault_point("after_commit")
    except BaseException as exc:
        if not isinstance(exc, DuckLakeError) or exc.cleanable:
            discard(planned_outputs())
        if isinstance(exc, Exception) and not isinstance(exc, DuckLakeError):
            raise JobFailed(f"{reason(exc)}; {NOTHING_COMMITTED}") from exc
        raise
    return produced, committed


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
