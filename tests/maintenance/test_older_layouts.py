"""Files written in an older layout inside a newer schema version's group.

A rewrite (ours or DuckDB's ducklake_rewrite_data_files) keeps a file's own columns but
begins at the rewrite's snapshot, so a later merge groups it with files of the current
layout. The merge must write the group's layout as DuckDB reads it: renamed columns and
nested fields followed by field id, added ones filled with their initial default, dropped
ones left out, promoted types cast. (Found by test_job_sequences with seed 35: the merge
refused such a group.)"""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from ducklake_jobs.job_template import run_operation
from ducklake_jobs.layout_projection import projection, same_layout
from ducklake_jobs.parquet_writer import FieldIds, field_ids_from_arrow
from ducklake_operator.catalog import Catalog
from support import duck

WORKLOAD = [
    "CREATE TABLE lk.t(id INTEGER, v VARCHAR, s STRUCT(a INTEGER, b VARCHAR), gone INTEGER, "
    "l STRUCT(p INTEGER)[], m MAP(VARCHAR, STRUCT(q INTEGER)))",
    "INSERT INTO lk.t SELECT i, 'v' || i, {'a': i, 'b': 'b' || i}, i, [{'p': i}, NULL], "
    "CASE WHEN i % 5 = 0 THEN NULL ELSE MAP {'k' || i: {'q': i}} END FROM range(50) t(i)",
    "ALTER TABLE lk.t ADD COLUMN x INTEGER DEFAULT 5",
    "ALTER TABLE lk.t RENAME v TO w",
    "ALTER TABLE lk.t ADD COLUMN s.c VARCHAR DEFAULT 'it''s'",
    "ALTER TABLE lk.t RENAME s.a TO aa",
    "ALTER TABLE lk.t ADD COLUMN l.element.r VARCHAR",
    "ALTER TABLE lk.t RENAME l.element.p TO pp",
    "ALTER TABLE lk.t RENAME m.value.q TO qq",
    "ALTER TABLE lk.t DROP COLUMN gone",
    "ALTER TABLE lk.t ALTER id SET TYPE BIGINT",
    "INSERT INTO lk.t SELECT i, 'n' || i, {'aa': i, 'b': 'b', 'c': 'c'}, [{'pp': i, 'r': 'r'}], MAP {'k': {'qq': i}}, i "
    "FROM range(1000, 1011) t(i)",
    "UPDATE lk.t SET s = NULL WHERE id = 3",
    "DELETE FROM lk.t WHERE id % 7 = 0",
]


def live_stats(location) -> list[tuple]:
    con = duck.attach(location, con=duck.connect())
    try:
        return con.execute(
            "SELECT column_id, min_value, max_value, null_count, value_count FROM __ducklake_metadata_lk.ducklake_file_column_stats "
            "JOIN __ducklake_metadata_lk.ducklake_data_file USING (data_file_id) WHERE end_snapshot IS NULL ORDER BY ALL"
        ).fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("rewrite_by", ["ours", "duckdb"])
def test_merge_of_older_layouts_matches_duckdb(make_location, tmp_path, kind: str, rewrite_by: str) -> None:
    theirs, ours = make_location(kind), make_location(kind)
    duck.run_workload(theirs, WORKLOAD, str(tmp_path / "a") + "/")
    duck.run_workload(ours, WORKLOAD, str(tmp_path / "b") + "/")
    con = duck.attach(theirs)
    con.execute("CALL ducklake_rewrite_data_files('lk', 't', delete_threshold => 0.01)")
    con.execute("CALL ducklake_merge_adjacent_files('lk')")
    con.close()

    catalog = Catalog.open(ours)
    if rewrite_by == "ours":
        assert run_operation(catalog, "rewriteDeletes", "main.t", {"deleteThreshold": 0.01})["filesWritten"] >= 2
    else:
        con = duck.attach(ours)
        con.execute("CALL ducklake_rewrite_data_files('lk', 't', delete_threshold => 0.01)")
        con.close()
    # the rewritten first file kept its own (first) layout but begins in the latest version
    t = catalog.state().table("main", "t")
    layouts = {
        tuple(f.name for f in field_ids_from_arrow(pq.read_schema(f"{catalog.state().data_path}main/t/{d.path}")))
        for d in t.data_files
    }
    assert len(layouts) > 1
    before = duck.observe_table(ours, "t")
    result = run_operation(catalog, "compact", "main.t", {})
    assert result["filesRead"] >= 2 and result["filesWritten"] == 1

    assert duck.same_as_before(duck.observe_table(ours, "t"), before)
    assert duck.observe_table(ours, "t")["now"] == duck.observe_table(theirs, "t")["now"]
    assert live_stats(ours) == live_stats(theirs)
    (merged,) = catalog.state().table("main", "t").data_files
    schema = pq.read_schema(f"{catalog.state().data_path}main/t/{merged.path}")
    assert [f.name for f in field_ids_from_arrow(schema)][:7] == [
        "id",
        "w",
        "s",
        "l",
        "m",
        "x",
        "_ducklake_internal_row_id",
    ]
    catalog.close()

    con = duck.attach(ours)  # DuckDB keeps working on the output
    assert con.execute("SELECT s, x FROM lk.t WHERE id = 1").fetchone() == ({"aa": 1, "b": "b1", "c": "it's"}, 5)
    con.execute("INSERT INTO lk.t (id, w) VALUES (9999, 'late')")
    con.execute("CALL ducklake_merge_adjacent_files('lk')")
    assert duck.scalar(con, "SELECT count(*) FROM lk.t") == len(before["now"]) + 1
    con.close()


def test_projection_is_only_used_for_other_layouts() -> None:
    from ducklake_operator.model.state import ColumnState

    def col(cid: int, name: str, type_name: str, default: str | None = None) -> ColumnState:
        return ColumnState(cid, name, type_name, True, default, default, None, None, cid, 1)

    target = (col(1, "id", "int64"), col(3, "x", "varchar", "it's"))
    assert same_layout((FieldIds("id", 1), FieldIds("x", 3)), target)
    assert not same_layout((FieldIds("old_id", 1),), target)
    assert projection((FieldIds("old_id", 1), FieldIds("gone", 2)), target) == [
        'CAST(p."old_id" AS BIGINT) AS "id"',
        "CAST('it''s' AS VARCHAR) AS \"x\"",
    ]
