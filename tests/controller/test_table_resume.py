"""A restarted operator resumes every table: one whose generation is applied, Ready, with
nothing under way, is not planned again (``tables.handlers.settled``); anything else is."""

from __future__ import annotations

from typing import Any

import pytest

from ducklake_operator.controller.tables.handlers import settled


def body(generation: int = 2, observed: int | None = 2, **conditions: tuple[str, int]) -> dict[str, Any]:
    conditions = {"Ready": ("True", 2), "Progressing": ("False", 2), "Blocked": ("False", 2), **conditions}
    return {
        "metadata": {"generation": generation},
        "status": {
            "observedGeneration": observed,
            "conditions": [{"type": t, "status": s, "observedGeneration": g} for t, (s, g) in conditions.items()],
        },
    }


def test_an_applied_ready_table_is_settled() -> None:
    assert settled(body())
    assert settled(body(Drifted=("True", 2)))  # the drift pass reports or reverts it, as before the restart


@pytest.mark.parametrize(
    "doc",
    [
        body(generation=3),  # changed while no operator ran
        body(observed=None),  # never applied
        body(Ready=("False", 2)),  # e.g. the catalog was unreachable
        body(Ready=("True", 1)),  # Ready for an older generation
        body(Progressing=("True", 2)),  # a heavy change's run under way
        body(Blocked=("True", 2)),  # a destructive change waiting for approval
        {"metadata": {"generation": 1}},  # no status at all
    ],
)
def test_anything_else_is_planned_again(doc: dict[str, Any]) -> None:
    assert not settled(doc)
