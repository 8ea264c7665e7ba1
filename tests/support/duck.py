"""DuckDB 1.5.5 with the ducklake extension loaded from its PyPI wheel: the test oracle.

The loading lives in ``ducklake_operator.duckdb_client`` (``ducklake sql`` uses it too);
these are the test-side helpers around it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import duckdb

from ducklake_operator.catalog import CatalogLocation
from ducklake_operator.duckdb_client import attach, connect, extension_path

__all__ = [
    "attach",
    "connect",
    "extension_path",
    "describe",
    "scalar",
    "run_workload",
    "observe_table",
    "observe_typed",
    "same_as_before",
]


def scalar(con: duckdb.DuckDBPyConnection, sql: str) -> Any:
    """The one value a query returns (its first row's first column)."""
    row = con.execute(sql).fetchone()
    assert row is not None, f"no row from {sql}"
    return row[0]


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


def same_as_before(after: dict, before: dict) -> bool:
    """The same rows now and at every snapshot that existed before."""
    return after["now"] == before["now"] and all(after["history"][v] == rows for v, rows in before["history"].items())


def observe_table(location: CatalogLocation, table: str) -> dict:
    """What DuckDB (a fresh session) reads of ``lk.<table>`` now and at every snapshot from 2 on."""
    con = attach(location, con=connect())
    try:
        snapshots = [
            r[0]
            for r in con.execute("SELECT snapshot_id FROM ducklake_snapshots('lk') WHERE snapshot_id >= 2").fetchall()
        ]
        return {
            "now": con.execute(f"SELECT rowid, * FROM lk.{table} ORDER BY rowid").fetchall(),
            "history": {
                v: con.execute(f"SELECT rowid, * FROM lk.{table} AT (VERSION => {v}) ORDER BY rowid").fetchall()
                for v in snapshots
            },
        }
    finally:
        con.close()


def observe_typed(location: CatalogLocation, agg: str, since: int, table: str = "t") -> dict[str, Any]:
    """What DuckDB (a fresh session) reads of ``lk.<table>``: rows by rowid and column types now
    (``now``) and at every snapshot from ``since`` on (``history``), and the aggregates ``agg``
    (``agg``: what DuckDB may answer from statistics alone)."""
    con = attach(location, con=connect())
    try:
        latest = scalar(con, "SELECT max(snapshot_id) FROM ducklake_snapshots('lk')")

        def at(clause: str) -> tuple[list[Any], list[Any]]:
            return (
                con.execute(f"SELECT rowid, * FROM lk.{table}{clause} ORDER BY rowid").fetchall(),
                [r[:2] for r in con.execute(f"DESCRIBE SELECT * FROM lk.{table}{clause}").fetchall()],
            )

        return {
            "now": at(""),
            "agg": con.execute(f"SELECT {agg} FROM lk.{table}").fetchone(),
            "history": {v: at(f" AT (VERSION => {v})") for v in range(since, latest + 1)},
        }
    finally:
        con.close()
