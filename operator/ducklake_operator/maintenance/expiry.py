"""Which snapshots to expire (pure).

DuckDB's ``ducklake_expire_snapshots`` rules: by age (``older_than``) and/or explicit
versions, never the latest snapshot. We add ``retain_last``: the newest N snapshots are
always kept, whatever their age.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ..errors import SpecError
from ..model.durations import parse_duration  # noqa: F401  (re-exported for the jobs)


def parse_snapshot_time(value: datetime | str | None) -> datetime:
    """``snapshot_time`` as stored: a datetime (PostgreSQL) or DuckDB's text (SQLite)."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not value:
        return datetime.min.replace(tzinfo=UTC)
    text = value.strip()
    if re.search(r"[+-]\d{2}$", text):
        text += ":00"
    return datetime.fromisoformat(text)


@dataclass(frozen=True)
class ExpiryPlan:
    expire: tuple[int, ...]  # snapshot ids, oldest first
    keep: int  # snapshots that remain


def plan_expiry(
    snapshots: list[tuple[int, datetime]],
    *,
    now: datetime,
    older_than: timedelta | None = None,
    retain_last: int | None = None,
) -> ExpiryPlan:
    """``snapshots``: (id, time) of every snapshot. At least one of the limits must be set."""
    if older_than is None and retain_last is None:
        raise SpecError("expireSnapshots needs olderThan and/or retainLast")
    ordered = sorted(snapshots)
    if not ordered:
        return ExpiryPlan((), 0)
    protected = {ordered[-1][0]}  # never the latest snapshot
    if retain_last:
        protected |= {sid for sid, _ in ordered[-retain_last:]}
    cutoff = now - older_than if older_than is not None else None
    expire = tuple(sid for sid, t in ordered if sid not in protected and (cutoff is None or t < cutoff))
    return ExpiryPlan(expire, len(ordered) - len(expire))
