"""DuckDB 1.5.5 with the ducklake extension loaded from its PyPI wheel: the test oracle.

The loading lives in ``ducklake_operator.duckdb_client`` (``ducklake sql`` uses it too);
these are the test-side helpers around it.
"""

from __future__ import annotations

import duckdb

from collections.abc import Iterable

from ducklake_operator.catalog import CatalogLocation
from ducklake_operator.duckdb_client import attach, connect, extension_path

__all__ = ["attach", "connect", "extension_path", "describe", "run_workload"]


def describe(con: duckdb.DuckDBPyConnection, qualified: str) -> list[tuple]:
    return [tuple(r[:3]) for r in con.execute(f"DESCRIBE {qualified}").fetchall()]


def run_workload(location: CatalogLocation, statements: Iterable[str], data_path: str | None = None) -> None:
    """Run SQL statements on the lake attached as ``lk``, in one DuckDB session."""
    con = attach(location, data_path=data_path)
    try:
        for sql in statements:
            con.execute(sql)
    finally:
        con.close()
