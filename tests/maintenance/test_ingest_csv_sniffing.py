"""A CSV file is sniffed once, whole, and its types hold for every row: files whose later rows
do not fit the types of DuckDB's default sample (a value of another type, a column with no
value in the sample) get the types DuckDB's ``read_csv(..., sample_size = -1)`` gives, and no
row that parses is rejected or changed. Pass 2 reads with pass 1's dialect and sniffs nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

import ducklake_jobs.ingest_sources as sources
from ducklake_operator.catalog import Catalog, CatalogLocation
from support import duck
from support.ingest_runs import ingest

ROWS = 30_000  # beyond the sniffer's default sample (its first 20,479 rows)
LATE = 25_000  # the row from which the file's values differ from the sample's

# column b of each: what its rows hold before LATE and from it on. (Read with the sample's
# types, the fraction would be no rejected row: DuckDB's CSV reader rounds 2.5 into a BIGINT.)
FILES = {
    "no value in the sample, numbers later": ("NULL", "i::VARCHAR"),
    "numbers in the sample, text later": ("i::VARCHAR", "CASE WHEN i = {late} THEN 'x' ELSE i::VARCHAR END"),
    "whole numbers in the sample, a fraction later": ("i::VARCHAR", "(i + 0.5)::VARCHAR"),
    "dates in the sample, a non-date later": ("(DATE '2024-01-01' + (i % 300)::INTEGER)::VARCHAR", "'2024-13-01'"),
}


def write_csv(path: Path, early: str, late: str) -> Path:
    b = f"CASE WHEN i < {LATE} THEN {early} ELSE {late.format(late=LATE)} END"
    duckdb.execute(f"COPY (SELECT i AS a, {b} AS b FROM range({ROWS}) r(i)) TO '{path}' (HEADER)")
    return path


def table_of_a(tmp_path: Path) -> CatalogLocation:
    """An empty lake's ``t(a BIGINT)``."""
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "c.sqlite"))
    Catalog.create(location, str(tmp_path / "data") + "/").close()
    duck.run_workload(location, ["CREATE TABLE lk.t(a BIGINT)"])
    return location


def as_duckdb_reads(lake: CatalogLocation) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    con = duck.attach(lake, con=duck.connect())
    try:
        types = [(r[0], r[1]) for r in con.execute("DESCRIBE lk.t").fetchall()]
        return types, con.execute("SELECT * FROM lk.t ORDER BY a").fetchall()
    finally:
        con.close()


def whole_file(path: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The types and rows DuckDB's sniffer over the whole file gives."""
    con = duckdb.connect()
    try:
        scan = f"read_csv('{path}', sample_size = -1, ignore_errors = true)"
        types = [(r[0], r[1]) for r in con.execute(f"DESCRIBE SELECT * FROM {scan}").fetchall()]
        return types, con.execute(f"SELECT * FROM {scan} ORDER BY a").fetchall()
    finally:
        con.close()


@pytest.fixture
def sniffs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The file of every sniff, in the order they happen."""
    seen: list[str] = []
    sniff = sources.SourceReader._sniff

    def noting(self: sources.SourceReader) -> sources.CsvDialect | None:
        seen.append(self.source.file.path)
        return sniff(self)

    monkeypatch.setattr(sources.SourceReader, "_sniff", noting)
    return seen


@pytest.mark.parametrize("name", list(FILES))
def test_types_hold_for_every_row(tmp_path: Path, sniffs: list[str], name: str) -> None:
    path = write_csv(tmp_path / "in.csv", *FILES[name])
    lake = table_of_a(tmp_path)
    report = ingest(lake, path)
    assert (report["records"], report["recordsSkipped"], report["rowsWritten"]) == (ROWS, 0, ROWS)
    assert sniffs == [str(path)]  # pass 1's; pass 2 none
    assert as_duckdb_reads(lake) == whole_file(path)


def test_a_row_that_does_not_parse_is_skipped_by_line(tmp_path: Path, sniffs: list[str]) -> None:
    path = write_csv(tmp_path / "in.csv", "'s' || i", "'t' || i")
    (tmp_path / "in.csv").write_text(path.read_text() + "1,2,3\n")  # a row that does not parse
    lake = table_of_a(tmp_path)
    report = ingest(lake, path, onBadRecord="skip")
    assert (report["records"], report["recordsSkipped"], report["rowsWritten"]) == (ROWS, 1, ROWS)
    assert report["firstSkipped"][0].startswith(f"{path}:{ROWS + 2}: not a CSV row of this file (")
    assert sniffs == [str(path)]
    assert as_duckdb_reads(lake) == whole_file(path)
