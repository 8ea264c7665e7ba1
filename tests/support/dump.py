"""Dump every catalog table as sorted rows, with uuids and times masked, for differential tests."""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet

import sqlalchemy as sa

from ducklake_operator.catalog import CatalogLocation
from ducklake_operator.catalog.connect import create_engine
from ducklake_operator.catalog.tables import TABLE_COLUMNS

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
DYNAMIC = re.compile(r"^ducklake_inlined_(data_\d+_\d+|delete_\d+)$")
MASKED = {"snapshot_time", "schedule_start", "schema_uuid", "table_uuid", "view_uuid"}


def _mask(column: str, value: object) -> object:
    if column in MASKED:
        return "<masked>"
    if isinstance(value, str):
        return _UUID.sub("<uuid>", value)
    return value


def dump(
    location: CatalogLocation, tables: list[str] | None = None, ignore: AbstractSet[str] = frozenset()
) -> dict[str, list[tuple]]:
    engine = create_engine(location)
    out: dict[str, list[tuple]] = {}
    try:
        with engine.connect() as conn:
            names = [n for n, _ in TABLE_COLUMNS] + sorted(
                n for n in sa.inspect(conn).get_table_names(schema=location.schema) if DYNAMIC.match(n)
            )
            for name in names:
                if tables is not None and name not in tables:
                    continue
                table = sa.Table(name, sa.MetaData(), autoload_with=conn, schema=location.schema)
                cols = [c.name for c in table.columns if c.name not in ignore]
                rows = conn.execute(sa.select(*[table.c[c] for c in cols])).all()
                out[name] = sorted((tuple(_mask(c, v) for c, v in zip(cols, r, strict=False)) for r in rows), key=repr)
    finally:
        engine.dispose()
    return out


def inlined_columns(location: CatalogLocation) -> dict[str, list[tuple[str, str]]]:
    """(column, physical type) of every inlined-data table, as the database reports them."""
    engine = create_engine(location)
    try:
        with engine.connect() as conn:
            insp = sa.inspect(conn)
            return {
                n: [(c["name"], str(c["type"])) for c in insp.get_columns(n, schema=location.schema)]
                for n in insp.get_table_names(schema=location.schema)
                if DYNAMIC.match(n)
            }
    finally:
        engine.dispose()
