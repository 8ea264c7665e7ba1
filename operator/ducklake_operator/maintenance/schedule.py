"""When a scheduled run is due (pure): 5-field cron in the policy's time zone, a window, and
the last cron time already run.

Cron expressions are read on the wall clocks of the window's time zone (UTC without a
window), with the DST rules of ``windows``: a repeated wall time runs once, at its first
occurrence; a skipped one runs when the gap ends. A cron time is an instant, so two cron
wall times that fall into the same gap are one run.

Nothing starts outside the window: a cron time outside it is deferred to the window's next
opening, not dropped. The caller keeps the last cron time a run was created for
(``lastScheduleTime``, published in the policy's status, as a CronJob does); every cron
time after it and up to now is owed, and however many there are (the operator was down,
the window was closed, a run of the same table and operation was still going), they are
paid with **one** run, for the latest of them, once the window is open. So no cron time is
ever run twice, and none is lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import CroniterBadDateError, croniter

from ..api.v1alpha1.policy import Window
from .windows import (
    aware,
    describe_instant,
    describe_window,
    first_instant_at,
    in_window,
    next_opening,
    wall_time,
    window_zone,
    zone,
)

# A run that starts later than this after its due time (the cron time, or the window's opening
# for a deferred one) was missed: the operator was down, or the table busy. Only the reason
# says so; the run is the same.
LATE_AFTER = timedelta(minutes=5)
_GUARD = 100_000  # cron times skipped in one search are at most a repeated hour's worth


def cron_zone(window: Window | None, timezone: str | None = None) -> ZoneInfo:
    """The zone a schedule is read in: ``timezone`` if given, else the window's (UTC without one)."""
    return zone(timezone) if timezone is not None else window_zone(window)


def next_cron_time(cron: str, after: datetime, tz: ZoneInfo) -> datetime | None:
    """The first cron time strictly after ``after`` (None: the expression never fires, e.g. Feb 31)."""
    after = aware(after)
    times = croniter(cron, wall_time(after, tz))
    for _ in range(_GUARD):
        try:
            local = times.get_next(datetime)
        except CroniterBadDateError:
            return None
        instant = first_instant_at(local, tz)
        if instant > after:  # wall times of a repeated hour's second pass map back to their first
            return instant
    raise AssertionError(f"no cron time of {cron!r} after {after}")


def latest_cron_time(cron: str, at_or_before: datetime, tz: ZoneInfo) -> datetime | None:
    """The last cron time at or before ``at_or_before`` (None: none)."""
    at_or_before = aware(at_or_before)
    local = at_or_before.astimezone(tz)
    # In a repeated hour's second pass, later wall times of the first pass already happened:
    # as many as lie between the first pass's instant of this wall time and this one (in UTC:
    # Python subtracts times of one zone as wall times).
    ahead = local.astimezone(UTC) - local.replace(fold=0).astimezone(UTC) if local.fold else timedelta(0)
    times = croniter(cron, local.replace(tzinfo=None) + ahead + timedelta(seconds=1))
    for _ in range(_GUARD):
        try:
            instant = first_instant_at(times.get_prev(datetime), tz)
        except CroniterBadDateError:
            return None
        if instant <= at_or_before:
            return instant
    raise AssertionError(f"no cron time of {cron!r} before {at_or_before}")


def next_run(cron: str, after: datetime, window: Window | None = None, timezone: str | None = None) -> datetime | None:
    """When the first cron time after ``after`` would start: that time, or the window's next
    opening after it."""
    time = next_cron_time(cron, after, cron_zone(window, timezone))
    return None if time is None else next_opening(window, time)


@dataclass(frozen=True)
class Due:
    cron_time: datetime  # the latest owed cron time: the run's lastScheduleTime
    reason: str  # "schedule 0 2 * * *", "... deferred to the window ...", "missed schedule at ..."


def due(
    cron: str,
    now: datetime,
    *,
    since: datetime,
    window: Window | None = None,
    timezone: str | None = None,
) -> Due | None:
    """The run owed at ``now`` for the cron times after ``since`` (the last one run, or the
    policy's creation), or None: none owed, or the window is closed."""
    tz = cron_zone(window, timezone)
    now = aware(now)
    first = next_cron_time(cron, since, tz)
    if first is None or first > now or not in_window(window, now):
        return None
    latest = latest_cron_time(cron, now, tz)
    assert latest is not None and latest >= first
    opening = next_opening(window, latest)
    if now - opening > LATE_AFTER:
        reason = f"missed schedule at {describe_instant(latest, tz)}"
    elif opening != latest:
        assert window is not None
        reason = f"schedule {cron} at {describe_instant(latest, tz)}, deferred to the window {describe_window(window)}"
    else:
        reason = f"schedule {cron}"
    return Due(latest, reason)


def is_due(
    cron: str, now: datetime, *, since: datetime, window: Window | None = None, timezone: str | None = None
) -> bool:
    return due(cron, now, since=since, window=window, timezone=timezone) is not None


def next_due(
    cron: str, now: datetime, *, since: datetime, window: Window | None = None, timezone: str | None = None
) -> datetime | None:
    """When the next run can start: at the window's next opening if a cron time is owed
    already, else when the next cron time (or the window after it) comes."""
    first = next_cron_time(cron, since, cron_zone(window, timezone))
    return None if first is None else next_opening(window, max(first, aware(now)))
