"""CRDs: one source of truth, structural, documented, and every example validates against them
(OpenAPI schema with jsonschema, CEL rules with cel-python)."""

from __future__ import annotations

import copy
import glob
import os
from typing import Any

import celpy
import jsonschema
import pytest
import yaml

from ducklake_operator.controller import crds

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


def walk(schema: dict[str, Any], path: str = ""):  # type: ignore[no-untyped-def]
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
        if path.endswith("{}"):
            continue
        assert node.get("description"), f"{kind}{path} has no description"
        assert (
            node.get("type")
            or node.get("x-kubernetes-preserve-unknown-fields")
            or node.get("x-kubernetes-int-or-string")
        ), f"{kind}{path} has no type (not structural)"


def to_jsonschema(node: Any) -> Any:
    """OpenAPI v3 (Kubernetes flavour) -> JSON Schema: drop the x-kubernetes extensions."""
    if isinstance(node, dict):
        out = {k: to_jsonschema(v) for k, v in node.items() if not k.startswith("x-kubernetes")}
        if node.get("x-kubernetes-int-or-string"):
            out["type"] = ["integer", "string"]
        return out
    if isinstance(node, list):
        return [to_jsonschema(v) for v in node]
    return node


def cel_errors(schema: dict[str, Any], value: Any, old: Any = None, path: str = "") -> list[str]:
    """Evaluate the x-kubernetes-validations rules of every node present in ``value``."""
    errors = []
    env = celpy.Environment()
    for rule in schema.get("x-kubernetes-validations", []):
        if "oldSelf" in rule["rule"] and old is None:
            continue  # transition rules apply to updates only
        activation = {"self": celpy.json_to_cel(value)}
        if old is not None:
            activation["oldSelf"] = celpy.json_to_cel(old)
        if not env.program(env.compile(rule["rule"])).evaluate(activation):
            errors.append(f"{path or '<root>'}: {rule['message']}")
    if isinstance(value, dict):
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                errors += cel_errors(
                    sub, value[name], old.get(name) if isinstance(old, dict) else None, f"{path}.{name}"
                )
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += cel_errors(schema["items"], item, None, f"{path}[{i}]")
    return errors


def validate(doc: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    schema = openapi(doc["kind"])
    problems = [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
        for e in jsonschema.Draft7Validator(to_jsonschema(schema)).iter_errors(doc)
    ]
    return problems + cel_errors(schema, doc, old)


def example_documents() -> list[tuple[str, dict[str, Any]]]:
    docs = []
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "**", "*.yaml"), recursive=True)):
        with open(path, encoding="utf-8") as fh:
            docs += [(os.path.relpath(path, ROOT), d) for d in yaml.safe_load_all(fh) if d]
    return docs


@pytest.mark.parametrize("source, doc", example_documents(), ids=[s for s, _ in example_documents()])
def test_every_example_validates_against_its_crd(source: str, doc: dict[str, Any]) -> None:
    assert validate(doc) == []


def test_every_kind_has_an_example() -> None:
    assert {d["kind"] for _, d in example_documents()} == set(BY_KIND)


def catalog_doc(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ducklake.dev/v1alpha1",
        "kind": "DuckLakeCatalog",
        "metadata": {"name": "c"},
        "spec": {"metadata": {"sqlite": {"path": "/data/c.sqlite"}}, "dataPath": "/data/lake/", **spec},
    }


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["spec"].update(dataPath="/data/lake"), "does not match"),
        (
            lambda d: d["spec"]["metadata"].update(postgres={"host": "h", "database": "d"}),
            "exactly one of postgres or sqlite",
        ),
        (lambda d: d["spec"].update(metadata={}), "exactly one of postgres or sqlite"),
        (lambda d: d["spec"].update(deletionPolicy="Keep"), "is not one of"),
    ],
)
def test_invalid_catalogs_are_rejected(mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    doc = catalog_doc()
    mutate(doc)
    assert any(message in p for p in validate(doc)), validate(doc)


def test_catalog_ref_is_immutable_and_jobs_too() -> None:
    _, table = next((s, d) for s, d in example_documents() if d["kind"] == "DuckLakeTable")
    moved = copy.deepcopy(table)
    moved["spec"]["catalogRef"]["name"] = "other"
    assert any("catalogRef is immutable" in p for p in validate(moved, old=table))
    assert validate(copy.deepcopy(table), old=table) == []
    _, job = next((s, d) for s, d in example_documents() if d["kind"] == "DuckLakeJob")
    changed = copy.deepcopy(job)
    changed["spec"]["retries"] = 5
    assert any("immutable" in p for p in validate(changed, old=job))


def test_examples_parse_with_the_operator_too() -> None:
    from ducklake_operator.api.load import parse_manifest

    for source, doc in example_documents():
        parse_manifest(doc, source)
