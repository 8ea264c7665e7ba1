"""Prometheus metrics of the controller (served by main on --metrics-port)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

RECONCILES = Counter(
    "ducklake_reconciles_total", "Reconciles by kind and result (ok or a condition reason).", ["kind", "result"]
)
RECONCILE_SECONDS = Histogram("ducklake_reconcile_seconds", "Time to reconcile one object.", ["kind"])
CATALOG_QUERIES = Counter(
    "ducklake_catalog_queries_total", "Statements sent to catalog databases (transaction control excluded)."
)
