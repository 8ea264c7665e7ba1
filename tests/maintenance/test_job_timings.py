"""Every operation's report says where its time went: ``timings`` holds the seconds of each
phase (planning, sparkStart, tasks, commit), none negative, adding up to no more than the
report's ``seconds``; the phases that ran have time and the others none."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest

from ducklake_jobs import job_timings
from ducklake_jobs.job_template import run_operation
from ducklake_jobs.job_timings import PHASES, PhaseClock
from ducklake_jobs.operation_registry import MODULES, plugin
from ducklake_jobs.task_runners import run_in_process
from ducklake_operator.catalog import Catalog
from support import duck
from support.operation_cases import CASES, INSERTS, prepare


def test_every_operation_has_a_case() -> None:
    assert set(CASES) == set(MODULES)
    assert all(plugin(name).name == name for name in MODULES)


@pytest.mark.parametrize("operation", list(CASES))
def test_report_says_where_the_time_went(make_location, tmp_path: Path, operation: str) -> None:
    location = make_location("sqlite")
    table, params, writes = prepare(location, tmp_path, operation)
    with closing(Catalog.open(location)) as catalog:
        report = run_operation(catalog, operation, table, params, runner=run_in_process)
    timings = report["timings"]
    assert set(timings) == set(PHASES)
    assert all(isinstance(s, float) and s >= 0 for s in timings.values()), timings
    assert sum(timings.values()) <= report["seconds"]
    assert timings["sparkStart"] == 0  # in this process: no Spark session
    assert timings["planning"] > 0
    if writes:
        assert report["committedSnapshot"] is not None, report
        assert timings["tasks"] > 0 and timings["commit"] > 0, timings


def test_dry_run_is_all_planning(make_location, tmp_path: Path) -> None:
    location = make_location("sqlite")
    Catalog.create(location, str(tmp_path / "data") + "/")
    duck.run_workload(location, ["CREATE TABLE lk.t(id INTEGER, v VARCHAR)", *INSERTS])
    with closing(Catalog.open(location)) as catalog:
        report = run_operation(catalog, "compact", "main.t", {"dryRun": True})
    assert report["timings"]["planning"] > 0
    assert report["timings"]["tasks"] == report["timings"]["commit"] == report["timings"]["sparkStart"] == 0


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_phase_clock_gives_each_second_to_the_phase_last_entered() -> None:
    now = FakeClock()
    clock = PhaseClock(clock=now)
    now.now += 1.0  # planning
    with job_timings.running(clock):
        job_timings.enter(job_timings.TASKS)
        now.now += 0.5
        with job_timings.within(job_timings.SPARK_START):
            now.now += 2.0
        now.now += 3.0  # the tasks again, after the session started
        job_timings.enter(job_timings.COMMIT)
        now.now += 0.25
    job_timings.enter(job_timings.PLANNING)  # no running clock: nothing happens
    assert clock.timings() == {"planning": 1.0, "sparkStart": 2.0, "tasks": 3.5, "commit": 0.25}
    assert clock.seconds() == 6.75


def test_timings_never_add_up_to_more_than_the_seconds() -> None:
    now = FakeClock()
    clock = PhaseClock(clock=now)
    for phase in PHASES * 50:
        now.now += 0.0004999  # each rounds half a millisecond away
        clock.enter(phase)
    assert sum(clock.timings().values()) <= clock.seconds()


def test_timings_add_up_in_floats_to_no_more_than_the_seconds() -> None:
    """The phases of a CI run's report (floored to 0.646, 0.166, 0.271 s) add up, in floats,
    to 1.0830000000000002: more than the run's 1.0833 s rounded to the millisecond."""
    now = FakeClock()
    clock = PhaseClock(clock=now)
    for phase, spent in zip(PHASES, (0.6461, 0.0, 0.1661, 0.2711), strict=True):
        clock.enter(phase)
        now.now += spent
    assert list(clock.timings().values()) == [0.646, 0.0, 0.166, 0.271]
    assert sum(clock.timings().values()) <= clock.seconds() == 1.084
