"""The one path resolver (catalog/paths.py): DuckDB 1.5.5's FromRelativePath rules."""

from __future__ import annotations

from ducklake_operator.catalog.paths import LakePaths, relative_to_data_path, resolve, table_directory


def test_a_path_is_relative_by_its_flag_only() -> None:
    assert resolve("/lake/", "main/", True) == "/lake/main/"
    assert resolve("/lake/", "/abs/", False) == "/abs/"
    assert resolve("s3://b/lake/", "s3://other/t/", False) == "s3://other/t/"
    assert resolve("/lake/", "main/", None) == "/lake/main/"  # NULL (DuckDB 1.5.5 cannot read it): relative
    assert resolve("/lake/", None, True) == "/lake/"  # no path: the parent's directory


def test_table_directory_chain() -> None:
    assert table_directory("/lake/", "main/", True, "t/", True) == "/lake/main/t/"
    assert table_directory("/lake/", "/s/", False, "t/", True) == "/s/t/"
    assert table_directory("/lake/", "main/", True, "/abs/t/", False) == "/abs/t/"
    assert table_directory("/lake/", "/s/", False, "/abs/t/", False) == "/abs/t/"


def test_scheduled_paths_are_relative_to_the_data_path_when_under_it() -> None:
    assert relative_to_data_path("/lake/", "/lake/abs_t/f.parquet") == ("abs_t/f.parquet", True)
    assert relative_to_data_path("/lake/", "/elsewhere/f.parquet") == ("/elsewhere/f.parquet", False)


def test_files_of_a_moved_lake() -> None:
    lake = LakePaths("/new/", {1: "/new/main/t/", 2: "/old/abs_t/"}, moved_from="/old/")
    assert lake.file(1, "f.parquet", True) == "/new/main/t/f.parquet"
    assert lake.file(2, "f.parquet", True) == "/old/abs_t/f.parquet"  # as the row says: DuckDB reads there
    assert lake.moved("/old/abs_t/f.parquet") == "/new/abs_t/f.parquet"  # where it went with the lake
    assert lake.moved("/elsewhere/f.parquet") is None
    assert LakePaths("/lake/", {}).moved("/lake/x.parquet") is None
    assert lake.file(9, "gone.parquet", True) == "/new/gone.parquet"  # a table whose rows were purged
    assert lake.scheduled("main/t/f.parquet", True) == "/new/main/t/f.parquet"
