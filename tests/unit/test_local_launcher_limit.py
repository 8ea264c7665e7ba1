"""The Local launcher's programs share the operator's pod: at most ``max_runs`` run at once
(chart value jobs.local.maxRuns); a launch beyond is refused with LauncherBusy, holding
nothing, and goes through once a program's run has released its place (its status no longer
shows it running), or a while after the program exited when no release comes. Real child
processes."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import pytest

from ducklake_operator.controller.launchers.local import LocalLauncher
from ducklake_operator.errors import LauncherBusy
from support.local_programs import attempt, ended, holding


def test_at_most_max_runs_programs_run_at_once(tmp_path: Any) -> None:
    hold = tmp_path / "hold"
    hold.write_text("")
    launcher = holding(tmp_path, max_runs=2)
    first, second = launcher.launch(attempt("a", "uid-a")), launcher.launch(attempt("b", "uid-b"))
    with pytest.raises(LauncherBusy, match="at most 2 at once"):
        launcher.launch(attempt("c", "uid-c"))
    assert launcher.launch(attempt("a", "uid-a")) == first  # the same attempt again is found, not refused
    assert not (tmp_path / "runs" / "c-uidc-1.launch.json").exists()  # nothing of the refused one started
    hold.unlink()
    assert ended(launcher, first) != "Running" and ended(launcher, second) != "Running"
    hold.write_text("")
    with pytest.raises(LauncherBusy):  # exited, but their runs still show them Running
        launcher.launch(attempt("c", "uid-c"))
    launcher.release(first)
    third = launcher.launch(attempt("c", "uid-c"))  # a place is free again
    assert launcher.observe(third).state == "Running"
    with pytest.raises(LauncherBusy):
        launcher.launch(attempt("d", "uid-d"))
    hold.unlink()
    ended(launcher, third)


def test_a_place_no_run_releases_is_free_a_while_after_its_program_exited(tmp_path: Any) -> None:
    launcher = LocalLauncher(lambda *_: "", state_dir=str(tmp_path / "runs"), program=(sys.executable, "-c", ""),
                             env={"PATH": os.environ["PATH"]}, max_runs=1, linger_seconds=0.5)  # fmt: skip
    first = launcher.launch(attempt("a", "uid-a"))
    assert ended(launcher, first) != "Running"
    with pytest.raises(LauncherBusy):  # seen exited now: it lingers from here
        launcher.launch(attempt("b", "uid-b"))
    time.sleep(0.6)
    second = launcher.launch(attempt("b", "uid-b"))
    assert ended(launcher, second) != "Running"


def test_programs_an_earlier_operator_started_count_too(tmp_path: Any) -> None:
    hold = tmp_path / "hold"
    hold.write_text("")
    running = holding(tmp_path, max_runs=1).launch(attempt("a", "uid-a"))
    after = holding(tmp_path, max_runs=1)  # the operator restarted
    assert after.observe(running).state == "Running"  # found again, and counted
    with pytest.raises(LauncherBusy):
        after.launch(attempt("b", "uid-b"))
    hold.unlink()
    assert ended(after, running) != "Running"
    after.release(running)
    second = after.launch(attempt("b", "uid-b"))  # its place is free: started
    assert second.detail["pid"] != running.detail["pid"]
    ended(after, second)


def test_a_launch_whose_run_never_recorded_it_is_found_and_stopped(tmp_path: Any) -> None:
    """The operator started the program and its run's status was never written (the API
    server failed the write): a run that then ends finds the program by its launch record,
    as a restarted operator would, and stops it. An attempt never launched leaves nothing."""
    hold = tmp_path / "hold"
    hold.write_text("")
    started = holding(tmp_path).launch(attempt("a", "uid-a"))
    found = holding(tmp_path).leftover(attempt("a", "uid-a"))  # another operator process, as after a restart
    assert found == started and holding(tmp_path).observe(found).state == "Running"
    later = holding(tmp_path, grace_seconds=2)
    later.cancel(found)
    assert later.stopped(found) and later.observe(found).state != "Running"
    assert holding(tmp_path).leftover(attempt("b", "uid-b")) is None
