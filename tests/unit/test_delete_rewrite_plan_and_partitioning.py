"""The delete-rewrite planner and partition naming, without a database."""

from __future__ import annotations

import pytest

from ducklake_operator.maintenance.delete_rewrite import plan_delete_rewrite
from ducklake_operator.model.partitioning import hive_directory, key_names, key_sql, key_texts, transform_sql
from ducklake_operator.model.state import ColumnState, DeleteFile, PartitionField, PartitionSpec, TableState
from support.data_files import df


def table(files, deletes: dict[int, int]) -> TableState:
    return TableState(
        1,
        "u",
        0,
        "main",
        "t",
        "t/",
        True,
        1,
        (),
        2,
        data_files=tuple(files),
        delete_files=tuple(
            DeleteFile(100 + f, 1, 1, None, f, "x", True, "parquet", n, 1, None, None, None) for f, n in deletes.items()
        ),
    )


def test_threshold_counts_delete_files_and_inlined_deletions() -> None:
    files = [df(0, 10), df(1, 10), df(2, 10), df(3, 10, end=4), df(4, 10, rows=0)]
    t = table(files, {0: 95, 1: 50, 3: 100})
    plan = plan_delete_rewrite(t, 9, [(1, 1)], inlined_deletions={1: 45, 2: 3})
    assert [g.files for g in plan.groups] == [(0, 1)]  # 95% and 50% + 45%; 3% is below, ended/empty files never
    assert plan.groups[0].delete_files == (100, 101) and plan.groups[0].deleted_rows == 190
    low = plan_delete_rewrite(t, 9, [(1, 1)], 0.01, inlined_deletions={2: 3})
    assert [g.files for g in low.groups] == [(0, 1, 2)] and low.groups[0].delete_files == (100, 101, None)
    assert plan_delete_rewrite(table(files, {}), 9, [(1, 1)], 0.0).groups == ()  # nothing deleted: nothing to do


def test_groups_by_schema_version_and_partition() -> None:
    files = [
        df(0, 10, begin=1),
        df(1, 10, begin=5),
        df(2, 10, begin=5, partition=7, values=((0, "a"),)),
        df(3, 10, begin=5, partition=7, values=((0, "b"),)),
    ]
    plan = plan_delete_rewrite(table(files, {i: 99 for i in range(4)}), 9, [(1, 1), (4, 2)])
    assert sorted(g.files for g in plan.groups) == [(0,), (1,), (2,), (3,)]
    with pytest.raises(ValueError, match="not a fraction"):
        plan_delete_rewrite(table(files, {}), 9, [(1, 1)], 1.5)


def col(i: int, name: str) -> ColumnState:
    return ColumnState(i, name, "int32", True, None, None, None, None, i, 1)


def test_partition_names_and_values() -> None:
    spec = PartitionSpec(
        3,
        (
            PartitionField(0, 1, "identity"),
            PartitionField(1, 2, "year"),
            PartitionField(2, 3, "year"),
            PartitionField(3, 1, "bucket(4)"),
        ),
    )
    assert key_names(spec, (col(1, "cat"), col(2, "ts"), col(3, "d"))) == ["cat", "year", "year_d", "bucket"]
    assert hive_directory(["cat", "year"], ("b/x y", None)) == "cat=b%2Fx%20y/year=__HIVE_DEFAULT_PARTITION__"
    assert transform_sql("month", '"ts"') == 'CAST(month("ts") AS VARCHAR)'
    assert transform_sql("bucket(16)", '"id"') == 'CAST(((murmur3_32("id") & 2147483647) % 16) AS VARCHAR)'
    assert transform_sql("identity", '"cat"') == key_sql("identity", '"cat"') == 'CAST("cat" AS VARCHAR)'
    assert key_sql("month", '"ts"') == 'month("ts")'  # what a partitioned COPY hashes: an integer
    assert key_texts((3, None, "b/x")) == ("3", None, "b/x")  # read back: the stored text
    with pytest.raises(ValueError):
        transform_sql("week", '"ts"')
