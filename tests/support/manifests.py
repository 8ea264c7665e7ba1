"""Manifests of our kinds, as a test writes them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, TypeVar

from ducklake_operator.api.load import parse_manifest
from ducklake_operator.api.v1alpha1 import Manifest

API = "ducklake.dev/v1alpha1"
M = TypeVar("M", bound=Manifest)


def parse_as(kind: type[M], doc: Mapping[str, Any]) -> M:
    """``parse_manifest`` in a test that knows which kind it wrote."""
    spec = parse_manifest(doc)
    assert isinstance(spec, kind), f"{doc.get('kind')} parsed as {type(spec).__name__}"
    return spec


def manifest(kind: str, name: str, spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": API, "kind": kind, "metadata": {"name": name, **metadata}, "spec": spec}


def sqlite_catalog(name: str, directory: str, **spec: Any) -> dict[str, Any]:
    return manifest(
        "DuckLakeCatalog",
        name,
        {"metadata": {"sqlite": {"path": os.path.join(directory, f"{name}.sqlite")}},
         "dataPath": os.path.join(directory, f"{name}-data") + "/", **spec},
    )  # fmt: skip


def table(name: str, catalog: str, columns: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    columns = columns or [{"name": "id", "type": "int64"}, {"name": "amount", "type": "int32"}]
    return manifest("DuckLakeTable", name, {"catalogRef": {"name": catalog}, "name": name, "columns": columns, **spec})
