"""The time stamps of status fields and annotations, as Kubernetes writes its own (RFC 3339,
UTC, whole seconds: ``2026-11-25T12:00:00Z``). Pure."""

from __future__ import annotations

from datetime import UTC, datetime

FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def stamp(instant: datetime) -> str:
    """An aware instant (a naive one is taken as UTC) as a stamp."""
    aware = instant if instant.tzinfo is not None else instant.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime(FORMAT)


def parse(text: object) -> datetime | None:
    """A stamp as an aware UTC instant; None for anything that is not one."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.strptime(text, FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def now() -> str:
    return stamp(datetime.now(UTC))
