"""``python -m ducklake_jobs run --run-file PATH`` (console script ``ducklake-job``): the job
program every launcher runs (``launched_program``).

stdout carries the program's JSON lines and nothing else: whatever else would write there
(Spark's JVM, DuckDB's progress bar, a stray print) is sent to stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import NoReturn


@contextmanager
def events_on_stdout() -> Iterator[Callable[[str], None]]:
    """A line writer to the real stdout, while file descriptor 1 points at stderr."""
    sys.stdout.flush()
    events_fd, saved = os.dup(1), os.dup(1)
    os.dup2(2, 1)
    events = os.fdopen(events_fd, "w", encoding="utf-8", buffering=1)

    def write(line: str) -> None:
        events.write(line + "\n")
        events.flush()

    try:
        yield write
    finally:
        events.close()
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="ducklake-job", description="Run one DuckLake maintenance job as its run document describes."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser(
        "run",
        help="run the job: JSON lines on stdout (progress, then the result); "
        "exit 0 succeeded, 1 failed (nothing committed), 3 commit outcome unknown",
    )
    run.add_argument("--run-file", required=True, help="the run document (JSON), e.g. /etc/ducklake/run.json")
    spare = sub.add_parser(
        "spare",
        help="start Spark as the settings say, then run the job whose run file and credentials come on stdin "
        "(one JSON line; the Local launcher's warm spare); exit at the end of input",
    )
    spare.add_argument("--spark", required=True, help="the Spark settings: a run document's spark object, as JSON")
    spare.add_argument("--idle-seconds", type=float, help="exit when no run came within this long")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("ducklake_jobs").setLevel(logging.INFO)

    from .launched_program import run_job  # after argument parsing: --help needs neither DuckDB nor the catalog
    from .pyspark_path import prefer_installed

    prefer_installed()  # under spark-submit, PySpark from its package: pyspark.zip would be compiled again

    with events_on_stdout() as write:
        if args.command == "spare":
            from .spare import serve

            return serve(args.spark, args.idle_seconds, write)
        return run_job(args.run_file, write, os.environ)


def exit_now(code: int) -> NoReturn:
    """End the program with ``code`` once its output is flushed, without the interpreter's
    teardown (a quarter to half a second of unloading DuckDB, pyarrow and the rest, while the
    launcher waits for the exit to look at the run): everything the run opened is closed by
    then. A program that started Spark kills the JVM it started (``session.stop_jvm``) and
    ends the usual way, so that its exit handlers remove the session's directories."""
    if "pyspark" in sys.modules:
        from .session import stop_jvm

        stop_jvm()
        sys.exit(code)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
