"""DuckDB 1.5.5's logical conflict rules (``CheckForConflicts``), as a pure function.

"Mine" is the change set being committed; "theirs" are the changes of every snapshot
committed after my base snapshot. Rules are table-level and asymmetric (docs/ducklake-format.md §2.5): an
insert conflicts with a concurrent delete, alter or drop of the same table, but a
concurrent insert does not; two deletes conflict only if they touch the same data file,
which only the caller can tell (``same_files_deleted``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from .changes_made import Change

# mine token -> their tokens on the same table id that conflict with it
_TABLE_RULES: dict[str, frozenset[str]] = {
    "dropped_table": frozenset({"dropped_table"}),
    "inserted_into_table": frozenset({"dropped_table", "altered_table", "deleted_from_table", "inlined_delete"}),
    "inlined_insert": frozenset({"dropped_table", "altered_table", "deleted_from_table", "inlined_delete"}),
    "deleted_from_table": frozenset(
        {"dropped_table", "altered_table", "merge_adjacent", "rewrite_delete", "inserted_into_table", "inlined_insert"}
    ),
    "inlined_delete": frozenset(
        {"dropped_table", "altered_table", "inlined_delete", "inline_flush", "inserted_into_table", "inlined_insert"}
    ),
    "inline_flush": frozenset({"dropped_table", "inlined_delete", "inline_flush"}),
    "merge_adjacent": frozenset({"dropped_table", "deleted_from_table", "merge_adjacent", "rewrite_delete"}),
    "rewrite_delete": frozenset({"dropped_table", "deleted_from_table", "merge_adjacent", "rewrite_delete"}),
    "altered_table": frozenset({"dropped_table", "altered_table"}),
}
_SAME_ID_RULES: dict[str, frozenset[str]] = {
    "dropped_view": frozenset({"dropped_view"}),
    "altered_view": frozenset({"altered_view"}),
    "dropped_scalar_macro": frozenset({"dropped_scalar_macro"}),
    "dropped_table_macro": frozenset({"dropped_table_macro"}),
    "dropped_schema": frozenset({"dropped_schema"}),
}
_RELATION_CREATES = frozenset({"created_table", "created_view"})
_MACRO_CREATES = frozenset({"created_scalar_macro", "created_table_macro"})

_VERBS = {
    "dropped_table": "dropped it",
    "altered_table": "altered it",
    "deleted_from_table": "deleted from it",
    "inserted_into_table": "inserted into it",
    "inlined_insert": "inserted into it",
    "inlined_delete": "deleted from it",
    "inline_flush": "flushed its inlined data",
    "merge_adjacent": "compacted it",
    "rewrite_delete": "rewrote its files",
}


@dataclass(frozen=True)
class Conflict:
    snapshot_id: int
    mine: Change
    theirs: Change
    reason: str


def find_conflict(
    mine: Iterable[Change],
    theirs: Iterable[tuple[int, Change]],
    *,
    schema_names: Mapping[int, str] | None = None,
    same_files_deleted: Callable[[int, int], bool] | None = None,
) -> Conflict | None:
    """The first conflict between my change set and changes committed since my base.

    ``schema_names`` maps schema ids to names (a dropped schema conflicts with a table
    created in it by name). ``same_files_deleted(table_id, snapshot_id)`` says whether that
    snapshot deleted from, or ended, a data file my commit deletes from; without it, two
    deletes on one table are treated as conflicting (the safe side).
    """
    schema_names = schema_names or {}
    theirs = list(theirs)
    for m in mine:
        for snapshot_id, t in theirs:
            reason = _conflict_reason(m, t, snapshot_id, schema_names, same_files_deleted)
            if reason:
                return Conflict(snapshot_id, m, t, reason)
    return None


def _conflict_reason(
    m: Change,
    t: Change,
    snapshot_id: int,
    schema_names: Mapping[int, str],
    same_files: Callable[[int, int], bool] | None,
) -> str | None:
    if m.token in _TABLE_RULES and t.id == m.id and t.token in _TABLE_RULES[m.token]:
        return f"table {m.id}: snapshot {snapshot_id} {_VERBS.get(t.token, t.token)}"
    if m.token == "deleted_from_table" and t.token == "deleted_from_table" and t.id == m.id:
        if same_files is None or same_files(m.id or 0, snapshot_id):
            return f"table {m.id}: snapshot {snapshot_id} deleted from the same data files"
    if m.token in _SAME_ID_RULES and t.id == m.id and t.token in _SAME_ID_RULES[m.token]:
        return f"{m.token.replace('_', ' ')} {m.id}: snapshot {snapshot_id} did the same"
    if m.token == "dropped_schema" and t.token in _RELATION_CREATES and t.schema == schema_names.get(m.id or -1):
        return f"schema {t.schema!r}: snapshot {snapshot_id} created {t.name!r} in it"
    if m.token == "created_schema" and t.token == "created_schema" and t.schema == m.schema:
        return f"schema {m.schema!r} was created by snapshot {snapshot_id}"
    for creates in (_RELATION_CREATES, _MACRO_CREATES):
        if m.token in creates:
            if t.token in creates and (t.schema, t.name) == (m.schema, m.name):
                return f"{m.schema}.{m.name} was created by snapshot {snapshot_id}"
            if t.token == "dropped_schema" and schema_names.get(t.id or -1) == m.schema:
                return f"schema {m.schema!r} was dropped by snapshot {snapshot_id}"
    return None
