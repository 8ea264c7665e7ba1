"""Where a DuckDB connection of the product spills: a directory of its own in TMPDIR, removed
with the connection, never ``.tmp`` in the working directory (DuckDB's default: the user's
directory under ``ducklake run-job``, read-only in the operator's pod)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from ducklake_operator.duckdb_session import open_session

# more than 50 MB to sort: a connection limited to 50 MB spills
SORT = "SELECT * FROM (SELECT i, md5(i::VARCHAR) AS s FROM range(3000000) r(i)) ORDER BY s"


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    cwd, tmp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    tmp.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return cwd, tmp


def test_a_connection_spills_into_a_directory_of_its_own_in_tmpdir_removed_with_it(dirs: tuple[Path, Path]) -> None:
    cwd, tmp = dirs
    con = open_session(threads=1, memory_limit_mb=50)
    other = open_session(threads=1, memory_limit_mb=50)
    try:
        assert con.execute(f"SELECT count(*) FROM ({SORT})").fetchone() == (3000000,)
        assert other.execute(f"SELECT count(*) FROM ({SORT})").fetchone() == (3000000,)
        spilled = sorted(tmp.iterdir())
        assert len(spilled) == 2 and all(p.name.startswith("ducklake-duckdb-") for p in spilled)
        assert list(cwd.iterdir()) == []
    finally:
        con.close()
        other.close()
    assert list(tmp.iterdir()) == [] and list(cwd.iterdir()) == []


def test_a_connection_given_its_spill_directory_spills_there(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    cwd, tmp = dirs
    con = open_session(threads=1, memory_limit_mb=50, spill=str(tmp_path / "given"))
    try:
        con.execute(f"SELECT count(*) FROM ({SORT})").fetchall()
        assert (tmp_path / "given").is_dir() and list(tmp.iterdir()) == [] and list(cwd.iterdir()) == []
    finally:
        con.close()


def test_a_connection_without_external_access_still_opens(dirs: tuple[Path, Path]) -> None:
    con = open_session(external_access=False)
    try:
        assert con.execute("SELECT 'a' || 1").fetchone() == ("a1",)
    finally:
        con.close()
