"""Lakes for the job program's tests: a catalog (SQLite or PostgreSQL) with a table of small
files written by DuckDB 1.5.5, the oracle that reads them back."""

from __future__ import annotations

import os
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass
from typing import Any

from ducklake_operator.catalog import Catalog, CatalogLocation
from support import duck
from support.job_program import catalog_manifest

PARTS = 3  # the partitioned table's partitions: one file group each
INSERTS = 2  # files per partition


@dataclass(frozen=True)
class Lake:
    location: CatalogLocation
    data_path: str

    def manifest(self, secret: str | None = None) -> dict[str, Any]:
        return catalog_manifest(self.location, self.data_path, secret)

    def rows(self, table: str = "t") -> list[tuple[Any, ...]]:
        """What DuckDB reads of ``lk.<table>``, by row id (a fresh session each time)."""
        con = duck.attach(self.location, con=duck.connect())
        try:
            return con.execute(f"SELECT rowid, * FROM lk.{table} ORDER BY rowid").fetchall()
        finally:
            con.close()

    def snapshot(self) -> int:
        with closing(Catalog.open(self.location)) as catalog:
            return catalog.snapshot().snapshot_id

    def files(self) -> set[str]:
        """Every Parquet file under the data path."""
        return {os.path.join(d, f) for d, _, names in os.walk(self.data_path) for f in names if f.endswith(".parquet")}


def new_lake(location: CatalogLocation, data_path: str, statements: Iterable[str]) -> Lake:
    """A new catalog at ``location``, then DuckDB's ``statements`` on it (one session)."""
    Catalog.create(location, data_path).close()
    duck.run_workload(location, statements)
    return Lake(location, data_path)


def partitioned_table(location: CatalogLocation, data_path: str) -> Lake:
    """``main.t``, partitioned into PARTS partitions of INSERTS small files each."""
    return new_lake(
        location,
        data_path,
        ["CREATE TABLE lk.t(id INTEGER, part INTEGER, v VARCHAR)", "ALTER TABLE lk.t SET PARTITIONED BY (part)"]
        + [
            f"INSERT INTO lk.t SELECT i, i % {PARTS}, 'v' || i FROM range({k * 300}, {k * 300 + 300}) t(i)"
            for k in range(INSERTS)
        ],
    )
