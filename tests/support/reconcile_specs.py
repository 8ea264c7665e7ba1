"""The reconcile functions' inputs and outputs as a test builds and reads them: a catalog's and a
table's parsed manifests (namespace ``ns``, the catalog named ``lake``), an outcome's conditions."""

from __future__ import annotations

import copy
from typing import Any

from ducklake_operator.api.v1alpha1.catalog import CatalogSpec
from ducklake_operator.api.v1alpha1.table import TableSpec
from ducklake_operator.catalog import CatalogLocation
from support.job_program import catalog_manifest
from support.manifests import parse_as


def catalog_spec(location: CatalogLocation, data_path: str, **spec: Any) -> CatalogSpec:
    """The catalog ``lake`` at ``location``; a PostgreSQL one names the Secret ``pg``."""
    doc = catalog_manifest(location, data_path, "pg", **spec)
    doc["metadata"] = {"name": "lake", "namespace": "ns", "generation": 1}
    return parse_as(CatalogSpec, doc)


def table_manifest(name: str, columns: list[dict[str, Any]], generation: int = 1, **spec: Any) -> dict[str, Any]:
    """The DuckLakeTable of the table ``name`` (its manifest's name too) of the catalog ``lake``."""
    return {
        "kind": "DuckLakeTable",
        "metadata": {"name": name, "namespace": "ns", "generation": generation},
        "spec": {"catalogRef": {"name": "lake"}, "name": name, "columns": copy.deepcopy(columns), **spec},
    }


def table_spec(name: str, columns: list[dict[str, Any]], generation: int = 1, **spec: Any) -> TableSpec:
    """``table_manifest``, parsed."""
    return parse_as(TableSpec, table_manifest(name, columns, generation, **spec))


def conditions(outcome: Any) -> dict[str, tuple[str, str]]:
    """An outcome's conditions: type -> (status, reason)."""
    return {c["type"]: (c["status"], c["reason"]) for c in outcome.conditions}
