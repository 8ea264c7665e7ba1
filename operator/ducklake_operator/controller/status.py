"""Pure: results -> status fields and standard conditions (no kopf, no I/O)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..api.v1alpha1.names import READY, UP_TO_DATE
from ..model import timestamps
from ..model.plans import TablePlan
from ..model.state import ColumnState, TableState

SMALL_FILE_BYTES = 16 * 1024 * 1024  # files under this count as small in status.stats


def now() -> str:
    return timestamps.now()


def condition(
    type_: str, status: bool | None, reason: str, message: str = "", generation: int | None = None
) -> dict[str, Any]:
    value = "Unknown" if status is None else ("True" if status else "False")
    out: dict[str, Any] = {"type": type_, "status": value, "reason": reason, "message": message[:2000]}
    if generation is not None:
        out["observedGeneration"] = generation
    return out


def merge_conditions(
    existing: list[dict[str, Any]] | None, updates: list[dict[str, Any]], stamp: str | None = None
) -> list[dict[str, Any]]:
    """Replace conditions by type; keep ``lastTransitionTime`` unless the status flips."""
    stamp = stamp or now()
    by_type = {c["type"]: dict(c) for c in (existing or [])}
    for new in updates:
        old = by_type.get(new["type"])
        merged = dict(new)
        merged["lastTransitionTime"] = (
            old["lastTransitionTime"]
            if old and old.get("status") == new["status"] and old.get("lastTransitionTime")
            else stamp
        )
        by_type[new["type"]] = merged
    return sorted(by_type.values(), key=lambda c: c["type"])


def status_changes(current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of ``desired`` that differ from ``current`` (None removes a field): only
    these are patched, so a resync or a timer that finds nothing new writes nothing."""
    return {key: value for key, value in desired.items() if current.get(key) != value}


Event = tuple[str, str, str]  # (Normal|Warning, reason, message)


def publication(
    current: Mapping[str, Any],
    status: Mapping[str, Any],
    conditions: list[dict[str, Any]],
    events: list[Event],
    failing: bool,
    scrub: Callable[[str], str] = lambda text: text,
) -> tuple[dict[str, Any], list[Event]]:
    """What to write for an outcome, given the status the object has: the changed fields
    (None removes one) and the events to post, every message scrubbed.

    Nothing is written that is already there, so a resync or a timer that finds nothing
    new writes nothing: a Ready condition that is True at the same generation is kept as it
    is (its message says what was last applied, not "up to date"); a failure's event is
    posted once, not on every retry of the same failure."""
    patch = status_changes(current, status)
    existing = list(current.get("conditions") or [])
    ready: Mapping[str, Any] = next((c for c in existing if c.get("type") == READY), {})
    updates = []
    for c in conditions:
        c = {**c, "message": scrub(c.get("message", ""))}
        if (
            c["type"] == READY
            and c["status"] == "True"
            and c.get("reason") == UP_TO_DATE
            and ready.get("status") == "True"
            and ready.get("observedGeneration") == c.get("observedGeneration")
        ):
            continue
        updates.append(c)
    if updates:
        merged = merge_conditions(existing, updates)
        if merged != existing:
            patch["conditions"] = merged
    posted = []
    for type_, reason, message in events:
        message = scrub(message)
        repeated = (
            type_ == "Warning"
            and failing
            and ready.get("status") == "False"
            and (ready.get("reason"), ready.get("message")) == (reason, message)
        )
        if not repeated:
            posted.append((type_, reason, message))
    return patch, posted


def table_fields(table: TableState) -> dict[str, Any]:
    """Ids, columns and health of a table, for status."""
    columns = []

    def visit(cols: Iterable[ColumnState], prefix: str) -> None:
        for c in cols:
            path = f"{prefix}{c.name}"
            columns.append({"name": path, "id": c.column_id, "type": c.type_name})
            visit(c.children, path + ".")

    visit(table.columns, "")
    deleted = sum(d.delete_count for d in table.delete_files)
    layout_snapshot, schema_version = table.layout_change or (table.begin_snapshot, None)
    changed = max(
        [table.begin_snapshot, layout_snapshot]
        + [c.begin_snapshot for c in table.all_columns()]
        + [f.begin_snapshot for f in table.data_files]
        + [d.begin_snapshot for d in table.delete_files]
    )
    return {
        # the table's own, so that commits to other tables change nothing in its status
        "snapshot": changed,
        "schemaVersion": schema_version,
        "tableId": table.table_id,
        "tableUuid": table.table_uuid,
        "columnCount": len(table.columns),
        "columns": columns,
        "stats": {
            "rows": sum(f.record_count for f in table.data_files) - deleted,
            "files": len(table.data_files),
            "bytes": sum(f.file_size_bytes for f in table.data_files),
            "smallFiles": sum(1 for f in table.data_files if f.file_size_bytes < SMALL_FILE_BYTES),
            "deleteFiles": len(table.delete_files),
        },
    }


def table_health(table: TableState) -> dict[str, Any]:
    """Files, small files, delete ratio and bytes of a table: a run's before and after."""
    rows = sum(f.record_count for f in table.data_files)
    deleted = sum(d.delete_count for d in table.delete_files)
    return {
        "files": len(table.data_files),
        "smallFiles": sum(1 for f in table.data_files if f.file_size_bytes < SMALL_FILE_BYTES),
        "deleteRatio": round(deleted / rows, 4) if rows else 0.0,
        "bytes": sum(f.file_size_bytes for f in table.data_files),
    }


def plan_fields(plan: TablePlan, committed_snapshot: int | None) -> dict[str, Any]:
    """lastPlan / pendingPlan / blockedChanges for a plan just applied or refused."""
    if plan.is_refused:
        return {
            "pendingPlan": {"hash": plan.hash, "changes": plan.lines()},
            "blockedChanges": [
                {"change": b.change.describe(), "reason": b.reason, "allow": b.allow} for b in plan.blocked
            ]
            + [
                {"change": u, "reason": "DuckLake 1.0 cannot express this", "allow": "change the manifest back"}
                for u in plan.unsupported
            ],
        }
    fields: dict[str, Any] = {"pendingPlan": None, "blockedChanges": []}
    if committed_snapshot is not None:
        fields["lastPlan"] = {"hash": plan.hash, "snapshot": committed_snapshot, "changes": plan.lines()}
    return fields
