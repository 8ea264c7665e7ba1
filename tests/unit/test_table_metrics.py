"""Tables by condition (``ducklake_tables``): counts follow each table's published status,
and a deleted table stops counting."""

from __future__ import annotations

from ducklake_operator.controller import metrics


def gauge() -> dict[tuple[str, str], float]:
    (family,) = list(metrics.TABLES.collect())
    return {(s.labels["condition"], s.labels["status"]): s.value for s in family.samples}


def ready(value: str) -> dict[str, object]:
    return {"conditions": [{"type": "Ready", "status": value}, {"type": "Drifted", "status": "False"}]}


def test_counts_follow_each_tables_status_and_its_deletion() -> None:
    before = gauge()

    def delta() -> dict[tuple[str, str], float]:
        now = gauge()
        return {k: v - before.get(k, 0) for k, v in now.items() if v != before.get(k, 0)}

    metrics.table_seen("t-1", "ns", "a", ready("True"))
    metrics.table_seen("t-2", "ns", "b", ready("True"))
    metrics.table_seen("t-1", "ns", "a", ready("True"))  # again: nothing counted twice
    assert delta() == {("Ready", "True"): 2, ("Drifted", "False"): 2}
    metrics.table_seen("t-1", "ns", "a", ready("False"))
    assert delta() == {("Ready", "True"): 1, ("Ready", "False"): 1, ("Drifted", "False"): 2}
    metrics.table_gone("t-1", "ns", "a")
    metrics.table_gone("t-2", "ns", "b")
    assert delta() == {}
