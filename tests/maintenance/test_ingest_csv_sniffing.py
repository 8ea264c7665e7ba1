"""A CSV file's types hold for every row: files whose later rows do not fit the types of
DuckDB's default sample (a value of another type, a column with no value in the sample) get the
types DuckDB's ``read_csv(..., sample_size = -1)`` gives, and no row that parses is rejected or
changed. The sample's types are tried first and proven as pass 2 writes the file
(``csv_checks``); where they hold, no sniff over every row is made (``csvTypesFromSample``);
where a value or a row refutes them, the files are read again sniffed over every row
(``csvSampleRefuted``), the whole-file sniff given the dialect the sample shows (a quarter of
the time), and a file with a row that does not split so is sniffed again, its dialect found
over every row too. Pass 2 reads with pass 1's dialect and sniffs nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

import ducklake_jobs.ingest_sources as sources
from ducklake_jobs.task_runners import run_on_spark
from ducklake_operator.catalog import Catalog, CatalogLocation
from support import duck
from support.ingest_runs import ingest

ROWS = 30_000  # beyond the sniffer's default sample (its first 20,479 rows)
LATE = 25_000  # the row from which the file's values differ from the sample's

# column b of each: what its rows hold before LATE and from it on. (Read with the sample's
# types by DuckDB's CSV reader, most would be no rejected row: it rounds 2.5 into a BIGINT,
# reads a DATE from a timestamp's text and a TIMESTAMP from one with an offset, dropping it.)
DAYS = "(DATE '2024-01-01' + (i % 300)::INTEGER)"
FILES = {
    "no value in the sample, numbers later": ("NULL", "i::VARCHAR"),
    "numbers in the sample, text later": ("i::VARCHAR", "CASE WHEN i = {late} THEN 'x' ELSE i::VARCHAR END"),
    "whole numbers in the sample, a fraction later": ("i::VARCHAR", "(i + 0.5)::VARCHAR"),
    "whole numbers in the sample, an exponent later": ("i::VARCHAR", "'5e-1'"),
    "whole numbers in the sample, leading zeros later": ("i::VARCHAR", "'007'"),
    "dates in the sample, a non-date later": (f"{DAYS}::VARCHAR", "'2024-13-01'"),
    "dates in the sample, a date and time later": (f"{DAYS}::VARCHAR", "'2024-01-02 10:00:00'"),
    "times in the sample, an offset later": (f"({DAYS} + INTERVAL 1 HOUR)::VARCHAR", "'2024-01-02 10:00:00+05'"),
    "booleans in the sample, a number later": ("(i % 2 = 0)::VARCHAR", "'1'"),
    "fractions in the sample, digits grouped later": ("(i + 0.25)::VARCHAR", "'1_000.5'"),
    "fractions in the sample, a sign later": ("(i + 0.25)::VARCHAR", "'+1.5'"),
}
UNSAMPLED = "no value in the sample, numbers later"  # its sample's types are not tried


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


def as_duckdb_reads(lake: CatalogLocation, names: list[str] | None = None) -> tuple[list[tuple[Any, ...]], list[Any]]:
    """The table's columns (``names``: those only) and rows, as DuckDB reads them."""
    con = duck.attach(lake, con=duck.connect())
    try:
        types = [(r[0], r[1]) for r in con.execute("DESCRIBE lk.t").fetchall() if names is None or r[0] in names]
        items = ", ".join(f'"{n}"' for n, _ in types)
        return types, con.execute(f"SELECT {items} FROM lk.t ORDER BY ALL").fetchall()
    finally:
        con.close()


def whole_file(path: Path) -> tuple[list[tuple[Any, ...]], list[Any]]:
    """The types and rows DuckDB's sniffer over the whole file gives."""
    con = duckdb.connect()
    try:
        scan = f"read_csv('{path}', sample_size = -1, ignore_errors = true)"
        types = [(r[0], r[1]) for r in con.execute(f"DESCRIBE SELECT * FROM {scan}").fetchall()]
        return types, con.execute(f"SELECT * FROM {scan} ORDER BY ALL").fetchall()
    finally:
        con.close()


@pytest.fixture
def sniffs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """The file of every sniff and whether it was given the sample's dialect, in order."""
    seen: list[tuple[str, bool]] = []
    sniff = sources.SourceReader._sniff

    def noting(self: sources.SourceReader, on_sample: bool = True) -> sources.CsvDialect | None:
        seen.append((self.source.file.path, on_sample))
        return sniff(self, on_sample)

    monkeypatch.setattr(sources.SourceReader, "_sniff", noting)
    return seen


@pytest.mark.parametrize("name", list(FILES))
def test_types_hold_for_every_row(tmp_path: Path, sniffs: list[tuple[str, bool]], name: str) -> None:
    path = write_csv(tmp_path / "in.csv", *FILES[name])
    lake = table_of_a(tmp_path)
    report = ingest(lake, path)
    assert (report["records"], report["recordsSkipped"], report["rowsWritten"]) == (ROWS, 0, ROWS)
    assert report["csvTypesFromSample"] == 0
    assert ("csvSampleRefuted" in report) == (name != UNSAMPLED)
    assert sniffs == [(str(path), True)]  # pass 1's, in the sample's dialect; pass 2 none
    assert as_duckdb_reads(lake) == whole_file(path)


@pytest.mark.parametrize("refuted", [True, False], ids=["refuted", "proven"])
def test_on_spark_a_refuted_sample_is_read_again_and_a_proven_one_not(tmp_path: Path, refuted: bool) -> None:
    """Pass 2's tasks on Spark workers prove the sample's types, and the driver hears of a
    refutation from them: a fraction after whole numbers ends as over the whole file there too."""
    path = write_csv(tmp_path / "in.csv", "i::VARCHAR", "(i + 0.5)::VARCHAR" if refuted else "i::VARCHAR")
    lake = table_of_a(tmp_path)
    report = ingest(lake, path, runner=run_on_spark)
    assert (report["ranOn"], report["rowsWritten"]) == ("spark", ROWS)
    assert ("csvSampleRefuted" in report, report["csvTypesFromSample"]) == (refuted, 0 if refuted else 1)
    assert as_duckdb_reads(lake) == whole_file(path)


def test_the_sample_s_types_that_hold_are_not_sniffed_over_every_row(
    tmp_path: Path, sniffs: list[tuple[str, bool]]
) -> None:
    """Files of every type the sample's types are proven for, in one pass: the same table as
    with types sniffed over every row, and no such sniff."""
    values = (
        "i AS a, i * 7 - 3 AS b, CASE WHEN i % 5 = 0 THEN NULL ELSE i / 4 END AS c, 's' || i AS d, i % 3 = 0 AS e, "
        f"{DAYS} AS f, TIMESTAMP '2024-01-01 00:00:00.25' + INTERVAL (i) SECOND AS g"
    )
    paths = [tmp_path / "in" / f"{k}.csv" for k in range(3)]
    paths[0].parent.mkdir()
    for k, path in enumerate(paths):
        duckdb.execute(f"COPY (SELECT {values} FROM range({k * ROWS}, {(k + 1) * ROWS}) r(i)) TO '{path}' (HEADER)")
    lake = table_of_a(tmp_path)
    report = ingest(lake, paths[0].parent)
    assert (report["records"], report["rowsWritten"], report["csvTypesFromSample"]) == (3 * ROWS, 3 * ROWS, 3)
    assert "csvSampleRefuted" not in report and sniffs == []
    con = duckdb.connect()
    try:
        scan = f"read_csv('{paths[0].parent}/*.csv', sample_size = -1)"
        types = [(r[0], r[1]) for r in con.execute(f"DESCRIBE SELECT * FROM {scan}").fetchall()]
        rows = con.execute(f"SELECT * FROM {scan} ORDER BY ALL").fetchall()
    finally:
        con.close()
    assert types == [
        ("a", "BIGINT"),
        ("b", "BIGINT"),
        ("c", "DOUBLE"),
        ("d", "VARCHAR"),
        ("e", "BOOLEAN"),
        ("f", "DATE"),
        ("g", "TIMESTAMP"),
    ]
    assert as_duckdb_reads(lake) == (types, rows)


def test_a_row_that_does_not_parse_is_skipped_by_line(tmp_path: Path, sniffs: list[tuple[str, bool]]) -> None:
    path = write_csv(tmp_path / "in.csv", "'s' || i", "'t' || i")
    (tmp_path / "in.csv").write_text(path.read_text() + "1,2,3\n")  # a row that does not parse
    lake = table_of_a(tmp_path)
    report = ingest(lake, path, onBadRecord="skip")
    assert (report["records"], report["recordsSkipped"], report["rowsWritten"]) == (ROWS, 1, ROWS)
    assert report["firstSkipped"][0].startswith(f"{path}:{ROWS + 2}: not a CSV row of this file (")
    assert "does not parse" in report["csvSampleRefuted"]  # so it was read again
    assert sniffs == [(str(path), True), (str(path), False)]  # the row did not split as the sample's
    assert as_duckdb_reads(lake) == whole_file(path)


# Files whose later rows split otherwise than the sample's: each reads as the whole-file sniff
# reads it. (the lines after LATE rows of plain numbers in a, text in b; how many of them parse)
LATE_ROWS = {
    "a quoted field with the delimiter in it": ('1,"x, y"\n2,"say ""hi"""\n', 2),
    "a quoted field without": ('3,"plain"\n', 1),
    "a quote inside a field": ('4,5" tall\n', 1),
    "a row of three fields": ("5,a,b\n6,c\n", 1),
}


@pytest.mark.parametrize("name", list(LATE_ROWS))
def test_rows_that_split_otherwise_later_read_as_over_the_whole_file(
    tmp_path: Path, sniffs: list[tuple[str, bool]], name: str
) -> None:
    lines, parsed = LATE_ROWS[name]
    path = write_csv(tmp_path / "in.csv", "'s' || i", "'t' || i")
    path.write_text(path.read_text() + lines)
    lake = table_of_a(tmp_path)
    report = ingest(lake, path, onBadRecord="skip")
    skipped = len(lines.splitlines()) - parsed
    assert (report["records"], report["recordsSkipped"]) == (ROWS + parsed, skipped)
    assert as_duckdb_reads(lake) == whole_file(path)
    if "csvSampleRefuted" in report:  # a row the sample's dialect does not read: read again
        assert sniffs[0] == (str(path), True) and len(sniffs) == 1 + bool(skipped)
    else:  # the sample's dialect and types read every row
        assert sniffs == [] and not skipped


@pytest.mark.parametrize(
    "text",
    [
        "a\tb\r\n" + "".join(f"{i}\tx{i}\r\n" for i in range(ROWS)),  # tabs, CRLF
        "a;b\n" + "".join(f"{i};'x;{i}'\n" for i in range(ROWS)),  # semicolons, quoted in '
        "# made by hand\na,b\n" + "".join(f"{i},{i * 0.5}\n" for i in range(ROWS)),  # a line before the header
        "".join(f"{i},{i % 7}\n" for i in range(ROWS)),  # no header
    ],
    ids=["tabs", "single quotes", "a line first", "no header"],
)
def test_dialects_of_the_sample_read_as_over_the_whole_file(
    tmp_path: Path, sniffs: list[tuple[str, bool]], text: str
) -> None:
    path = tmp_path / "in.csv"
    path.write_text(text)
    lake = table_of_a(tmp_path)
    report = ingest(lake, path)
    assert report["recordsSkipped"] == 0 and report["rowsWritten"] == ROWS
    assert (sniffs, report["csvTypesFromSample"]) == ([], 1)  # the sample's dialect and types hold
    types, rows = whole_file(path)
    assert as_duckdb_reads(lake, [name for name, _ in types]) == (types, rows)
