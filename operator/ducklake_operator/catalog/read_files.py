"""The files of the lake as the catalog knows them: the live data and delete files of its
tables at a snapshot, where each table's directory is, and every file any catalog row
refers to (the files that are never orphans)."""

from __future__ import annotations

from collections import defaultdict

import sqlalchemy as sa

from ..model.state import (
    DataFile,
    DeleteFile,
)
from .paths import LakePaths, table_directory
from .read_metadata import data_path, stored_data_path
from .read_snapshots import valid_at
from .tables import CATALOG_TABLES, OnlyTables


def load_live_files(
    conn: sa.Connection, at: int, only_tables: OnlyTables
) -> tuple[dict[int, list[DataFile]], dict[int, list[DeleteFile]]]:
    df, dl, pv = (
        CATALOG_TABLES["ducklake_data_file"],
        CATALOG_TABLES["ducklake_delete_file"],
        CATALOG_TABLES["ducklake_file_partition_value"],
    )
    values: dict[int, list[tuple[int, str | None]]] = defaultdict(list)
    live_ids = sa.select(df.c.data_file_id).where(valid_at(df, at))
    for r in conn.execute(
        only_tables(
            pv,
            sa.select(pv).where(pv.c.data_file_id.in_(live_ids)).order_by(pv.c.data_file_id, pv.c.partition_key_index),
        )
    ):
        values[r.data_file_id].append((r.partition_key_index, r.partition_value))
    data: dict[int, list[DataFile]] = defaultdict(list)
    for r in conn.execute(
        only_tables(df, sa.select(df).where(valid_at(df, at)).order_by(df.c.table_id, df.c.data_file_id))
    ):
        data[r.table_id].append(
            DataFile(
                r.data_file_id,
                r.table_id,
                r.begin_snapshot,
                r.end_snapshot,
                r.path,
                bool(r.path_is_relative),
                r.file_format,
                r.record_count or 0,
                r.file_size_bytes or 0,
                r.footer_size,
                r.row_id_start,
                r.partition_id,
                r.encryption_key,
                r.mapping_id,
                r.partial_max,
                tuple(values.get(r.data_file_id, ())),
            )
        )
    deletes: dict[int, list[DeleteFile]] = defaultdict(list)
    for r in conn.execute(
        only_tables(dl, sa.select(dl).where(valid_at(dl, at)).order_by(dl.c.table_id, dl.c.delete_file_id))
    ):
        deletes[r.table_id].append(
            DeleteFile(
                r.delete_file_id,
                r.table_id,
                r.begin_snapshot,
                r.end_snapshot,
                r.data_file_id,
                r.path,
                bool(r.path_is_relative),
                r.format,
                r.delete_count or 0,
                r.file_size_bytes or 0,
                r.footer_size,
                r.encryption_key,
                r.partial_max,
            )
        )
    return data, deletes


def load_lake_paths(conn: sa.Connection) -> LakePaths:
    """The directory of every table ever (each version with its schema's row; the latest
    wins), under the lake's data path (``data_path``)."""
    root, stored = data_path(conn), stored_data_path(conn)
    tb, sc = CATALOG_TABLES["ducklake_table"], CATALOG_TABLES["ducklake_schema"]
    rows = conn.execute(
        sa.select(
            tb.c.table_id,
            tb.c.path.label("table_path"),
            tb.c.path_is_relative.label("table_relative"),
            sc.c.path.label("schema_path"),
            sc.c.path_is_relative.label("schema_relative"),
        )
        .select_from(tb.outerjoin(sc, sc.c.schema_id == tb.c.schema_id))
        .order_by(tb.c.begin_snapshot, sc.c.begin_snapshot)
    )
    return LakePaths(
        root,
        {
            r.table_id: table_directory(root, r.schema_path, r.schema_relative, r.table_path, r.table_relative)
            for r in rows
        },
        moved_from=stored if stored != root else None,
    )


def referenced_files(conn: sa.Connection, lake: LakePaths) -> set[str]:
    """Where every file any catalog row refers to is (any version, and those scheduled for
    deletion): the files that are never orphans."""
    out: set[str] = set()
    for name in ("ducklake_data_file", "ducklake_delete_file"):
        f = CATALOG_TABLES[name]
        out |= {
            lake.file(r.table_id, r.path, r.path_is_relative)
            for r in conn.execute(sa.select(f.c.table_id, f.c.path, f.c.path_is_relative))
        }
    sched = CATALOG_TABLES["ducklake_files_scheduled_for_deletion"]
    out |= {
        lake.scheduled(r.path, r.path_is_relative)
        for r in conn.execute(sa.select(sched.c.path, sched.c.path_is_relative))
    }
    return out | {moved for path in out if (moved := lake.moved(path)) is not None}
