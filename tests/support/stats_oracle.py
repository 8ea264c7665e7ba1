"""DuckDB's answers that may come from a table's statistics, and the statistics themselves,
for comparing a job's with DuckDB's own (docs/ducklake-format.md §2.7, §4.6)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ducklake_operator.catalog import CatalogLocation
from support import duck
from support.dump import dump


def answers(con: Any, table: str, columns: Iterable[str]) -> dict[str, str]:
    """Each query on its own (DuckDB answers min/max from statistics only when alone), as
    text (NaN is no number equal to itself)."""
    out = {"count(*)": repr(con.execute(f"SELECT count(*) FROM {table}").fetchall())}
    for c in columns:
        for agg in (f"min({c}), max({c})", f"count({c})"):
            out[agg] = repr(con.execute(f"SELECT {agg} FROM {table}").fetchall())
    return out


def assert_answers_exact(location: CatalogLocation, table: str = "t") -> None:
    """DuckDB's answers on ``lk.<table>`` are those on a copy of its rows (a full scan)."""
    con = duck.attach(location, con=duck.connect())
    try:
        con.execute(f"CREATE TEMP TABLE scanned AS SELECT * FROM lk.{table}")
        columns = [r[0] for r in con.execute(f"DESCRIBE lk.{table}").fetchall()]
        assert answers(con, f"lk.{table}", columns) == answers(con, "scanned", columns)
    finally:
        con.close()


def file_stats(location: CatalogLocation) -> list[tuple[Any, ...]]:
    """The live files' column statistics but for their files and sizes."""
    d = dump(location)
    live = {r[0] for r in d["ducklake_data_file"] if r[3] is None}
    return sorted(r[2:3] + r[4:] for r in d["ducklake_file_column_stats"] if r[0] in live)
