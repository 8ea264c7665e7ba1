"""Properties of ingest's schema evolution over arbitrary JSON records (pure): every value is
written to the table (docs/ingest-schema-evolution.md §1, the first principle: at least one
column of its field holds it),
existing columns never change, and records of shapes already seen add no column."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ducklake_operator.evolution.auto_schema import IngestPlan, plan_ingest
from ducklake_operator.evolution.observed import BadRecord, Fields, observe_record
from ducklake_operator.evolution.routing import convert_record
from ducklake_operator.model.names import fold
from ducklake_operator.model.state import ColumnState, TableState

EMPTY = TableState(1, "uuid", 0, "main", "t", "t/", True, 0, (), 1)
NAMES = st.sampled_from(["a", "b", "A", "c_string", ""])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=3),
)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3), max_leaves=8
)
RECORDS = st.lists(st.dictionaries(NAMES, VALUES, max_size=4), min_size=1, max_size=6)


def observed(records: list[dict[str, Any]]) -> tuple[Fields, list[dict[str, Any]]]:
    """What the records hold, and the records ingest takes (bad ones are skipped)."""
    fields: Fields = {}
    good = []
    for r in records:
        try:
            observe_record({}, r)  # first alone: a bad record adds nothing
        except BadRecord:
            continue
        observe_record(fields, r)
        good.append(r)
    return fields, good


def evolve(t: TableState, records: list[dict[str, Any]]) -> tuple[TableState, IngestPlan, list[dict[str, Any]]]:
    fields, good = observed(records)
    plan = plan_ingest(t, fields)
    next_id = max((c.column_id for top in plan.layout for c in top.walk()), default=0) + 1
    return replace(t, columns=plan.layout, next_column_id=next_id), plan, good


def holds_something(value: Any) -> bool:
    """A value that says more than NULL: not NULL, not a record of nothing (DuckLake has no
    struct without fields), not an array of only such records."""
    if isinstance(value, dict):
        return any(holds_something(v) for k, v in value.items() if k != "")
    if isinstance(value, list):
        records = [leaf for leaf in leaves(value) if isinstance(leaf, dict)]
        return not records or any(holds_something(r) for r in records)
    return value is not None


def leaves(value: list[Any]) -> list[Any]:
    return [leaf for e in value if e is not None for leaf in (leaves(e) if isinstance(e, list) else [e])]


def extends(new: ColumnState, old: ColumnState) -> bool:
    """The column as it was, perhaps with fields added to its structs (after the old ones)."""
    return (
        (new.column_id, new.name, new.type_name) == (old.column_id, old.name, old.type_name)
        and len(new.children) >= len(old.children)
        and all(extends(n, o) for n, o in zip(new.children, old.children, strict=False))
        and (new.type_name == "struct" or len(new.children) == len(old.children))
    )


@settings(max_examples=150, deadline=None)
@given(RECORDS, RECORDS)
def test_every_value_is_written_and_columns_never_change(first: list[Any], second: list[Any]) -> None:
    t = EMPTY
    for batch in (first, second):
        before = t.columns
        t, plan, good = evolve(t, batch)
        assert all(extends(n, o) for n, o in zip(t.columns, before, strict=False))  # new columns after
        assert len(t.columns) >= len(before)
        for record in good:
            row = convert_record(record, plan.level)
            for name, value in record.items():
                if name and holds_something(value):
                    targets = plan.level.routes[fold(name)]
                    assert any(row[target.index] is not None for target in targets), (name, value, plan.describe())


@settings(max_examples=150, deadline=None)
@given(RECORDS)
def test_shapes_seen_before_add_no_column(records: list[Any]) -> None:
    t, _, good = evolve(EMPTY, records)
    _, again, _ = evolve(t, good)
    assert again.changes == ()
