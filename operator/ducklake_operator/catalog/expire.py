"""Expire snapshots and delete scheduled files, as DuckDB 1.5.5 does (docs/ducklake-format.md §5.4, §5.5).

Expiry creates no snapshot. In one transaction it deletes the snapshot rows, then every
catalog row that no remaining snapshot can see (a row is visible to snapshot S when
``begin_snapshot <= S < end_snapshot``): ended data and delete files (their paths are
scheduled in ``ducklake_files_scheduled_for_deletion``, relative to the data path), tables
dropped before every remaining snapshot (with all their rows and inlined tables, and their
rows of the operator's ingest ledger, ``ingested``), and ended schemas, views, tags and macros.
The ledger is otherwise left alone: a file an expired snapshot ingested stays ingested.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa

from .ingested import forget_tables
from .paths import relative_to_data_path
from .read_files import load_lake_paths
from .tables import CATALOG_TABLES, catalog_now, inlined_delete_table_name, qualified

# rows removed with a purged table (DeleteSnapshots, step 4)
_PER_TABLE = (
    "ducklake_table_stats",
    "ducklake_table_column_stats",
    "ducklake_partition_info",
    "ducklake_partition_column",
    "ducklake_column",
    "ducklake_column_tag",
    "ducklake_sort_info",
    "ducklake_sort_expression",
    "ducklake_schema_versions",
    "ducklake_column_mapping",
    "ducklake_table",
)


@dataclass(frozen=True)
class ExpiryResult:
    expired: tuple[int, ...]
    files_scheduled: tuple[str, ...]  # paths relative to the data path (or absolute)
    tables_purged: tuple[int, ...]


def _unseen(table: sa.Table) -> sa.ColumnElement[bool]:
    """Ended, and no remaining snapshot lies in [begin_snapshot, end_snapshot)."""
    s = CATALOG_TABLES["ducklake_snapshot"]
    return sa.and_(
        table.c.end_snapshot.is_not(None),
        ~sa.exists().where(s.c.snapshot_id >= table.c.begin_snapshot, s.c.snapshot_id < table.c.end_snapshot),
    )


def expire_snapshots(conn: sa.Connection, ids: Iterable[int], *, dialect: str, pg_schema: str | None) -> ExpiryResult:
    """Delete snapshots ``ids`` and what only they could see; the caller commits."""
    ids = tuple(sorted(ids))
    if not ids:
        return ExpiryResult((), (), ())
    latest = conn.execute(sa.select(sa.func.max(CATALOG_TABLES["ducklake_snapshot"].c.snapshot_id))).scalar()
    if latest in ids:
        raise ValueError("the latest snapshot cannot be expired")
    for name in ("ducklake_snapshot", "ducklake_snapshot_changes"):
        conn.execute(CATALOG_TABLES[name].delete().where(CATALOG_TABLES[name].c.snapshot_id.in_(ids)))

    tb = CATALOG_TABLES["ducklake_table"]
    # tables none of whose versions is visible any more, and that are dropped
    visible = sa.select(tb.c.table_id).where(~_unseen(tb))
    purged = tuple(conn.execute(sa.select(tb.c.table_id).where(tb.c.table_id.not_in(visible)).distinct()).scalars())
    lake = load_lake_paths(conn)

    scheduled: list[str] = []
    now = catalog_now(dialect)
    for files, id_col, extra in (
        (
            "ducklake_data_file",
            "data_file_id",
            ("ducklake_file_column_stats", "ducklake_file_variant_stats", "ducklake_file_partition_value"),
        ),
        ("ducklake_delete_file", "delete_file_id", ()),
    ):
        f = CATALOG_TABLES[files]
        gone = list(
            conn.execute(
                sa.select(f.c[id_col], f.c.table_id, f.c.path, f.c.path_is_relative).where(
                    sa.or_(f.c.table_id.in_(purged), _unseen(f))
                )
            )
        )
        if not gone:
            continue
        gone_ids = [r[0] for r in gone]
        for name in (files,) + extra:
            conn.execute(
                CATALOG_TABLES[name]
                .delete()
                .where(CATALOG_TABLES[name].c[id_col if name == files else "data_file_id"].in_(gone_ids))
            )
        rows = []
        for file_id, table_id, path, relative in gone:
            stored, is_relative = relative_to_data_path(lake.data_path, lake.file(table_id, path, relative))
            rows.append(dict(data_file_id=file_id, path=stored, path_is_relative=is_relative, schedule_start=now))
            scheduled.append(stored)
        conn.execute(CATALOG_TABLES["ducklake_files_scheduled_for_deletion"].insert().values(rows))

    if purged:
        it = CATALOG_TABLES["ducklake_inlined_data_tables"]
        inlined = list(conn.execute(sa.select(it.c.table_name).where(it.c.table_id.in_(purged))).scalars())
        for name in _PER_TABLE + ("ducklake_inlined_data_tables",):
            conn.execute(CATALOG_TABLES[name].delete().where(CATALOG_TABLES[name].c.table_id.in_(purged)))
        for name in inlined + [inlined_delete_table_name(t) for t in purged]:
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {qualified(name, pg_schema)}")
        forget_tables(conn, purged)
    for name in ("ducklake_schema", "ducklake_view", "ducklake_tag", "ducklake_macro"):
        conn.execute(CATALOG_TABLES[name].delete().where(_unseen(CATALOG_TABLES[name])))
    mac, impl, params, cm, nm = (
        CATALOG_TABLES[n]
        for n in (
            "ducklake_macro",
            "ducklake_macro_impl",
            "ducklake_macro_parameters",
            "ducklake_column_mapping",
            "ducklake_name_mapping",
        )
    )
    conn.execute(impl.delete().where(impl.c.macro_id.not_in(sa.select(mac.c.macro_id))))
    conn.execute(params.delete().where(params.c.macro_id.not_in(sa.select(mac.c.macro_id))))
    conn.execute(nm.delete().where(nm.c.mapping_id.not_in(sa.select(cm.c.mapping_id))))
    return ExpiryResult(ids, tuple(scheduled), purged)
