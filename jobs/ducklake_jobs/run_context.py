"""What a launched run adds to an operation, beyond its parameters: the DuckLakeJob it is
(whose uid marks its files' names and its commit), where its file groups run when they are
few (in this process, below ``in_process_below`` bytes of planned input), and who hears its
progress. ``ducklake run-job`` and the library's callers run with ``PLAIN_RUN``, which
adds nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ducklake_operator.model.job_marker import JobIdentity, commit_extra_info

from . import job_timings
from .task_runners import Runner, run_in_process, run_largest_first

W = TypeVar("W")
R = TypeVar("R")
REPLANS = 2  # a data-writing job whose inputs changed under it plans again this many times
Progress = Callable[[str, int, int], None]  # phase (planning, writing, committing), done, total


@dataclass(frozen=True)
class JobRun:
    job: JobIdentity | None = None
    in_process_below: int | None = None  # bytes; None: the runner given always runs the file groups
    progress: Progress | None = None

    @property
    def file_marker(self) -> str:
        return self.job.file_marker if self.job else ""

    def phase(self, phase: str, done: int = 0, total: int = 0) -> None:
        """Tell the progress listener, and the run's clock which phase its time goes to now."""
        timing = job_timings.OF_PROGRESS.get(phase)
        if timing is not None:
            job_timings.enter(timing)
        if self.progress is not None:
            self.progress(phase, done, total)

    def runner_for(self, runner: Runner, input_bytes: int) -> Runner:
        """This process for a planned input under ``in_process_below``, else ``runner``: a
        small job needs no Spark session (seconds to start)."""
        if self.in_process_below is not None and input_bytes < self.in_process_below:
            return run_in_process
        return runner

    def run_file_groups(
        self, runner: Runner, fn: Callable[[W], R], groups: list[W], sizes: Sequence[int] | None = None
    ) -> list[R]:
        """``fn`` over every group with ``runner``, results in the groups' order; ``sizes``:
        their input bytes, the largest then start first."""
        total = len(groups)
        self.phase("writing", 0, total)

        def on_done(done: int) -> None:
            self.phase("writing", done, total)

        if sizes is None:
            return runner(fn, groups, on_done)
        return run_largest_first(runner, fn, groups, sizes, on_done)

    def committing(self, groups: int = 0) -> None:
        self.phase("committing", groups, groups)

    def extra_info(self, report: Mapping[str, Any]) -> str | None:
        """The commit's ``commit_extra_info``: the job and the report so far; None without a job."""
        return commit_extra_info(self.job, report) if self.job else None


PLAIN_RUN = JobRun()
