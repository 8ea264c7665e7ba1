"""When scheduled maintenance runs: cron in a time zone across DST changes, windows that cross
midnight, deferred and missed runs. Every case has a fixed clock; nothing sleeps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from croniter import croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from ducklake_operator.api.v1alpha1.policy import Window
from ducklake_operator.maintenance.schedule import (
    LATE_AFTER,
    due,
    is_due,
    latest_cron_time,
    next_cron_time,
    next_due,
    next_run,
)
from ducklake_operator.maintenance.windows import first_instant_at, in_window, next_opening, zone

AMS = "Europe/Amsterdam"
NYC = "America/New_York"


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def local(
    name: str, year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, *, fold: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=zone(name), fold=fold).astimezone(UTC)


def times(cron: str, after: datetime, n: int, tz: str = "UTC") -> list[datetime]:
    out = []
    for _ in range(n):
        following = next_cron_time(cron, after, zone(tz))
        assert following is not None
        out.append(after := following)
    return out


# ------------------------------------------------------------------ cron in UTC


def test_every_minute_and_every_hour() -> None:
    assert times("* * * * *", utc(2025, 6, 1, 12, 0, 30), 3) == [
        utc(2025, 6, 1, 12, 1),
        utc(2025, 6, 1, 12, 2),
        utc(2025, 6, 1, 12, 3),
    ]
    assert times("0 * * * *", utc(2025, 6, 1, 12, 0), 2) == [utc(2025, 6, 1, 13), utc(2025, 6, 1, 14)]
    # "after" is strict, "at or before" inclusive
    assert next_cron_time("0 * * * *", utc(2025, 6, 1, 13), zone("UTC")) == utc(2025, 6, 1, 14)
    assert latest_cron_time("0 * * * *", utc(2025, 6, 1, 13), zone("UTC")) == utc(2025, 6, 1, 13)
    assert latest_cron_time("0 * * * *", utc(2025, 6, 1, 12, 59, 59), zone("UTC")) == utc(2025, 6, 1, 12)


def test_a_cron_that_never_fires_is_never_due() -> None:
    assert next_cron_time("0 2 31 2 *", utc(2025, 1, 1), zone("UTC")) is None
    assert next_run("0 2 31 2 *", utc(2025, 1, 1)) is None
    assert due("0 2 31 2 *", utc(2025, 6, 1), since=utc(2020, 1, 1)) is None
    assert next_due("0 2 31 2 *", utc(2025, 6, 1), since=utc(2020, 1, 1)) is None


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError, match="has no time zone"):
        next_run("* * * * *", datetime(2025, 1, 1))


# ------------------------------------------------------------------ DST


def test_a_skipped_wall_time_runs_when_the_gap_ends() -> None:
    # Europe/Amsterdam, 2025-03-30: 02:00 CET becomes 03:00 CEST (01:00 UTC)
    assert times("30 2 * * *", utc(2025, 3, 29, 12), 2, AMS) == [
        local(AMS, 2025, 3, 30, 3, 0),  # 02:30 does not exist: the end of the gap
        local(AMS, 2025, 3, 31, 2, 30),
    ]
    # every minute: the skipped hour's 60 wall times are one cron time, 03:00 CEST
    assert times("* * * * *", local(AMS, 2025, 3, 30, 1, 58), 3, AMS) == [
        local(AMS, 2025, 3, 30, 1, 59),
        local(AMS, 2025, 3, 30, 3, 0),
        local(AMS, 2025, 3, 30, 3, 1),
    ]
    # America/New_York, 2025-03-09: 02:00 EST becomes 03:00 EDT
    assert next_cron_time("30 2 * * *", utc(2025, 3, 8, 12), zone(NYC)) == local(NYC, 2025, 3, 9, 3, 0)
    assert local(NYC, 2025, 3, 9, 3, 0) == utc(2025, 3, 9, 7)


def test_a_repeated_wall_time_runs_once_at_its_first_occurrence() -> None:
    # Europe/Amsterdam, 2025-10-26: 03:00 CEST becomes 02:00 CET (01:00 UTC); 02:xx happens twice
    assert times("30 2 * * *", utc(2025, 10, 25, 12), 2, AMS) == [utc(2025, 10, 26, 0, 30), utc(2025, 10, 27, 1, 30)]
    # every minute: the second pass of 02:00-02:59 runs nothing
    assert times("* * * * *", local(AMS, 2025, 10, 26, 2, 58), 3, AMS) == [
        local(AMS, 2025, 10, 26, 2, 59),
        local(AMS, 2025, 10, 26, 3, 0),
        local(AMS, 2025, 10, 26, 3, 1),
    ]
    assert local(AMS, 2025, 10, 26, 3, 0) - local(AMS, 2025, 10, 26, 2, 59) == timedelta(hours=1, minutes=1)
    # during the second pass, the latest cron time is the first pass's
    second_pass = local(AMS, 2025, 10, 26, 2, 10, fold=1)
    assert latest_cron_time("45 2 * * *", second_pass, zone(AMS)) == local(AMS, 2025, 10, 26, 2, 45)
    assert next_cron_time("45 2 * * *", second_pass, zone(AMS)) == local(AMS, 2025, 10, 27, 2, 45)
    # America/New_York, 2025-11-02: 01:xx happens twice (EDT, then EST)
    assert next_cron_time("30 1 * * *", utc(2025, 11, 1, 12), zone(NYC)) == utc(2025, 11, 2, 5, 30)


def _brute_force_cron_times(cron: str, start: datetime, end: datetime, tz: str) -> list[datetime]:
    """Minute by minute: a matching wall time at its first occurrence, or the end of a gap
    that skipped a matching wall time (the rule the module documents)."""
    out, t = [], start.replace(second=0, microsecond=0) + timedelta(minutes=1)
    while t <= end:
        now, before = t.astimezone(zone(tz)), (t - timedelta(minutes=1)).astimezone(zone(tz))
        wall, prev_wall = now.replace(tzinfo=None), before.replace(tzinfo=None)
        skipped = []
        step = prev_wall + timedelta(minutes=1)
        while step < wall:  # a gap: the wall times the clocks jumped over
            skipped.append(step)
            step += timedelta(minutes=1)
        if (croniter.match(cron, wall) and now.fold == 0) or any(croniter.match(cron, s) for s in skipped):
            out.append(t)
        t += timedelta(minutes=1)
    return out


@pytest.mark.parametrize(
    "tz, day", [(AMS, (2025, 3, 30)), (AMS, (2025, 10, 26)), (NYC, (2025, 3, 9)), (NYC, (2025, 11, 2))]
)
@pytest.mark.parametrize("cron", ["*/7 * * * *", "30 2 * * *", "0 1-3 * * *", "59 1,2 * * *", "15 * * * *"])
def test_cron_times_across_dst_changes_match_a_minute_by_minute_oracle(
    tz: str, day: tuple[int, int, int], cron: str
) -> None:
    start = utc(*day) - timedelta(hours=12)
    end = start + timedelta(hours=30)
    expected = _brute_force_cron_times(cron, start, end, tz)
    got: list[datetime] = []
    t: datetime | None = start
    while t is not None and (t := next_cron_time(cron, t, zone(tz))) is not None and t <= end:
        got.append(t)
    assert got == expected and len(got) > 0
    for a, b in zip(got, got[1:], strict=False):  # each latest_cron_time between two cron times is the first
        assert latest_cron_time(cron, b - timedelta(seconds=1), zone(tz)) == a


# ------------------------------------------------------------------ windows


def test_a_window_crossing_midnight() -> None:
    night = Window("22:00", "04:00", AMS)
    assert not in_window(night, local(AMS, 2025, 6, 1, 21, 59))
    assert in_window(night, local(AMS, 2025, 6, 1, 22, 0))
    assert in_window(night, local(AMS, 2025, 6, 2, 3, 59))
    assert not in_window(night, local(AMS, 2025, 6, 2, 4, 0))
    assert next_opening(night, local(AMS, 2025, 6, 1, 12, 0)) == local(AMS, 2025, 6, 1, 22, 0)
    assert next_opening(night, local(AMS, 2025, 6, 1, 23, 0)) == local(AMS, 2025, 6, 1, 23, 0)
    # the night clocks go forward it is an hour shorter in real time, but the same on the clock
    assert in_window(night, utc(2025, 3, 30, 1, 59)) and not in_window(night, utc(2025, 3, 30, 2, 0))


def test_a_window_inside_a_dst_gap_does_not_open_that_day() -> None:
    gap = Window("02:00", "02:45", AMS)
    assert next_opening(gap, utc(2025, 3, 29, 12)) == local(AMS, 2025, 3, 31, 2, 0)
    # a window that starts in the gap opens when the gap ends
    assert next_opening(Window("02:30", "05:00", AMS), utc(2025, 3, 29, 12)) == local(AMS, 2025, 3, 30, 3, 0)


def test_a_window_across_new_yorks_fall_back_holds_the_repeated_hour_twice() -> None:
    night = Window("00:30", "01:30", NYC)
    assert in_window(night, local(NYC, 2025, 11, 2, 1, 15))  # EDT
    assert in_window(night, local(NYC, 2025, 11, 2, 1, 15, fold=1))  # EST, an hour later
    assert not in_window(night, local(NYC, 2025, 11, 2, 1, 30, fold=1))


# ------------------------------------------------------------------ due, deferred, missed


def test_a_run_due_outside_the_window_is_deferred_to_its_opening() -> None:
    night = Window("22:00", "04:00", AMS)
    since = local(AMS, 2025, 6, 1, 0, 0)
    noon = local(AMS, 2025, 6, 1, 12, 0)
    assert due("0 12 * * *", noon, since=since, window=night) is None  # the cron time, outside: nothing starts
    assert next_run("0 12 * * *", since, night) == local(AMS, 2025, 6, 1, 22, 0)
    assert next_due("0 12 * * *", noon, since=since, window=night) == local(AMS, 2025, 6, 1, 22, 0)
    run = due("0 12 * * *", local(AMS, 2025, 6, 1, 22, 0), since=since, window=night)
    assert run is not None and run.cron_time == noon
    assert (
        run.reason
        == "schedule 0 12 * * * at 2025-06-01 12:00 CEST, deferred to the window 22:00-04:00 Europe/Amsterdam"
    )
    # paid: nothing more until the next cron time, whose run waits for the next night
    assert not is_due("0 12 * * *", local(AMS, 2025, 6, 1, 23, 0), since=run.cron_time, window=night)
    assert next_due("0 12 * * *", local(AMS, 2025, 6, 1, 23, 0), since=run.cron_time, window=night) == local(
        AMS, 2025, 6, 2, 22, 0
    )


def test_on_time_runs_say_their_schedule() -> None:
    run = due("0 2 * * *", utc(2025, 6, 1, 2, 0, 40), since=utc(2025, 5, 31, 2))
    assert run is not None and run.cron_time == utc(2025, 6, 1, 2) and run.reason == "schedule 0 2 * * *"
    late = due("0 2 * * *", utc(2025, 6, 1, 2) + LATE_AFTER + timedelta(seconds=1), since=utc(2025, 5, 31, 2))
    assert late is not None and late.reason == "missed schedule at 2025-06-01 02:00 UTC"


def test_missed_schedules_run_once_when_the_operator_comes_back() -> None:
    window = Window("01:00", "05:00", "UTC")
    last = utc(2025, 6, 1, 2)  # the last cron time run; then the operator is down three days
    back_inside = due("0 2 * * *", utc(2025, 6, 4, 3), since=last, window=window)
    assert back_inside is not None and back_inside.cron_time == utc(2025, 6, 4, 2)  # one run, for the latest
    assert back_inside.reason == "missed schedule at 2025-06-04 02:00 UTC"
    assert due("0 2 * * *", utc(2025, 6, 4, 3, 1), since=back_inside.cron_time, window=window) is None

    # back outside the window: nothing until it opens, then one run for the latest
    assert due("0 2 * * *", utc(2025, 6, 4, 10), since=last, window=window) is None
    assert next_due("0 2 * * *", utc(2025, 6, 4, 10), since=last, window=window) == utc(2025, 6, 5, 1)
    opening = due("0 2 * * *", utc(2025, 6, 5, 1), since=last, window=window)
    assert opening is not None and opening.cron_time == utc(2025, 6, 4, 2)
    assert opening.reason == "missed schedule at 2025-06-04 02:00 UTC"
    # and the regular schedule goes on
    regular = due("0 2 * * *", utc(2025, 6, 5, 2), since=opening.cron_time, window=window)
    assert regular is not None and regular.reason == "schedule 0 2 * * *"


def test_missed_across_a_dst_change_in_new_york() -> None:
    window = Window("00:00", "06:00", NYC)
    last = local(NYC, 2025, 3, 8, 2, 30)
    back = due("30 2 * * *", local(NYC, 2025, 3, 9, 4, 0), since=last, window=window)
    assert back is not None and back.cron_time == local(NYC, 2025, 3, 9, 3, 0)
    assert back.reason == "missed schedule at 2025-03-09 03:00 EDT"


# ------------------------------------------------------------------ properties

ZONES = ["UTC", AMS, NYC, "Australia/Lord_Howe", "Asia/Kolkata"]


def _field(low: int, high: int) -> st.SearchStrategy[str]:
    n = st.integers(low, high)
    return st.one_of(
        st.just("*"),
        n.map(str),
        st.integers(2, max(2, (high - low) // 2)).map(lambda k: f"*/{k}"),
        st.tuples(n, n).map(lambda ab: f"{min(ab)}-{max(ab)}"),
        st.tuples(n, n).map(lambda ab: f"{ab[0]},{ab[1]}"),
    )


crons = st.tuples(_field(0, 59), _field(0, 23), _field(1, 28), _field(1, 12), _field(0, 6)).map(" ".join)
clock = st.tuples(st.integers(0, 23), st.integers(0, 59)).map(lambda hm: f"{hm[0]:02d}:{hm[1]:02d}")
windows = st.one_of(
    st.none(),
    st.tuples(clock, clock, st.sampled_from(ZONES)).filter(lambda w: w[0] != w[1]).map(lambda w: Window(*w)),
)
steps = st.lists(
    st.one_of(st.integers(1, 90), st.integers(60, 4 * 24 * 60), st.just(0)).map(lambda m: timedelta(minutes=m)),
    min_size=1,
    max_size=40,
)


def _inside(window: Window | None, instant: datetime) -> bool:
    """The window rule written once more, on minutes of the day."""
    if window is None:
        return True
    t = instant.astimezone(zone(window.timezone))
    now, (sh, sm), (eh, em) = t.hour * 60 + t.minute, map(int, window.start.split(":")), map(int, window.end.split(":"))
    start, end = sh * 60 + sm, eh * 60 + em
    return start <= now < end if start < end else now >= start or now < end


@settings(max_examples=150, deadline=None)
@given(
    crons,
    windows,
    st.sampled_from(ZONES),
    st.datetimes(datetime(2024, 1, 1), datetime(2026, 12, 31)).map(lambda d: d.replace(tzinfo=UTC)),
    steps,
    st.lists(st.booleans(), min_size=40, max_size=40),
)
def test_nothing_starts_outside_the_window_and_no_cron_time_runs_twice(
    cron: str, window: Window | None, tz: str, created: datetime, gaps: list[timedelta], wake: list[bool]
) -> None:
    """An evaluator that wakes at random times (long gaps: the operator was down) or at
    the next due time: every run starts inside the window, pays a cron time after the last
    one paid and at or before now, and a due time announced is due when it comes."""
    timezone = window.timezone if window else tz
    since, now = created, created
    paid: list[datetime] = []
    for gap, at_next in zip(gaps, wake, strict=False):
        announced = next_due(cron, now, since=since, window=window, timezone=timezone)
        now = announced if at_next and announced is not None and announced > now else now + gap
        run = due(cron, now, since=since, window=window, timezone=timezone)
        if at_next and announced is not None and now == announced:
            assert run is not None, "the announced due time was not due"
        if run is None:
            continue
        assert _inside(window, now)
        assert since < run.cron_time <= now
        assert latest_cron_time(cron, now, zone(timezone)) == run.cron_time  # owed times are paid by one run
        assert not paid or run.cron_time > paid[-1]
        paid.append(run.cron_time)
        since = run.cron_time
        assert due(cron, now, since=since, window=window, timezone=timezone) is None  # once per cron time


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(ZONES),
    st.datetimes(datetime(2024, 1, 1), datetime(2026, 12, 31)),
)
def test_first_instant_at_shows_that_wall_time_or_the_first_after_a_gap(tz: str, wall: datetime) -> None:
    wall = wall.replace(second=0, microsecond=0)
    instant = first_instant_at(wall, zone(tz))
    shown = instant.astimezone(zone(tz)).replace(tzinfo=None)
    assert shown >= wall
    if shown > wall:  # a gap: the minute before showed a time before the wall time
        assert (instant - timedelta(minutes=1)).astimezone(zone(tz)).replace(tzinfo=None) < wall
    else:  # the first occurrence: an hour earlier or less, the clock did not show it
        assert instant.astimezone(zone(tz)).fold == 0
