"""The compaction planner's rules, without a database (Iceberg's planner tests, DuckDB's rules)."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from ducklake_operator.maintenance.compaction import CompactionOptions, plan_compaction, schema_version_at
from ducklake_operator.model.state import DataFile, DeleteFile, TableState
from support.data_files import df

MB = 1_000_000


def table(files: list[DataFile], deletes: Sequence[int] = ()) -> TableState:
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
            DeleteFile(100 + d, 1, 1, None, d, "x", True, "parquet", 1, 1, None, None, None) for d in deletes
        ),
    )


def test_small_files_are_grouped_up_to_the_target() -> None:
    files = [df(i, 3 * MB, begin=i + 1) for i in range(7)]
    plan = plan_compaction(table(files), 10, [(1, 1)], CompactionOptions(target_file_size=10 * MB))
    assert [g.files for g in plan.groups] == [(0, 1, 2, 3), (4, 5, 6)]
    assert plan.groups[0].begin_snapshot == 1 and plan.groups[0].partial_max == 4 and plan.groups[0].row_id_start == 0
    assert plan.groups[1].row_id_start == 400


def test_excluded_files() -> None:
    files = [df(0, 1 * MB), df(1, 20 * MB), df(2, 1 * MB), df(3, 1 * MB, end=5), df(4, 1 * MB), df(5, 1 * MB)]
    plan = plan_compaction(
        table(files, deletes=[2]),
        10,
        [(1, 1)],
        CompactionOptions(target_file_size=10 * MB, apply_deletes=False),  # DuckDB's rule
        files_with_inlined_deletes={4},
    )
    assert [g.files for g in plan.groups] == [(0, 5)]  # big, deleted-from, ended and inlined-deleted files stay
    assert plan.groups[0].row_id_start is None  # 0 and 5 are not contiguous: row ids are embedded


def test_never_across_schema_versions_or_partitions() -> None:
    files = [
        df(0, MB, begin=1),
        df(1, MB, begin=2),
        df(2, MB, begin=5),
        df(3, MB, begin=6),
        df(4, MB, begin=7, partition=9, values=((0, "a"),)),
        df(5, MB, begin=7, partition=9, values=((0, "b"),)),
    ]
    plan = plan_compaction(table(files), 10, [(1, 1), (4, 2)], CompactionOptions(target_file_size=10 * MB))
    assert sorted(g.files for g in plan.groups) == [(0, 1), (2, 3)]
    assert {g.schema_version for g in plan.groups} == {1, 2}


def test_single_files_and_limits() -> None:
    assert not plan_compaction(table([df(0, MB)]), 1, [(1, 1)]).groups
    files = [df(i, MB) for i in range(10)]
    plan = plan_compaction(table(files), 1, [(1, 1)], CompactionOptions(target_file_size=3 * MB, max_groups=2))
    assert len(plan.groups) == 2 and plan.to_json()["groups"][0]["files"] == (0, 1, 2)


def test_schema_version_at() -> None:
    assert schema_version_at([(1, 1), (5, 3)], 4) == 1 and schema_version_at([(1, 1), (5, 3)], 5) == 3


@given(st.lists(st.tuples(st.integers(1, 20), st.integers(1, 5), st.booleans()), max_size=40), st.integers(2, 40))
def test_invariants(specs: list[tuple[int, int, bool]], target_mb: int) -> None:
    files = [df(i, size * MB, begin=begin) for i, (size, begin, _) in enumerate(specs)]
    deleted = [i for i, (_, _, d) in enumerate(specs) if d]
    plan = plan_compaction(
        table(files, deletes=deleted),
        10,
        [(1, 1), (3, 2)],
        CompactionOptions(target_file_size=target_mb * MB, apply_deletes=False),
    )
    seen = [f for g in plan.groups for f in g.files]
    assert len(seen) == len(set(seen))  # no file in two groups
    assert not set(seen) & set(deleted)
    for g in plan.groups:
        assert len(g.files) >= 2 and g.input_bytes == sum(files[f].file_size_bytes for f in g.files)
        assert all(files[f].file_size_bytes < target_mb * MB for f in g.files)
        # a group only overshoots the target by its last file
        assert g.input_bytes - files[g.files[-1]].file_size_bytes < target_mb * MB


def test_name_mapped_and_encrypted_files_are_left_alone() -> None:
    import dataclasses

    files = [
        df(0, 1 * MB),
        dataclasses.replace(df(1, 1 * MB), mapping_id=3),
        df(2, 1 * MB),
        dataclasses.replace(df(3, 1 * MB), encryption_key="k"),
        df(4, 1 * MB),
    ]
    plan = plan_compaction(table(files), 10, [(1, 1)], CompactionOptions(target_file_size=10 * MB))
    assert [g.files for g in plan.groups] == [(0, 2, 4)]  # no field ids to keep / no key to read with
