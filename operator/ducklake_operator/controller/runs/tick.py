"""The states of a run and what one tick of it decides (``Tick``): status fields to merge,
events to post, when to look again; the run's timestamps and its duration."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ...api.v1alpha1.job import ACTIVE_STATES, ENDED_STATES, FAILED, SUCCEEDED
from ...api.v1alpha1.names import COMPLETE, FAILED_CONDITION
from ...model import timestamps
from ..status import condition

ACTIVE = ("", *ACTIVE_STATES)  # a run the operator has not seen yet has no state
RETRY_BACKOFF = 10.0  # seconds before the first retry; doubles per attempt
RETRY_BACKOFF_CAP = 600.0
FOLLOW_INTERVAL = 2.0  # seconds between looks at a running attempt (a Local one also wakes its run on exit)
WAIT_INTERVAL = 10.0  # a waiting run looks again at least this often (it is woken when a run of its catalog ends)


@dataclass
class Tick:
    """What one tick decided: status fields to merge, events to post, and when to look again."""

    status: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, str, str]] = field(default_factory=list)
    again_in: float | None = FOLLOW_INTERVAL  # None: the run has ended
    attempt_report: Mapping[str, Any] | None = None  # the program's report of an attempt that ended (for metrics)

    def end(self, state: str, message: str, now: float, generation: int | None) -> Tick:
        ok = state == SUCCEEDED
        self.status.update(state=state, message=message, completionTime=stamp(now), waitingFor=None,
                           nextAttemptAt=None)  # fmt: skip
        if ok:
            self.status["progress"] = "done"
        self.status["conditions"] = [
            condition(COMPLETE, ok, state, message if ok else "", generation),
            condition(FAILED_CONDITION, state == FAILED, state, message if state == FAILED else "", generation),
        ]
        self.events.append(("Warning" if state == FAILED else "Normal", state, message))
        self.again_in = None
        return self


def stamp(t: float) -> str:
    return timestamps.stamp(datetime.fromtimestamp(t, UTC))


def parse_stamp(text: str | None) -> float | None:
    parsed = timestamps.parse(text)
    return parsed.timestamp() if parsed is not None else None


def with_duration(tick: Tick, status: Mapping[str, Any], now: float) -> Tick:
    """Every end of a run that started says how long it took, whatever the end (kubectl's
    DURATION column): from its first attempt's start, retries included."""
    if tick.status.get("state") in ENDED_STATES:
        start = parse_stamp(tick.status.get("startTime") or status.get("startTime"))
        if start is not None:
            tick.status["duration"] = duration(now - start)
    return tick


def duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
