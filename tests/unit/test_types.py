from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ducklake_operator.errors import SpecError
from ducklake_operator.model.types import (
    PRIMITIVES,
    Decimal,
    DuckLakeType,
    Field,
    ListOf,
    MapOf,
    Primitive,
    Struct,
    parse_type,
    to_duckdb_sql,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("INTEGER", Primitive("int32")),
        ("int", Primitive("int32")),
        ("BIGINT", Primitive("int64")),
        ("int8", Primitive("int8")),
        ("TINYINT", Primitive("int8")),
        ("VARCHAR", Primitive("varchar")),
        ("varchar(255)", Primitive("varchar")),
        ("TEXT", Primitive("varchar")),
        ("DOUBLE", Primitive("float64")),
        ("double precision", Primitive("float64")),
        ("REAL", Primitive("float32")),
        ("FLOAT", Primitive("float32")),
        ("TIMESTAMP WITH TIME ZONE", Primitive("timestamptz")),
        ("timestamptz", Primitive("timestamptz")),
        ("TIME WITH TIME ZONE", Primitive("timetz")),
        ("timestamp_us", Primitive("timestamp")),
        ("DECIMAL(10,2)", Decimal(10, 2)),
        ("numeric(5)", Decimal(5, 0)),
        ("DECIMAL", Decimal(18, 3)),
        ("INTEGER[]", ListOf(Primitive("int32"))),
        ("VARCHAR[][]", ListOf(ListOf(Primitive("varchar")))),
        ("LIST(BIGINT)", ListOf(Primitive("int64"))),
        ("list<int64>", ListOf(Primitive("int64"))),
        ("MAP(VARCHAR, INTEGER)", MapOf(Primitive("varchar"), Primitive("int32"))),
        (
            'STRUCT(a INTEGER, "b c" VARCHAR[])',
            Struct((Field("a", Primitive("int32")), Field("b c", ListOf(Primitive("varchar"))))),
        ),
        ("struct<a: int32>", Struct((Field("a", Primitive("int32")),))),
    ],
)
def test_parse_aliases_and_nested(text: str, expected: object) -> None:
    assert parse_type(text) == expected


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("int65", "did you mean int64?"),
        ("varchr", "did you mean varchar?"),
        ("decimal(40,2)", "1 <= P <= 38"),
        ("decimal(5,6)", "0 <= S <= P"),
        ("STRUCT(a INTEGER", "expected"),
        ("MAP(INTEGER)", "expected ','"),
        ("", "empty"),
        ("blobby", "is not a DuckLake type"),
    ],
)
def test_parse_errors_say_what_is_allowed(text: str, fragment: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_type(text)
    assert fragment in str(err.value)


@pytest.mark.parametrize("name", list(PRIMITIVES))
def test_every_primitive_round_trips_through_duckdb_sql(name: str) -> None:
    t = Primitive(name)
    assert parse_type(name) == t
    assert parse_type(to_duckdb_sql(t)) == t


primitive = st.sampled_from([Primitive(n) for n in PRIMITIVES]) | st.builds(
    lambda p, s: Decimal(p, min(s, p)), st.integers(1, 38), st.integers(0, 38)
)
names = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=8)
types = st.recursive(
    primitive,
    lambda inner: (
        st.builds(ListOf, inner)
        | st.builds(MapOf, inner, inner)
        | st.lists(st.tuples(names, inner), min_size=1, max_size=4, unique_by=lambda x: x[0]).map(
            lambda fs: Struct(tuple(Field(n, t) for n, t in fs))
        )
    ),
    max_leaves=10,
)


@given(types)
def test_rendered_types_parse_back(t: DuckLakeType) -> None:
    assert parse_type(to_duckdb_sql(t)) == t
