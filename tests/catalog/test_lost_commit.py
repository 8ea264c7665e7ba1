"""A COMMIT lost on the wire (a TCP proxy in front of the real PostgreSQL server drops it
before or after the server gets it, or partitions the connection): the library finds out
whether the snapshot landed, instead of leaving the caller with "unknown"."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
import sqlalchemy as sa

from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.errors import CatalogUnavailable
from ducklake_operator.model.changes import CreateTable, SetOption
from ducklake_operator.model.types import Field, parse_type
from support.pg_fault_proxy import PgFaultProxy


@pytest.fixture
def lake(pg_server, pg_location: CatalogLocation, tmp_path) -> Iterator[tuple[Catalog, Catalog, PgFaultProxy]]:
    """(the catalog through the proxy, the same catalog direct, the proxy)"""
    direct = Catalog.create(pg_location, str(tmp_path / "data") + "/")
    proxy = PgFaultProxy(pg_server.host, pg_server.port)
    proxied = Catalog.open(replace(pg_location, host="127.0.0.1", port=proxy.port))
    try:
        yield proxied, direct, proxy
    finally:
        proxied.close()
        direct.close()
        proxy.close()


def create(catalog: Catalog, name: str):
    return catalog.commit([CreateTable("main", name, (Field("a", parse_type("INTEGER")),))])


def open_transactions(catalog: Catalog) -> int:
    with catalog.engine.connect() as conn:
        return conn.execute(
            sa.text("SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'")
        ).scalar_one()


def test_commit_that_landed_is_reported_committed(lake) -> None:
    proxied, direct, proxy = lake
    before = direct.snapshot().snapshot_id
    proxy.arm("after")
    result = create(proxied, "t")
    assert proxy.fired.is_set()  # the reply really was lost
    assert result.snapshot_id == before + 1
    assert direct.state().table("main", "t") is not None


@pytest.mark.parametrize("mode", ["before", "partition"])
def test_commit_that_did_not_land_is_a_clean_failure(lake, mode: str) -> None:
    proxied, direct, proxy = lake
    before = direct.snapshot().snapshot_id
    proxy.arm(mode)
    with pytest.raises(CatalogUnavailable, match="was not committed") as info:
        create(proxied, "t")
    assert info.value.cleanable  # callers may delete what they wrote for it
    assert proxy.fired.is_set()
    assert direct.snapshot().snapshot_id == before
    assert open_transactions(direct) == 0  # partition: the stranded server process was ended
    assert create(proxied, "t").snapshot_id == before + 1  # and nothing it held is in the way


@pytest.mark.parametrize("mode", ["before", "after"])
def test_options_only_commit_is_written_again(lake, mode: str) -> None:
    """Options are not a snapshot: there is nothing to read back, but they are rewritten
    whole, so once the server has ended the lost transaction the commit simply runs again."""
    proxied, direct, proxy = lake
    before = direct.snapshot().snapshot_id
    proxy.arm(mode, marker=b"INSERT INTO ducklake_metadata")
    result = proxied.commit([SetOption("targetFileSize", "10MB")])
    assert proxy.fired.is_set() and result.attempts == 2 and result.snapshot_id is None
    assert direct.state().options["target_file_size"] == str(10 * 1000 * 1000)
    assert direct.snapshot().snapshot_id == before
