from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ducklake_operator.catalog.changes_made import TOKEN_ORDER, Change, ChangesParseError, parse_changes, render_changes
from ducklake_operator.catalog.conflicts import find_conflict


def test_render_orders_like_duckdb_and_quotes_names() -> None:
    changes = [
        Change("altered_table", id=2),
        Change("inserted_into_table", id=2),
        Change("created_table", schema="main", name="b"),
        Change("altered_table", id=1),
        Change("inlined_insert", id=1),
    ]
    assert (
        render_changes(changes)
        == 'created_table:"main"."b",inserted_into_table:2,altered_table:2,altered_table:1,inlined_insert:1'
    )
    assert (
        render_changes([Change("created_table", schema="weird name", name='tab,le "q"')])
        == 'created_table:"weird name"."tab,le ""q"""'
    )
    assert render_changes([]) is None


def test_parse_duckdb_strings() -> None:
    text = 'created_table:"main"."b",inserted_into_table:2,altered_table:1,created_schema:"s,""x"""'
    assert parse_changes(text) == [
        Change("created_table", schema="main", name="b"),
        Change("inserted_into_table", id=2),
        Change("altered_table", id=1),
        Change("created_schema", schema='s,"x"'),
    ]
    assert parse_changes(None) == [] and parse_changes("") == []
    assert parse_changes("compacted_table:3") == [Change("compacted_table", id=3)]  # legacy, parsed only


@pytest.mark.parametrize("bad", ["custom_change:1", "altered_table:x", 'created_table:"a"', 'created_schema:"open'])
def test_parse_refuses_what_duckdb_refuses(bad: str) -> None:
    with pytest.raises(ChangesParseError):
        parse_changes(bad)


def test_unknown_tokens_cannot_be_constructed() -> None:
    with pytest.raises(ValueError):
        Change("custom_change", id=1)


token = st.sampled_from([name for name, _ in TOKEN_ORDER])
text = st.text(alphabet='ab,.:" x_', min_size=0, max_size=6)


@st.composite
def changes(draw: st.DrawFn) -> Change:
    name = draw(token)
    kind = dict(TOKEN_ORDER)[name]
    if kind == "id":
        return Change(name, id=draw(st.integers(0, 10**6)))
    if kind == "schema":
        return Change(name, schema=draw(text))
    return Change(name, schema=draw(text), name=draw(text))


@given(st.lists(changes(), max_size=8))
def test_render_parse_round_trip(cs: list[Change]) -> None:
    assert sorted(parse_changes(render_changes(cs)), key=repr) == sorted(set(cs), key=repr)


C = Change


@pytest.mark.parametrize(
    "mine, theirs, conflicts",
    [
        # pairs verified with two DuckDB clients, docs/ducklake-format.md §2.5 (second committer = mine)
        (C("inserted_into_table", id=1), C("inserted_into_table", id=1), False),
        (C("inlined_insert", id=1), C("inlined_insert", id=1), False),
        (C("inserted_into_table", id=1), C("deleted_from_table", id=1), True),
        (C("deleted_from_table", id=1), C("inserted_into_table", id=1), True),
        (C("inserted_into_table", id=1), C("altered_table", id=1), True),
        (C("altered_table", id=1), C("inserted_into_table", id=1), False),
        (C("altered_table", id=1), C("altered_table", id=1), True),
        (C("inserted_into_table", id=1), C("dropped_table", id=1), True),
        (C("inserted_into_table", id=1), C("merge_adjacent", id=1), False),
        (C("merge_adjacent", id=1), C("inserted_into_table", id=1), False),
        (C("deleted_from_table", id=1), C("merge_adjacent", id=1), True),
        (C("inlined_insert", id=1), C("inline_flush", id=1), False),
        (C("inlined_delete", id=1), C("inlined_delete", id=1), True),
        (C("created_table", schema="main", name="n"), C("created_table", schema="main", name="n"), True),
        (C("created_table", schema="main", name="n"), C("created_table", schema="main", name="m"), False),
        (C("created_table", schema="main", name="n"), C("created_view", schema="main", name="n"), True),
        (C("created_table", schema="s", name="n"), C("dropped_schema", id=5), True),
        (C("dropped_schema", id=5), C("created_table", schema="s", name="x"), True),
        (C("created_schema", schema="s"), C("created_schema", schema="s"), True),
        (C("dropped_table", id=1), C("dropped_table", id=1), True),
        (C("altered_table", id=1), C("altered_table", id=2), False),
        (C("merge_adjacent", id=1), C("rewrite_delete", id=1), True),
    ],
)
def test_conflict_matrix(mine: Change, theirs: Change, conflicts: bool) -> None:
    found = find_conflict([mine], [(7, theirs)], schema_names={5: "s"})
    assert (found is not None) == conflicts
    if found:
        assert found.snapshot_id == 7 and "7" in found.reason


def test_two_deletes_conflict_only_on_the_same_files() -> None:
    mine, theirs = [C("deleted_from_table", id=1)], [(4, C("deleted_from_table", id=1))]
    assert find_conflict(mine, theirs, same_files_deleted=lambda t, s: False) is None
    assert find_conflict(mine, theirs, same_files_deleted=lambda t, s: True) is not None
    assert find_conflict(mine, theirs) is not None  # unknown: the safe side
