"""One compaction task over many small files (up to 100,000 files in one file group).

A task reads its sources ``file_rewrite.FILES_PER_SCAN`` at a time into a staging table: one
DuckDB scan of every file kept tens of kilobytes of each until the end of the write (its
order-preserving writer holds each tiny file's rows as a batch of its own), and made the
per-file lists anew for every file read, so memory grew with the file count (7.4 GB at 30,000
files of 3 rows) and time with its square. Scaled down here: the staged compaction keeps the
rows and their ids, and its peak RSS does not grow with the number of files. Files of more
rows (``file_rewrite.STAGE_BELOW_ROWS`` on average) are read in one scan however many there
are: the writer's batches of them fill row groups, and staging only copied their bytes twice.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from ducklake_jobs import compact as compact_job
from ducklake_jobs import file_rewrite
from ducklake_operator.catalog import Catalog, CatalogLocation
from support import duck
from support.many_files import create_many_files_table

CHECK = "SELECT count(*), sum(id), bool_and(v = 'v' || id), bool_and(rowid = id) FROM lk.t"

# the child: compacts the table (in-process, staged FILES_PER_SCAN files at a time) and
# prints its peak RSS in kB
CHILD = """
import resource, sys
from ducklake_jobs import compact, file_rewrite
from ducklake_operator.catalog import Catalog, CatalogLocation
file_rewrite.FILES_PER_SCAN = int(sys.argv[2])
catalog = Catalog.open(CatalogLocation(kind="sqlite", path=sys.argv[1]))
report = compact.compact(catalog, "main", "t")
assert report["filesWritten"] == 1, report
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _lake(root: str, files: int) -> CatalogLocation:
    location = CatalogLocation(kind="sqlite", path=os.path.join(root, "lake.sqlite"))
    catalog = Catalog.create(location, os.path.join(root, "data") + "/")
    create_many_files_table(catalog, files)
    catalog.close()
    return location


def _read(location: CatalogLocation) -> tuple[object, ...]:
    con = duck.attach(location, con=duck.connect())
    try:
        row = con.execute(CHECK).fetchone()
        files = duck.scalar(con, "SELECT count(*) FROM ducklake_list_files('lk', 't')")
        assert row is not None
        return (*row, files)
    finally:
        con.close()


def test_a_staged_group_keeps_rows_and_row_ids(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    location = _lake(str(tmp_path), 250)
    rows, total, values_ok, ids_ok, files = _read(location)
    assert (rows, values_ok, ids_ok, files) == (750, True, True, 250)
    monkeypatch.setattr(file_rewrite, "FILES_PER_SCAN", 40)  # 7 slices, the last one short
    catalog = Catalog.open(location)
    try:
        report = compact_job.compact(catalog, "main", "t")
    finally:
        catalog.close()
    assert (report["groups"], report["filesRead"], report["filesWritten"]) == (1, 250, 1)
    assert _read(location) == (750, total, True, True, 1)  # every row, its value and its row id


@pytest.mark.parametrize(("rows_per_file", "staged"), [(3, True), (4, False)])
def test_only_files_of_few_rows_are_staged(tmp_path, monkeypatch: pytest.MonkeyPatch, rows_per_file, staged) -> None:
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "lake.sqlite"))
    catalog = Catalog.create(location, str(tmp_path / "data") + "/")
    create_many_files_table(catalog, 100, rows_per_file=rows_per_file)
    rows, total, *_ = _read(location)
    monkeypatch.setattr(file_rewrite, "FILES_PER_SCAN", 40)
    monkeypatch.setattr(file_rewrite, "STAGE_BELOW_ROWS", 4)
    stagings: list[int] = []
    real = file_rewrite._staged

    def counted(*args: Any) -> str:
        stagings.append(1)
        return real(*args)

    monkeypatch.setattr(file_rewrite, "_staged", counted)
    try:
        report = compact_job.compact(catalog, "main", "t")
    finally:
        catalog.close()
    assert (report["filesRead"], report["filesWritten"], bool(stagings)) == (100, 1, staged)
    assert _read(location) == (rows, total, True, True, 1)


def _peak_rss_kb(root: str, files: int, per_scan: int) -> int:
    location = _lake(root, files)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, location.path or "", str(per_scan)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


def test_peak_memory_does_not_grow_with_the_file_count(tmp_path) -> None:
    # 3,000 files in one group: before staging 160 MB more than 300 files, with it 28 MB
    few = _peak_rss_kb(str(tmp_path / "few"), 300, 150)
    many = _peak_rss_kb(str(tmp_path / "many"), 3000, 150)
    assert many - few < 80_000, f"peak RSS {few} kB for 300 files, {many} kB for 3,000"
