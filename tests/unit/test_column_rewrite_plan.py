"""The rewriteColumnType planner without a database: which files go into which output file,
which columns it retypes (several in one pass), and what it refuses."""

from __future__ import annotations

import pytest

from ducklake_operator.errors import DuckLakeError
from ducklake_operator.maintenance.column_rewrite import plan_column_rewrite, retyped_layout
from ducklake_operator.model.state import ColumnState, DataFile, PartitionField, PartitionSpec, TableState
from ducklake_operator.model.types import parse_type

COLUMNS = (
    ColumnState(1, "id", "int32", True, None, None, None, None, 1, 1),
    ColumnState(2, "v", "varchar", True, None, None, None, None, 2, 1),
    ColumnState(
        3,
        "s",
        "struct",
        True,
        None,
        None,
        None,
        None,
        3,
        1,
        children=(ColumnState(4, "a", "varchar", True, None, None, None, 3, 4, 1),),
    ),
)


def data_file(i: int, size: int, partition: int | None = None, value: str = "", **kw: object) -> DataFile:
    fields: dict[str, object] = dict(
        data_file_id=i,
        table_id=1,
        begin_snapshot=1,
        end_snapshot=None,
        path=f"f{i}.parquet",
        path_is_relative=True,
        file_format="parquet",
        record_count=10,
        file_size_bytes=size,
        footer_size=None,
        row_id_start=i * 10,
        partition_id=partition,
        encryption_key=None,
        mapping_id=None,
        partial_max=None,
        partition_values=((0, value),) if partition is not None else (),
    )
    fields.update(kw)
    return DataFile(**fields)  # type: ignore[arg-type]


def table(*files: DataFile) -> TableState:
    spec = PartitionSpec(7, (PartitionField(0, 1, "identity"),))
    return TableState(1, "u", 0, "main", "t", "t/", True, 1, COLUMNS, 5, partition=spec, data_files=files)


def test_groups_keep_the_current_specs_partitions_in_runs_of_about_equal_size() -> None:
    t = table(
        data_file(0, 40, 7, "a"),
        data_file(1, 40, 7, "a"),
        data_file(2, 40, 7, "a"),
        data_file(3, 40, 7, "b"),
        data_file(4, 40, 5, "x"),  # an earlier spec: no partition values in the output
        data_file(5, 40),
        data_file(6, 40, end_snapshot=3),  # ended: not live
    )
    plan = plan_column_rewrite(t, 9, [(("v",), parse_type("int64"))], target_file_size=100)
    assert [(g.files, g.partition_id, g.partition_values) for g in plan.groups] == [
        ((0,), 7, ((0, "a"),)),  # 120 bytes at 100 a file: two groups, each file in the one its middle falls in
        ((1, 2), 7, ((0, "a"),)),
        ((3,), 7, ((0, "b"),)),
        ((4, 5), None, ()),
    ]
    assert plan.input_files == 6 and plan.input_bytes == 240 and not plan.done
    # the commit also changes the partitioning: no file keeps partition values
    moved = plan_column_rewrite(t, 9, [(("v",), parse_type("int64"))], 100, repartitioned=True)
    assert [(g.files, g.partition_id) for g in moved.groups] == [((0, 1), None), ((2, 3), None), ((4, 5), None)]


def test_a_struct_field_and_the_layout_it_is_written_in() -> None:
    plan = plan_column_rewrite(table(data_file(0, 1)), 9, [(("S", "A"), parse_type("date"))], 100)
    (r,) = plan.columns
    assert r.path == ("s", "a") and r.column.column_id == 4
    layout = retyped_layout(COLUMNS, {4: "date"})
    assert layout[2].children[0].type_name == "date" and layout[:2] == COLUMNS[:2]


def test_several_columns_in_one_plan() -> None:
    plan = plan_column_rewrite(
        table(data_file(0, 1)),
        9,
        [(("v",), parse_type("int64")), (("s", "a"), parse_type("date")), (("id",), parse_type("int32"))],
        100,
        repartitioned=True,  # id is the old spec's key: the commit's new spec no longer has it
    )
    assert [r.name for r in plan.columns] == ["v", "s.a"] and [r.name for r in plan.unchanged] == ["id"]
    assert plan.describe() == "v varchar → int64, s.a varchar → date" and len(plan.groups) == 1
    layout = retyped_layout(COLUMNS, {2: "int64", 4: "date"})
    assert layout[0] == COLUMNS[0] and layout[1].type_name == "int64" and layout[2].children[0].type_name == "date"


def test_a_column_of_the_type_already_is_done() -> None:
    plan = plan_column_rewrite(table(data_file(0, 1)), 9, [(("v",), parse_type("varchar"))], 100)
    assert plan.done and plan.groups == ()


@pytest.mark.parametrize(
    "path, new_type, files, message",
    [
        (("id",), "varchar", (), "the table is partitioned by it"),
        (("v",), "boolean", (), "v: varchar → boolean is not a conversion"),
        (("w",), "int64", (), "main.t has no column w"),
        (("s", "b"), "int64", (), "main.t has no column s.b"),
        (("v",), "int64", (data_file(0, 1, mapping_id=3),), "registered by ducklake_add_data_files"),
    ],
)
def test_refusals(path: tuple[str, ...], new_type: str, files: tuple[DataFile, ...], message: str) -> None:
    with pytest.raises(DuckLakeError, match=message):
        plan_column_rewrite(table(*files), 9, [(path, parse_type(new_type))], 100)


@pytest.mark.parametrize(
    "paths",
    [[("v",), ("V",)], [("s",), ("s", "a")], [("s", "a"), ("s",)]],
    ids=["twice", "a-struct-and-its-field", "a-field-and-its-struct"],
)
def test_a_column_given_twice_or_with_what_holds_it_is_refused(paths: list[tuple[str, ...]]) -> None:
    with pytest.raises(DuckLakeError, match="are one column, or one holds the other"):
        plan_column_rewrite(table(data_file(0, 1)), 9, [(p, parse_type("varchar")) for p in paths], 100)
