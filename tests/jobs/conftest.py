"""Fixtures of the job program's tests: lakes on both backends (``support.job_lakes``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ducklake_operator.catalog import CatalogLocation
from support.job_lakes import Lake, partitioned_table


@pytest.fixture
def lake(location: CatalogLocation, data_path: str) -> Lake:
    return partitioned_table(location, data_path)


@pytest.fixture
def sqlite_lake(make_location: Callable[[str], CatalogLocation], data_path: str) -> Lake:
    return partitioned_table(make_location("sqlite"), data_path)
