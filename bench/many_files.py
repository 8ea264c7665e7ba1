"""Compaction of a table of many tiny files on a PostgreSQL catalog: statements sent to the
catalog and where the time goes (reading the catalog, planning, writing, committing).

Makes the table quickly (``tests/support/many_files``: pyarrow writes the files, the library
registers them in a few set-based commits), checks DuckDB 1.5.5 reads it, then runs the
compact job in-process: a dry run (read + plan) and a real run, each with the peak RSS it
reached (polled); DuckDB must read the same rows, row ids included, afterwards. Starts a
throwaway PostgreSQL server, as the tests do.

    python bench/many_files.py --files 100000 [--target-file-size 1MB]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from ducklake_jobs import compact as compact_job  # noqa: E402
from ducklake_operator.catalog import Catalog, CatalogLocation  # noqa: E402
from ducklake_operator.model.options import parse_size  # noqa: E402
from support import duck  # noqa: E402
from support.catalog_statements import CatalogStatements  # noqa: E402
from support.many_files import create_many_files_table  # noqa: E402
from support.pgserver import PgServer  # noqa: E402

# what DuckDB reads of the table: every row once, with its row id and value
CHECK = (
    "SELECT count(*), sum(id), min(id), max(id), sum(rowid), bool_and(v = 'v' || id), bool_and(rowid = id) FROM lk.t"
)


class PeakRss:
    """The most resident memory this process held during a ``with`` block (``/proc/self/statm``
    polled every 20 ms: ``ru_maxrss`` is the whole run's high-water mark)."""

    def __init__(self) -> None:
        self.bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    @staticmethod
    def now() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def _poll(self) -> None:
        while not self._stop.wait(0.02):
            self.bytes = max(self.bytes, self.now())

    def __enter__(self) -> PeakRss:
        self.bytes = self.now()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.bytes = max(self.bytes, self.now())


class Phases:
    """Seconds and catalog statements per phase of one compact() call: the job's steps are
    wrapped where compact() calls them."""

    def __init__(self, catalog: Catalog, statements: CatalogStatements) -> None:
        self.catalog, self.statements = catalog, statements
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.start_rss = 0

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        with self.statements.during(name):
            yield
        self.seconds[name] += time.perf_counter() - t0

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with self.phase(name):
                return fn(*args, **kwargs)

        return wrapped

    @contextmanager
    def installed(self) -> Iterator[None]:
        saved = {k: getattr(compact_job, k) for k in ("read_inputs", "plan_compaction", "merge_tasks")}
        commit = self.catalog.commit
        for key, name in (
            ("read_inputs", "read catalog"),
            ("plan_compaction", "plan"),
            ("merge_tasks", "tasks (layouts)"),
        ):
            setattr(compact_job, key, self.wrap(name, saved[key]))
        self.catalog.commit = self.wrap("commit", commit)  # type: ignore[method-assign]
        try:
            yield
        finally:
            for k, v in saved.items():
                setattr(compact_job, k, v)
            del self.catalog.commit

    def run(self, label: str, **kwargs: Any) -> dict[str, Any]:
        self.seconds.clear()
        self.statements.by_phase.clear()
        self.start_rss = PeakRss.now()
        with self.installed():
            t0 = time.perf_counter()
            with self.statements.during("write (tasks)"), PeakRss() as peak:
                report = compact_job.compact(self.catalog, "main", "t", **kwargs)
            total = time.perf_counter() - t0
        counted = sum(v for k, v in self.seconds.items())
        self.seconds["write (tasks)"] = total - counted
        print(f"\n{label}: {report.get('groups')} groups, {report.get('filesRead')} files read")
        print(f"  {'phase':<18}{'seconds':>10}{'statements':>12}")
        for name in ("read catalog", "plan", "tasks (layouts)", "write (tasks)", "commit"):
            if name in self.seconds or self.statements.by_phase[name]:
                print(f"  {name:<18}{self.seconds[name]:>10.3f}{self.statements.by_phase[name]:>12}")
        print(f"  {'total':<18}{total:>10.3f}{self.statements.total:>12}")
        print(f"  peak RSS during the call: {peak.bytes / 1e6:.0f} MB (at its start {self.start_rss / 1e6:.0f} MB)")
        return report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--target-file-size", default=None, help="e.g. 1MB (default: the table's option)")
    args = parser.parse_args()
    target = parse_size(args.target_file_size) if args.target_file_size else None
    server, scratch = PgServer.start(), tempfile.TemporaryDirectory()
    try:
        server.create_database("bench")
        location = CatalogLocation(
            kind="postgres", host=server.host, port=server.port, database="bench", user=server.user
        )
        data_path = scratch.name + "/"
        catalog = Catalog.create(location, data_path)
        statements = CatalogStatements(catalog)
        t0 = time.perf_counter()
        with statements.during("build"):
            create_many_files_table(catalog, args.files)
        print(f"table of {args.files} files made in {time.perf_counter() - t0:.1f} s "
              f"({statements.by_phase['build']} catalog statements)")  # fmt: skip
        con = duck.attach(location, con=duck.connect())
        t0 = time.perf_counter()
        before = con.execute(CHECK).fetchone()
        print(f"DuckDB reads it in {time.perf_counter() - t0:.1f} s: {before}")
        con.close()

        phases = Phases(catalog, statements)
        phases.run("dry run (read + plan)", dry_run=True, target_file_size=target)
        report = phases.run("compact", target_file_size=target)
        print(f"  report: {report.get('filesWritten')} files written, snapshot {report.get('committedSnapshot')}")

        con = duck.attach(location, con=duck.connect())
        t0 = time.perf_counter()
        after = con.execute(CHECK).fetchone()
        files = duck.scalar(con, "SELECT count(*) FROM ducklake_list_files('lk', 't')")
        con.close()
        print(f"DuckDB reads the result in {time.perf_counter() - t0:.1f} s ({files} files): {after}")
        assert after == before, f"DuckDB reads other rows after the compaction: {after} != {before}"
        print(f"peak RSS of the whole run: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3:.0f} MB")
        catalog.close()
    finally:
        server.stop()
        scratch.cleanup()


if __name__ == "__main__":
    main()
