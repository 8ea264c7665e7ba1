"""A table four times the memory a run is given is compacted, repartitioned and type-rewritten
in-process (``ducklake run-job --no-spark --memory-limit``): the run completes, DuckDB reads
the same rows (ids and values), the process's peak RSS stays under the limit plus the stated
overhead, DuckDB spilled into the task's scratch directory, and nothing is left there.

The overhead is measured, not guessed: the same job on a tiny table (the interpreter,
pyarrow, DuckDB and its extensions, the catalog), plus ``memory_runs.UNTRACKED_BYTES``.
Without the limit the same runs peak well above that bound (README, "Tables larger than
memory"), so the bound is the limit's doing. The large run is ``bench/memory.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from support import memory_runs

LIMIT_MB = 100  # DuckDB gets 80 MB of it (at 64 MB the shuffle of repartition runs out of memory)
TABLE_MB = 4 * LIMIT_MB + 20  # of Parquet, at least 4x the limit
FILES = 40


@pytest.fixture(scope="module")
def lakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A table over four times the limit, and a tiny one (the baseline), built once."""
    big, tiny = str(tmp_path_factory.mktemp("big")), str(tmp_path_factory.mktemp("tiny"))
    size = memory_runs.build_table(big, TABLE_MB, FILES)
    assert size >= 4 * LIMIT_MB * 1_000_000, size
    memory_runs.build_table(tiny, 1, 4)
    yield big, tiny


@pytest.mark.parametrize("operation", sorted(memory_runs.OPERATIONS))
def test_a_table_four_times_the_memory_limit(operation: str, lakes: tuple[str, str], tmp_path) -> None:
    big, tiny = lakes
    measured = {}
    for name, source, limit in (("baseline", tiny, None), ("limited", big, f"{LIMIT_MB}MB")):
        root = str(tmp_path / name)
        memory_runs.copy_lake(source, root)
        memory_runs.prepare(root, operation, "1GB")  # compaction: one output file, larger than the limit
        before = memory_runs.fingerprint(root)
        run = memory_runs.run_job(root, operation, os.path.join(root, "scratch"), limit)
        assert run.exit_code == 0, run.stderr
        assert run.report["committedSnapshot"] is not None, run.report
        assert memory_runs.fingerprint(root) == before  # DuckDB reads the same rows, ids and values
        assert run.left == (), run.left  # the tasks' scratch (and spill) went with them
        measured[name] = run
    limited, baseline = measured["limited"], measured["baseline"]
    assert limited.report["ranOn"] == "in-process"
    assert limited.spill_peak_bytes > 0  # beyond its limit DuckDB spilled, into the task's scratch
    bound = baseline.peak_rss_bytes + LIMIT_MB * 1_000_000 + memory_runs.UNTRACKED_BYTES
    assert limited.peak_rss_bytes <= bound, (
        f"peak RSS {limited.peak_rss_bytes / 1e6:.0f} MB over {bound / 1e6:.0f} MB (baseline "
        f"{baseline.peak_rss_bytes / 1e6:.0f} MB + limit {LIMIT_MB} MB + {memory_runs.UNTRACKED_BYTES / 1e6:.0f} MB)"
    )
