"""Every status field the operator writes is declared in its CRD: the real API server prunes
undeclared fields silently. The statuses come from the reconcilers themselves (real
catalogs, each kind in its typical states), are written to the status subresource as the
operator writes them, and read back unchanged."""

from __future__ import annotations

import json
from typing import Any

from ducklake_operator.api.load import parse_manifest
from ducklake_operator.controller import reconcilers as r
from ducklake_operator.controller.status import merge_conditions
from support.manifests import manifest, sqlite_catalog, table


def parsed(doc: dict[str, Any], namespace: str) -> Any:
    return parse_manifest({**doc, "metadata": {**doc["metadata"], "namespace": namespace, "generation": 1}})


def statuses(namespace: str, directory: str) -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """(kind, name, manifest, status) for each kind in the states the operator reports."""
    pool = r.CatalogPool()
    lake = sqlite_catalog("lake", directory)
    gone = sqlite_catalog("gone", directory, metadata={"sqlite": {"path": "/nonexistent/dir/x.sqlite"}})
    sales = manifest("DuckLakeSchema", "sales", {"catalogRef": {"name": "lake"}, "name": "sales"})
    orders = table("orders", "lake", schema="sales")
    narrowed = table("orders", "lake", schema="sales", columns=[{"name": "id", "type": "int64"}])
    out = []
    try:
        lake_spec = parsed(lake, namespace)
        out.append(("DuckLakeCatalog", "lake", lake, r.reconcile_catalog(lake_spec, pool)))
        out.append(("DuckLakeCatalog", "gone", gone, r.reconcile_catalog(parsed(gone, namespace), pool)))
        out.append(("DuckLakeSchema", "sales", sales, r.reconcile_schema(parsed(sales, namespace), lake_spec, pool)))
        out.append(("DuckLakeTable", "orders", orders, r.reconcile_table(parsed(orders, namespace), lake_spec, pool)))
        blocked = r.reconcile_table(parsed(narrowed, namespace), lake_spec, pool)  # a drop: blocked
        out.append(("DuckLakeTable", "blocked", {**narrowed, "metadata": {"name": "blocked"}}, blocked))
        drifted = r.check_table_drift(parsed(narrowed, namespace), lake_spec, pool)
        out.append(("DuckLakeTable", "drifted", {**narrowed, "metadata": {"name": "drifted"}}, drifted))
        waiting = r.reconcile_table(parsed(orders, namespace), None, pool)
        out.append(("DuckLakeTable", "waiting", {**orders, "metadata": {"name": "waiting"}}, waiting))
    finally:
        pool.close()
    return [
        (kind, name, doc, {**o.status, "conditions": merge_conditions([], o.conditions)}) for kind, name, doc, o in out
    ]


def test_every_status_field_survives_the_api_server(cluster, chart, kube, tmp_path) -> None:
    written = statuses(kube.namespace, str(tmp_path))
    assert {kind for kind, *_ in written} == {"DuckLakeCatalog", "DuckLakeSchema", "DuckLakeTable"}
    assert any(s.get("blockedChanges") for *_, s in written) and any(s.get("drift") for *_, s in written)
    for kind, name, doc, status in written:
        kube.apply({**doc, "metadata": {"name": name}})
        clean = {k: v for k, v in status.items() if v is not None}  # None removes a field in a merge patch
        # a server-side dry run returns the object as stored after pruning, and the operator
        # (which reconciles these objects too) cannot write in between
        out = kube.kubectl("patch", kind.lower(), name, "--subresource=status", "--type=merge", "--dry-run=server",
                           "-o", "json", "-p", json.dumps({"status": clean}))  # fmt: skip
        stored = json.loads(out)["status"]
        assert {k: stored.get(k) for k in clean} == clean, f"{kind}/{name}: the API server pruned status fields"
