"""What a reconcile of one resource decided, for its kopf handler to publish: status
fields, conditions, events, or a failure to retry (``boundary.Failure``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..api.v1alpha1.names import PROGRESSING, READY
from ..errors import CommitConflict
from ..evolution.heavy import HeavyJob
from .boundary import Failure, classify
from .metrics import COMMIT_CONFLICTS, RECONCILE
from .status import condition


@dataclass
class Outcome:
    status: dict[str, Any] = field(default_factory=dict)
    conditions: list[dict[str, Any]] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (Normal|Warning, reason, message)
    failure: Failure | None = None  # temporary: retry after failure.delay
    heavy: tuple[HeavyJob, ...] = ()  # jobs the applied plan's heavy changes need (``heavy_runs`` starts them)


def failed(exc: BaseException, generation: int | None, extra: list[dict[str, Any]] | None = None) -> Outcome:
    """A reconcile that raised: Ready false with the failure's reason, an event, and a retry
    when the failure is temporary (``boundary.classify``)."""
    failure = classify(exc)
    if isinstance(exc, CommitConflict):
        COMMIT_CONFLICTS.labels(operation=RECONCILE).inc()
    conditions = [
        condition(READY, False, failure.reason, failure.message, generation),
        condition(PROGRESSING, False, failure.reason, "", generation),
    ] + (extra or [])
    return Outcome(
        conditions=conditions,
        events=[("Warning", failure.reason, failure.message)],
        failure=failure if failure.temporary else None,
    )
