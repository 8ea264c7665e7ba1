"""Wall-clock time in a time zone, and maintenance windows (pure).

A policy's cron schedule and window are read on the clocks of one IANA time zone. Two
wall times need a rule, because daylight saving time makes some happen twice and others
never:

* a wall time that happens twice (clocks go back) is its **first** occurrence, so
  ``30 2 * * *`` runs once on that night, not twice;
* a wall time that never happens (clocks go forward over it) is the **end of the gap**:
  ``30 2 * * *`` runs at 03:00 CEST on the night Europe/Amsterdam skips 02:00-03:00, rather
  than not at all (Vixie cron does the same for jobs in the skipped hour).

A window ``start``-``end`` contains the instants whose wall time is at or after ``start``
and before ``end``; when ``end`` is earlier than ``start`` it crosses midnight (22:00-04:00).
Every instant is timezone-aware; naive datetimes are refused.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

from ..api.v1alpha1.policy import DEFAULT_TIMEZONE, Window

_SEARCH_DAYS = 370  # a window is open on some day of any year (a DST gap removes at most a day)


@lru_cache(maxsize=64)
def zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def aware(instant: datetime) -> datetime:
    """``instant`` in UTC; a naive datetime is a programming error (whose clock would it be?)."""
    if instant.tzinfo is None or instant.utcoffset() is None:
        raise ValueError(f"{instant!r} has no time zone")
    return instant.astimezone(UTC)


def wall_time(instant: datetime, tz: ZoneInfo) -> datetime:
    """The naive wall-clock time ``instant`` shows in ``tz``."""
    return aware(instant).astimezone(tz).replace(tzinfo=None)


def first_instant_at(local: datetime, tz: ZoneInfo) -> datetime:
    """The first instant (UTC) at which clocks in ``tz`` show the naive ``local`` time or a
    later one: a repeated wall time's first occurrence, a skipped one's gap end."""
    earlier = local.replace(tzinfo=tz, fold=0).astimezone(UTC)  # PEP 495: fold=0 is the first occurrence
    if earlier.astimezone(tz).replace(tzinfo=None) == local:
        return earlier
    # In a gap, fold=1 reads the time with the offset after the change (an instant before the
    # change) and fold=0 with the offset before it (an instant after): the change lies between.
    before = int(local.replace(tzinfo=tz, fold=1).astimezone(UTC).timestamp())
    after = int(earlier.timestamp())
    offset_after = earlier.astimezone(tz).utcoffset()
    while after - before > 1:  # transitions fall on whole seconds
        middle = (before + after) // 2
        if datetime.fromtimestamp(middle, UTC).astimezone(tz).utcoffset() == offset_after:
            after = middle
        else:
            before = middle
    return datetime.fromtimestamp(after, UTC)


def _clock(text: str) -> time:
    hours, minutes = text.split(":")
    return time(int(hours), int(minutes))


def window_zone(window: Window | None) -> ZoneInfo:
    return zone(window.timezone if window is not None else DEFAULT_TIMEZONE)


def in_window(window: Window | None, instant: datetime) -> bool:
    """Whether a run may start at ``instant`` (no window: always)."""
    if window is None:
        return True
    start, end = _clock(window.start), _clock(window.end)
    now = wall_time(instant, zone(window.timezone)).time()
    if start < end:
        return start <= now < end
    return now >= start or now < end  # crosses midnight (start == end is refused by the loader)


def next_opening(window: Window | None, instant: datetime) -> datetime:
    """The first instant at or after ``instant`` inside the window: ``instant`` itself when the
    window is open, else the window's next opening (a day whose window falls entirely in a DST
    gap is skipped)."""
    instant = aware(instant)
    if in_window(window, instant):
        return instant
    assert window is not None
    tz = zone(window.timezone)
    start = _clock(window.start)
    today: date = wall_time(instant, tz).date()
    for days in range(_SEARCH_DAYS):
        opening = first_instant_at(datetime.combine(today + timedelta(days=days), start), tz)
        if opening >= instant and in_window(window, opening):
            return opening
    raise AssertionError(f"window {window} never opens")  # unreachable: start < end on most days


def closed_until(window: Window | None, instant: datetime) -> datetime | None:
    """None when a run may start at ``instant``; else when the window opens next."""
    return None if in_window(window, instant) else next_opening(window, instant)


def describe_window(window: Window) -> str:
    return f"{window.start}-{window.end} {window.timezone}"


def describe_instant(instant: datetime, tz: ZoneInfo) -> str:
    """``2025-03-30 03:00 CEST``: how a person in the policy's zone reads an instant."""
    return aware(instant).astimezone(tz).strftime("%Y-%m-%d %H:%M %Z")
