"""What every kind's status holds: its conditions and the operator's bookkeeping, and the
plans of a schema or a table."""

from __future__ import annotations

from .fields import Anything, Arr, Choice, Int, Node, Obj, Str, obj
from .names import CONDITION_TYPES


def _condition() -> Obj:
    return obj(
        "Standard Kubernetes condition.",
        {
            "type": Str(desc=", ".join(CONDITION_TYPES) + ", ..."),
            "status": Str(desc="True, False or Unknown.", choice=Choice(("True", "False", "Unknown"))),
            "reason": Str(desc="One-word CamelCase reason."),
            "message": Str(desc="Human-readable details."),
            "observedGeneration": Int(desc="Generation the condition was computed for."),
            "lastTransitionTime": Str(desc="When the status last changed (RFC 3339)."),
        },
        required=("type", "status"),
    )


def status(extra: dict[str, Node]) -> Obj:
    """A kind's status: the conditions and bookkeeping every kind has, then its own fields."""
    props: dict[str, Node] = {
        "conditions": Arr(desc="Current conditions.", items=_condition()),
        "observedGeneration": Int(desc="The spec generation last reconciled."),
        "kopf": Anything(
            desc="The operator's bookkeeping (kopf): handler progress and the last spec handled.", mapping=True
        ),
    }
    return obj("Observed state, written by the operator.", {**props, **extra})


def plan_status() -> dict[str, Node]:
    """Status of the plans of a schema or a table (status.plan_fields writes them)."""
    changes = Arr(desc="One line per change.", items=Str(desc="A change."))
    return {
        "lastPlan": obj(
            "The changes last applied.",
            {"hash": Str(desc="Plan hash."), "snapshot": Int(desc="Snapshot committed."), "changes": changes},
        ),
        "pendingPlan": obj(
            "A plan that is blocked or cannot be applied.",
            {"hash": Str(desc="Plan hash; copy into spec.evolution.approvedPlan to approve."), "changes": changes},
        ),
        "blockedChanges": Arr(
            desc="Changes refused and how to allow them.",
            items=obj(
                "A blocked change.",
                {
                    "change": Str(desc="The change."),
                    "reason": Str(desc="Why it is blocked."),
                    "allow": Str(desc="How to allow it."),
                },
            ),
        ),
    }
