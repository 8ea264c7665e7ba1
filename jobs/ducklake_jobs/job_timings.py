"""Where a job's time went, for its report: every second of the run belongs to one phase,
the one last entered. ``job_template`` starts a ``PhaseClock`` for the run; the steps say
when a phase begins (``enter``, through ``JobRun.phase``) or a nested one runs
(``within``, e.g. the Spark session's start inside the first tasks), without being handed
the clock: the running clock is the context's (a Spark task, in another process, has none).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

PLANNING, SPARK_START, TASKS, COMMIT = "planning", "sparkStart", "tasks", "commit"
PHASES = (PLANNING, SPARK_START, TASKS, COMMIT)  # every report has each, in seconds (0 when it never ran)
# the progress phases a job announces (``JobRun.phase``), and the timing phase each begins
OF_PROGRESS = {"planning": PLANNING, "reading": TASKS, "writing": TASKS, "committing": COMMIT}


class PhaseClock:
    """The seconds spent in each phase since ``started`` (a ``time.perf_counter`` reading:
    a launched run's clock starts before it opens its catalog)."""

    def __init__(self, started: float | None = None, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self.started = self._since = clock() if started is None else started
        self.phase = PLANNING
        self._spent = dict.fromkeys(PHASES, 0.0)

    def enter(self, phase: str) -> None:
        now = self._clock()
        self._spent[self.phase] += now - self._since
        self.phase, self._since = phase, now

    @contextmanager
    def within(self, phase: str) -> Iterator[None]:
        """``phase`` while the block runs, then the phase it interrupted."""
        outer = self.phase
        self.enter(phase)
        try:
            yield
        finally:
            self.enter(outer)

    def timings(self) -> dict[str, float]:
        """Seconds per phase so far, in milliseconds rounded down: they add up to no more
        than a ``seconds`` read after them."""
        self.enter(self.phase)
        return {phase: math.floor(spent * 1000) / 1000 for phase, spent in self._spent.items()}

    def seconds(self) -> float:
        """Seconds since ``started``, in milliseconds rounded up: never less than the float
        sum of ``timings`` (0.646 + 0.166 + 0.271 is 1.0830000000000002)."""
        return math.ceil((self._clock() - self.started) * 1000) / 1000


_RUNNING: ContextVar[PhaseClock | None] = ContextVar("ducklake_job_clock", default=None)


@contextmanager
def running(clock: PhaseClock) -> Iterator[PhaseClock]:
    """``clock`` is the context's while the block runs."""
    token = _RUNNING.set(clock)
    try:
        yield clock
    finally:
        _RUNNING.reset(token)


def enter(phase: str) -> None:
    """The running clock (if any) enters ``phase``."""
    clock = _RUNNING.get()
    if clock is not None:
        clock.enter(phase)


@contextmanager
def within(phase: str) -> Iterator[None]:
    """``phase`` on the running clock (if any) while the block runs."""
    clock = _RUNNING.get()
    if clock is None:
        yield
        return
    with clock.within(phase):
        yield
