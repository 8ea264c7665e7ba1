from __future__ import annotations

import pytest

from ducklake_operator.errors import SpecError
from ducklake_operator.model.names import identifier_problem, path_for
from ducklake_operator.model.options import normalize_option, parse_size


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("targetFileSize", "10MB", ("target_file_size", "10000000")),
        ("target_file_size", "1GiB", ("target_file_size", str(2**30))),
        ("targetFileSize", 512, ("target_file_size", "512")),
        ("parquetVersion", 2, ("parquet_version", "V2")),
        ("rewriteDeleteThreshold", 0.5, ("rewrite_delete_threshold", "0.500000")),
        ("autoCompact", False, ("auto_compact", "false")),
        ("parquetCompression", "ZSTD", ("parquet_compression", "zstd")),
        ("dataInliningRowLimit", 0, ("data_inlining_row_limit", "0")),
        ("expireOlderThan", "30 days", ("expire_older_than", "30 days")),
    ],
)
def test_options_normalise_like_duckdb(key: str, value: object, expected: tuple[str, str]) -> None:
    assert normalize_option(key, value) == expected


@pytest.mark.parametrize(
    "key, value, scope, fragment",
    [
        ("targetFileSiz", "1MB", "global", "not a DuckLake option"),
        ("targetFileSize", "lots", "global", "is not a size"),
        ("parquetCompression", "zip", "global", "is not one of"),
        ("rewriteDeleteThreshold", 2, "global", "between 0 and 1"),
        ("expireOlderThan", "30 days", "table", "catalog-wide"),
        ("dataInliningRowLimit", -1, "global", "non-negative"),
    ],
)
def test_option_errors_name_the_option(key: str, value: object, scope: str, fragment: str) -> None:
    with pytest.raises(SpecError, match=fragment):
        normalize_option(key, value, scope)


def test_parse_size_units() -> None:
    assert parse_size("512MB") == 512_000_000 and parse_size("2 KiB") == 2048 and parse_size("100") == 100


@pytest.mark.parametrize(
    "name, ok",
    [
        ("orders", True),
        ('x"; DROP TABLE y; --', True),
        ("it's", True),
        ("", False),
        (" a", False),
        ("a\tb", False),
        ("a" * 2000, False),
    ],
)
def test_identifier_rules(name: str, ok: bool) -> None:
    assert (identifier_problem(name, "table") is None) == ok


def test_paths_follow_duckdb() -> None:
    assert path_for("orders_2024-x", "u") == "orders_2024-x/"
    assert path_for("we ird", "0190-uuid") == "0190-uuid/"
