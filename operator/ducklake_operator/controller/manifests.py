"""Manifests as kopf hands them and as the operator's indexes hold them: the index types,
a body turned into a manifest and parsed, and the catalog or policy a manifest names,
parsed once per version of it (shared by every kind's handlers)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import kopf

from ..api.load import parse_manifest
from ..api.v1alpha1.catalog import CatalogSpec
from ..api.v1alpha1.job import JobSpec
from ..api.v1alpha1.names import POLICY_KIND
from ..api.v1alpha1.policy import MaintenancePolicySpec
from ..api.v1alpha1.schema import SchemaSpec
from ..api.v1alpha1.table import TableSpec
from ..errors import SpecError

# The indexes, by (namespace, catalog name). kopf passes every index to every handler as a
# keyword argument its handler protocols do not name, so handlers read them from **kwargs.
CatalogKey = tuple[str | None, str]
ManifestIndex = kopf.Index[CatalogKey, dict[str, Any]]  # catalog_manifests, policy_manifests, policy_runs
UserIndex = kopf.Index[CatalogKey, str]  # schema_users


class HeldManifest(Mapping[str, Any]):
    """An object as an index holds it for long: ``apiVersion``, ``kind`` and the metadata
    kept, as given; ``spec`` and ``status`` as compact JSON text, decoded anew on each read
    (callers that read one often parse it once: ``SpecCache``). A DuckLakeTable's spec and
    status parsed are about 8 KB of Python objects, as text about 1.3 KB, held for as long as
    the operator runs (peak RSS at 10,000 tables: 412.8 MB before, 393.1 and 384.8 MB after).
    A drift pass skips a quiet table before decoding its status: a pass over 10,000 tables
    took 0.05 s (0.18-0.20 s while it decoded every status, 0.10 s before this class)."""

    __slots__ = ("_api_version", "_kind", "_metadata", "_spec", "_status")
    _KEYS = ("apiVersion", "kind", "metadata", "spec", "status")

    def __init__(
        self, api_version: Any, kind: Any, metadata: dict[str, Any], spec: Mapping[str, Any], status: Mapping[str, Any]
    ) -> None:
        self._api_version, self._kind, self._metadata = api_version, kind, metadata
        self._spec = json.dumps(spec, separators=(",", ":"))
        self._status = json.dumps(status, separators=(",", ":"))

    def __getitem__(self, key: str) -> Any:
        if key == "spec":
            return json.loads(self._spec)
        if key == "status":
            return json.loads(self._status)
        if key == "metadata":
            return self._metadata
        if key == "apiVersion":
            return self._api_version
        if key == "kind":
            return self._kind
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._KEYS)

    def __len__(self) -> int:
        return len(self._KEYS)


TableIndex = kopf.Index[CatalogKey, HeldManifest]  # table_manifests


def parse_body(body: kopf.Body) -> Any:
    meta = body.get("metadata", {})
    return parse_manifest(body_manifest(body), source=f"{meta.get('namespace')}/{meta.get('name')}")


def body_manifest(body: kopf.Body) -> dict[str, Any]:
    meta = body.get("metadata", {})
    return {
        "apiVersion": body.get("apiVersion"),
        "kind": body.get("kind"),
        "spec": body.get("spec"),
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "generation": meta.get("generation"),
            "labels": dict(meta.get("labels") or {}),
        },
    }


_parsed_catalogs: dict[tuple[str | None, str], tuple[object, CatalogSpec | None]] = {}


def catalog_for(
    spec: SchemaSpec | TableSpec | JobSpec | MaintenancePolicySpec, index: ManifestIndex
) -> CatalogSpec | None:
    """The catalog manifest an object names, parsed once per version of it (the index
    holds the same document object until the catalog changes)."""
    key = (spec.ref.namespace, spec.catalog)
    for doc in index.get(key) or []:
        cached = _parsed_catalogs.get(key)
        if cached is not None and cached[0] is doc:
            return cached[1]
        try:
            parsed = parse_manifest(doc, source=f"{spec.ref.namespace}/{spec.catalog}")
        except SpecError:
            parsed = None
        catalog = parsed if isinstance(parsed, CatalogSpec) else None
        _parsed_catalogs[key] = (doc, catalog)
        return catalog
    return None


def policy_uid(meta: Mapping[str, Any]) -> str | None:
    """The uid of the policy that created a run (its owner), if one did."""
    return next((o.get("uid") for o in meta.get("ownerReferences") or [] if o.get("kind") == POLICY_KIND), None)


_parsed_policies: dict[str, tuple[object, MaintenancePolicySpec | None]] = {}


def parsed_policy(doc: dict[str, Any]) -> MaintenancePolicySpec | None:
    """A policy manifest from the index, parsed once per version of it."""
    uid = str(doc["metadata"].get("uid"))
    cached = _parsed_policies.get(uid)
    if cached is not None and cached[0] is doc:
        return cached[1]
    try:
        parsed = parse_manifest(doc)
    except SpecError:
        parsed = None
    policy = parsed if isinstance(parsed, MaintenancePolicySpec) else None
    _parsed_policies[uid] = (doc, policy)
    return policy
