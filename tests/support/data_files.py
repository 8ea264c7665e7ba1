"""Data file rows for the planners' tests, built without a database."""

from __future__ import annotations

from ducklake_operator.model.state import DataFile


def df(
    i: int,
    size: int,
    *,
    begin: int = 1,
    rows: int = 100,
    row_start: int | None = None,
    partition: int | None = None,
    values: tuple[tuple[int, str | None], ...] = (),
    end: int | None = None,
    partial_max: int | None = None,
) -> DataFile:
    """Data file ``i`` of table 1 (``f{i}.parquet``, relative), its row ids after file i-1's."""
    return DataFile(
        i,
        1,
        begin,
        end,
        f"f{i}.parquet",
        True,
        "parquet",
        rows,
        size,
        None,
        i * rows if row_start is None else row_start,
        partition,
        None,
        None,
        partial_max,
        values,
    )
