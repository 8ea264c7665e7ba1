"""The repartition planner, without a database: which files are under another partition
spec than the current one, and how they are batched."""

from __future__ import annotations

from dataclasses import replace

from ducklake_operator.maintenance.repartition import plan_repartition
from ducklake_operator.model.state import DataFile, PartitionField, PartitionSpec, TableState
from support.data_files import df

MONTH = PartitionSpec(5, (PartitionField(0, 2, "month"),))
IDENTITY_A = PartitionSpec(3, (PartitionField(0, 1, "identity"),))
MONTH_AGAIN = PartitionSpec(8, (PartitionField(0, 2, "month"),))  # the same keys under a later id
RESET = PartitionSpec(9, ())
SPECS = {s.partition_id: s for s in (IDENTITY_A, MONTH, MONTH_AGAIN, RESET)}


def table(files: list[DataFile], spec: PartitionSpec | None) -> TableState:
    return TableState(1, "u", 0, "main", "t", "t/", True, 1, (), 3, partition=spec, data_files=tuple(files))


def test_files_under_another_spec_are_rewritten() -> None:
    files = [
        df(0, 10),  # unpartitioned
        df(1, 10, partition=3, values=((0, "x"),)),  # identity(a)
        df(2, 10, partition=5, values=((0, "3"),)),  # month(ts): the current spec
        df(3, 10, partition=8, values=((0, "4"),)),  # month(ts) again, under a later spec id: laid out alike
        df(4, 10, partition=3, values=((0, "y"),), end=6),  # ended: time travel reads it as it is
    ]
    plan = plan_repartition(table(files, MONTH_AGAIN), 9, [(1, 1)], SPECS)
    assert [b.files for b in plan.batches] == [(0, 1)]
    assert (plan.spec_id, plan.keys, plan.input_files, plan.input_rows, plan.left_alone) == (
        8,
        ((2, "month"),),
        2,
        200,
        0,
    )


def test_back_to_unpartitioned() -> None:
    files = [df(0, 10), df(1, 10, partition=5, values=((0, "3"),))]
    for spec in (RESET, None):  # reset, or no spec at all: files written unpartitioned stay
        plan = plan_repartition(table(files, spec), 9, [(1, 1)], SPECS)
        assert [b.files for b in plan.batches] == [(1,)] and plan.keys == ()


def test_nothing_to_do_when_the_partitioning_never_changed() -> None:
    assert plan_repartition(table([df(0, 10), df(1, 10)], None), 9, [(1, 1)], {}).batches == ()
    month_files = [df(i, 10, partition=5, values=((0, str(i)),)) for i in range(3)]
    assert plan_repartition(table(month_files, MONTH), 9, [(1, 1)], SPECS).batches == ()


def test_name_mapped_and_encrypted_files_are_left_alone_and_counted() -> None:
    files = [df(0, 10), replace(df(1, 10), mapping_id=4), replace(df(2, 10), encryption_key="k")]
    plan = plan_repartition(table(files, MONTH), 9, [(1, 1)], SPECS)
    assert [b.files for b in plan.batches] == [(0,)] and plan.left_alone == 2


def test_batches_stay_within_max_bytes_in_commit_order() -> None:
    files = [df(0, 40, begin=3), df(1, 40, begin=2), df(2, 40, begin=4), df(3, 200, begin=5), df(4, 10, begin=6)]
    plan = plan_repartition(table(files, MONTH), 9, [(1, 1)], SPECS, max_bytes_per_commit=100)
    assert [b.files for b in plan.batches] == [(1, 0), (2,), (3,), (4,)]  # a file above the limit is a batch alone
    assert [b.input_bytes for b in plan.batches] == [80, 40, 200, 10]
    assert [b.index for b in plan.batches] == [0, 1, 2, 3]
    assert len(plan_repartition(table(files, MONTH), 9, [(1, 1)], SPECS).batches) == 1  # no limit: one snapshot


def test_a_batch_groups_files_by_the_schema_version_they_were_written_under() -> None:
    files = [df(0, 10, begin=2), df(1, 10, begin=5), df(2, 10, begin=7)]
    (batch,) = plan_repartition(table(files, MONTH), 9, [(1, 1), (4, 2), (7, 3)], SPECS).batches
    assert [(g.schema_version, g.files) for g in batch.groups] == [(1, (0,)), (2, (1,)), (3, (2,))]
    assert plan_repartition(table(files, MONTH), 9, [(1, 1)], SPECS).to_json()["batches"] == [
        {"index": 0, "groups": [{"schema_version": 1, "files": (0, 1, 2), "input_bytes": 30, "input_rows": 300}]}
    ]
