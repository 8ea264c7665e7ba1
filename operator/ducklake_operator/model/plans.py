"""Plans are values: what would change, what is blocked and why, and a stable hash.

A blocked or unsupported item refuses the whole plan (nothing is applied), so a plan never
half-applies a manifest. ``hash`` covers every change, blocked ones included, so an
``approvedPlan`` copied from status is void as soon as the plan changes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from .changes import Change, RewriteColumnType


@dataclass(frozen=True)
class BlockedChange:
    change: Change
    reason: str  # why it is refused
    allow: str  # what the manifest must say to allow it

    def describe(self) -> str:
        return f"{self.change.describe()} (blocked: {self.reason})"


@dataclass(frozen=True)
class TablePlan:
    table: str  # schema.table
    base_snapshot: int | None
    changes: tuple[Change, ...]  # in commit order; applied only if nothing is blocked
    blocked: tuple[BlockedChange, ...] = ()
    unsupported: tuple[str, ...] = ()  # what DuckLake 1.0 cannot express
    notes: tuple[str, ...] = ()
    approved: bool = False  # blocked changes approved by spec.evolution.approvedPlan

    @property
    def hash(self) -> str:
        return plan_hash(self.changes)

    @property
    def heavy_changes(self) -> tuple[Change, ...]:
        """Changes that rewrite the data: one job does them, and commits ``light_changes`` with them."""
        return tuple(c for c in self.changes if isinstance(c, RewriteColumnType))

    @property
    def light_changes(self) -> tuple[Change, ...]:
        """The changes a catalog commit makes without rewriting data (the heavy changes' job's
        commit, when there are any)."""
        return tuple(c for c in self.changes if not isinstance(c, RewriteColumnType))

    @property
    def is_empty(self) -> bool:
        return not self.changes and not self.unsupported

    @property
    def is_refused(self) -> bool:
        return bool(self.unsupported) or (bool(self.blocked) and not self.approved)

    def lines(self) -> list[str]:
        blocked = {id(b.change): b for b in self.blocked}
        out = []
        for c in self.changes:
            b = blocked.get(id(c))
            out.append(b.describe() if b and not self.approved else c.describe() + (" (approved)" if b else ""))
        out += [f"! {u}" for u in self.unsupported]
        out += [f"# {n}" for n in self.notes]
        return out

    def render(self) -> str:
        if self.is_empty:
            return f"{self.table}: no changes"
        head = f"{self.table}: {len(self.changes)} change(s), plan {self.hash}"
        body = "\n".join("  " + line for line in self.lines())
        tail = ""
        if self.is_refused:
            hints = sorted(
                {b.allow for b in self.blocked}
                | ({"restore what DuckLake cannot change (see !)"} if self.unsupported else set())
            )
            tail = "\n  refused, nothing applied; to allow: " + "; ".join(hints)
        return f"{head}\n{body}{tail}"

    def summary(self) -> str:
        """One line for commit messages and events."""
        return "; ".join(c.describe() for c in self.changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "baseSnapshot": self.base_snapshot,
            "hash": self.hash,
            "changes": [c.describe() for c in self.changes],
            "blocked": [{"change": b.change.describe(), "reason": b.reason, "allow": b.allow} for b in self.blocked],
            "unsupported": list(self.unsupported),
            "notes": list(self.notes),
            "refused": self.is_refused,
            "approved": self.approved,
        }


def _canonical(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            "kind": type(value).__name__,
            **{f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)},
        }
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value


def plan_hash(changes: tuple[Change, ...]) -> str:
    """Stable over runs and machines: sha256 of the canonical JSON of the changes."""
    payload = json.dumps(_canonical(changes), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:16]
