"""CRDs: one source of truth, structural and documented. What the API server does with them
(examples accepted, invalid manifests rejected, CEL, immutability) is tested on a real one
in tests/e2e/test_crds_on_server.py."""

from __future__ import annotations

import copy
import glob
import os
from typing import Any

import pytest

from ducklake_operator.api.crd import SCHEMA_ANNOTATION, schema_digest
from ducklake_operator.controller import crds
from ducklake_operator.controller.crd_check import crd_mismatch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
BY_KIND = {e["kind"]: crds.crd(e) for e in crds.KINDS}


def openapi(kind: str) -> dict[str, Any]:
    return BY_KIND[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_crd_files_are_generated_and_identical_in_the_chart() -> None:
    for entry in crds.KINDS:
        expected = crds.render(entry)
        name = crds.file_name(entry)
        with open(os.path.join(ROOT, "crds", name), encoding="utf-8") as fh:
            assert fh.read() == expected, f"crds/{name} is stale: run python -m ducklake_operator.controller.crds"
        with (
            open(os.path.join(ROOT, "charts", "ducklake-operator", "crds", name), "rb") as a,
            open(os.path.join(ROOT, "crds", name), "rb") as b,
        ):
            assert a.read() == b.read()
    assert len(glob.glob(os.path.join(ROOT, "crds", "*.yaml"))) == len(crds.KINDS)


def walk(schema: dict[str, Any], path: str = ""):
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from walk(sub, f"{path}.{name}")
    if "items" in schema:
        yield from walk(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from walk(schema["additionalProperties"], f"{path}{{}}")


@pytest.mark.parametrize("kind", list(BY_KIND))
def test_schemas_are_structural_and_documented(kind: str) -> None:
    crd = BY_KIND[kind]
    names = crd["spec"]["names"]
    assert names["categories"] == ["ducklake"] and names["shortNames"]
    version = crd["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}} and version["additionalPrinterColumns"]
    for path, node in walk(openapi(kind)):
        if path.endswith("{}") or path == ".metadata":  # the API server allows only a type on metadata
            continue
        assert node.get("description"), f"{kind}{path} has no description"
        assert (
            node.get("type")
            or node.get("x-kubernetes-preserve-unknown-fields")
            or node.get("x-kubernetes-int-or-string")
        ), f"{kind}{path} has no type (not structural)"


def test_each_crd_carries_the_digest_of_its_spec() -> None:
    digests = set()
    for entry in crds.KINDS:
        rendered = crds.crd(entry)
        digest = rendered["metadata"]["annotations"][SCHEMA_ANNOTATION]
        assert digest == schema_digest(rendered["spec"])
        changed = copy.deepcopy(rendered["spec"])
        changed["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"].popitem()
        assert schema_digest(changed) != digest  # a status field fewer: another version's schema
        digests.add(digest)
    assert len(digests) == len(crds.KINDS)


def test_a_crd_that_is_not_the_operators_is_named_with_what_to_do() -> None:
    name = "ducklakejobs.ducklake.dev"
    assert crd_mismatch(name, {"annotations": {SCHEMA_ANNOTATION: "abc"}}, "abc") is None
    assert crd_mismatch(name, {"annotations": {SCHEMA_ANNOTATION: "old"}}, "abc") == (
        "CustomResourceDefinition ducklakejobs.ducklake.dev is not this operator's (its ducklake.dev/schema: old, "
        "this operator's: abc): the API server drops the fields it does not declare. Apply this version's CRDs: "
        "kubectl apply --server-side -f crds/ (helm upgrade leaves a chart's CRDs as they were)"
    )
    assert "(its ducklake.dev/schema: none," in str(crd_mismatch(name, {"annotations": {}}, "abc"))
    assert crd_mismatch(name, None, "abc") == (
        "CustomResourceDefinition ducklakejobs.ducklake.dev is not installed. Install this version's CRDs: kubectl "
        "apply --server-side -f crds/ (helm upgrade leaves a chart's CRDs as they were)"
    )
