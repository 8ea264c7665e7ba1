"""What the jobs leave alone, and say so: files registered with a name mapping (no field
ids to keep) and encrypted lakes (the jobs write plain Parquet)."""

from __future__ import annotations

import pytest

from ducklake_jobs.compact import compact
from ducklake_jobs.flush import flush_inlined_data
from ducklake_jobs.rewrite_deletes import rewrite_deletes
from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.errors import DuckLakeError
from support import duck


def test_name_mapped_files_are_not_merged(catalog: Catalog, location, tmp_path) -> None:
    con = duck.attach(location)
    con.execute("CREATE TABLE lk.t(id INTEGER, v VARCHAR)")
    for k in range(2):
        external = str(tmp_path / f"ext{k}.parquet")
        con.execute(
            f"COPY (SELECT i::INTEGER AS id, 'e' || i AS v FROM range({k * 50}, {k * 50 + 50}) t(i)) TO '{external}'"
        )
        con.execute(f"CALL ducklake_add_data_files('lk', 't', '{external}')")
    for k in range(2, 4):
        con.execute(f"INSERT INTO lk.t SELECT i, 'v' || i FROM range({k * 50}, {k * 50 + 50}) t(i)")
    rows = con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall()
    result = compact(catalog, "main", "t")
    assert result["filesRead"] == 2  # only the two files with field ids
    assert con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall() == rows
    mapped = [f for f in catalog.state().table("main", "t").data_files if f.mapping_id is not None]
    assert len(mapped) == 2


def test_encrypted_lake_is_refused(tmp_path) -> None:
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "c.sqlite"))
    con = duck.connect()
    con.execute(f"ATTACH 'ducklake:sqlite:{location.path}' AS lk (DATA_PATH '{tmp_path}/data/', ENCRYPTED true)")
    con.execute("CREATE TABLE lk.t(id INTEGER)")
    con.execute("INSERT INTO lk.t VALUES (1)")
    con.close()
    catalog = Catalog.open(location)
    for job in (
        lambda: compact(catalog, "main", "t"),
        lambda: rewrite_deletes(catalog, "main", "t"),
        lambda: flush_inlined_data(catalog),
    ):
        with pytest.raises(DuckLakeError, match="encrypted"):
            job()
