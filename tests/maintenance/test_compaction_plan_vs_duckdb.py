"""The compaction planner picks exactly the files DuckDB's ducklake_merge_adjacent_files merges."""

from __future__ import annotations

import pytest

from ducklake_operator.catalog import Catalog
from ducklake_operator.catalog.read_state import load_schema_versions
from ducklake_operator.maintenance.compaction import CompactionOptions, plan_compaction
from support import duck


@pytest.mark.parametrize("target", ["4KB", "20KB", "1MB"])
def test_same_groups_as_duckdb(catalog: Catalog, location, target: str) -> None:
    con = duck.attach(location)
    con.execute(f"CALL lk.set_option('target_file_size', '{target}')")
    con.execute("CREATE TABLE lk.t(id INTEGER, cat VARCHAR, v VARCHAR)")
    for i in range(6):  # small files, one per insert
        con.execute(f"INSERT INTO lk.t SELECT i, 'a', repeat('x', 20) FROM range({i * 100}, {i * 100 + 100}) t(i)")
    con.execute("DELETE FROM lk.t WHERE id BETWEEN 150 AND 180")  # file 2 gets a delete file: excluded
    con.execute("ALTER TABLE lk.t ADD COLUMN w INTEGER")  # new schema version: no merging across it
    for i in range(6, 10):
        con.execute(f"INSERT INTO lk.t SELECT i, 'b', repeat('y', 20), 1 FROM range({i * 100}, {i * 100 + 100}) t(i)")
    con.close()
    state = catalog.state()
    table = state.table("main", "t")
    assert table is not None
    with catalog.engine.connect() as conn:
        versions = load_schema_versions(conn, table.table_id)
    size = int(catalog.state().options["target_file_size"])
    plan = plan_compaction(
        table, state.snapshot.snapshot_id, versions, CompactionOptions(target_file_size=size, apply_deletes=False)
    )
    assert plan.groups
    with_deletes = {d.data_file_id for d in table.delete_files}
    assert with_deletes and not any(set(g.files) & with_deletes for g in plan.groups)  # left alone

    con = duck.attach(location)
    con.execute("CALL ducklake_merge_adjacent_files('lk', 't')")
    con.close()
    after = catalog.state().table("main", "t")
    before_ids = {f.data_file_id for f in table.data_files}
    merged_away = before_ids - {f.data_file_id for f in after.data_files}
    new_files = [f for f in after.data_files if f.data_file_id not in before_ids]
    assert merged_away == {f for g in plan.groups for f in g.files}
    assert len(new_files) == len(plan.groups)
    by_begin = sorted(new_files, key=lambda f: (f.begin_snapshot, f.data_file_id))
    for f, g in zip(by_begin, sorted(plan.groups, key=lambda g: (g.begin_snapshot, g.index)), strict=False):
        assert (f.begin_snapshot, f.partial_max, f.row_id_start, f.record_count) == (
            g.begin_snapshot,
            g.partial_max,
            g.row_id_start,
            g.input_rows,
        )
