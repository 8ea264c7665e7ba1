"""Manifests (YAML files or kopf bodies) -> typed specs, read by the kinds' declarations
(``api/v1alpha1``).

``parse_manifest`` is pure: a dict in, a spec out, or one ``SpecError`` listing every
problem with its field path (``spec.columns[3].type: 'int65' is not a DuckLake type; did
you mean int64?``). ``load_paths`` is the file-reading edge used by the CLI.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from ..errors import SpecError
from ..model import job_params
from ..model.maintenance_params import FORMATS
from ..model.names import fold
from .problems import Problems
from .v1alpha1 import KINDS, Manifest
from .v1alpha1.columns import COLUMN_TAGS_REFUSED
from .v1alpha1.common import ObjectRef
from .v1alpha1.names import API_VERSION, TABLE_KIND
from .v1alpha1.table import TableSpec

__all__ = ["COLUMN_TAGS_REFUSED", "job_keywords", "load_paths", "parse_args", "parse_manifest"]


def parse_manifest(doc: Mapping[str, Any], source: str | None = None, base_dir: str | None = None) -> Manifest:
    """One manifest dict -> spec; SpecError lists every problem found."""
    problems = Problems(base_dir)
    if not isinstance(doc, Mapping):
        raise SpecError("a manifest must be a mapping", source=source)
    kind = doc.get("kind")
    meta = doc.get("metadata") or {}
    name = meta.get("name") if isinstance(meta, Mapping) else None
    ref = ObjectRef(
        kind=str(kind),
        name=str(name),
        namespace=meta.get("namespace") if isinstance(meta, Mapping) else None,
        source=source,
        generation=meta.get("generation") if isinstance(meta, Mapping) else None,
        labels=tuple(sorted((meta.get("labels") or {}).items())) if isinstance(meta, Mapping) else (),
    )
    if kind not in KINDS:
        raise SpecError(f"kind {kind!r} is not one of {', '.join(KINDS)}", source=source)
    if doc.get("apiVersion") not in (None, API_VERSION):
        problems.add("apiVersion", f"{doc.get('apiVersion')!r} is not {API_VERSION}")
    if not name or not isinstance(name, str):
        problems.add("metadata.name", "is required")
    spec = doc.get("spec")
    if not isinstance(spec, Mapping):
        problems.add("spec", "is required and must be a mapping")
        raise SpecError(problems.items, source=str(ref))
    result: Manifest = KINDS[kind].spec.read_value(problems, spec, "spec", ref=ref)
    if problems.items:
        raise SpecError(problems.items, source=str(ref))
    return result


def load_paths(paths: Iterable[str]) -> list[Manifest]:
    """Read manifests from files and directories (``*.yaml``/``*.yml``, multi-document).

    Relative paths inside a manifest (sqlite path, local dataPath) are resolved against
    the directory of the file that holds it. Every problem of every file is reported.
    """
    out: list[Manifest] = []
    problems: list[str] = []
    for path in _files(paths):
        try:
            with open(path, encoding="utf-8") as fh:
                docs = [d for d in yaml.safe_load_all(fh) if d is not None]
        except (OSError, yaml.YAMLError) as exc:
            problems.append(f"{path}: {str(exc).splitlines()[0]}")
            continue
        for i, doc in enumerate(docs):
            source = path if len(docs) == 1 else f"{path}#{i + 1}"
            try:
                out.append(parse_manifest(doc, source, os.path.dirname(os.path.abspath(path))))
            except SpecError as exc:
                problems.append(str(exc))
    if problems:
        raise SpecError(problems)
    _check_unique(out)
    return out


def _files(paths: Iterable[str]) -> list[str]:
    files: list[str] = []
    for p in paths:
        if os.path.isdir(p):  # not recursive, as kubectl apply -f DIR
            files += [os.path.join(p, n) for n in sorted(os.listdir(p)) if n.endswith((".yaml", ".yml"))]
        elif os.path.exists(p):
            files.append(p)
        else:
            raise SpecError(f"{p}: no such file or directory")
    return files


def _check_unique(manifests: list[Manifest]) -> None:
    seen: dict[tuple[str, str], str] = {}
    problems = []
    for m in manifests:
        key = (m.ref.kind, m.ref.name)
        if key in seen:
            problems.append(f"{m.ref}: another {m.ref.kind} is also named {m.ref.name!r} ({seen[key]})")
        seen[key] = m.ref.source or ""
    tables: dict[tuple[str, str, str], TableSpec] = {}
    for m in manifests:
        if isinstance(m, TableSpec):
            table = (m.catalog, fold(m.schema), fold(m.name))
            if table in tables:
                problems.append(f"{m.ref}: table {m.qualified_name} is also declared by {tables[table].ref}")
            tables[table] = m
    if problems:
        raise SpecError(problems)


def read_table_manifest(value: object) -> TableSpec:
    """A DuckLakeTable document as its ``TableSpec`` (one already parsed is taken as it is): how
    a job's "manifest" parameter is read (``job_keywords``, ``parse_args``)."""
    if isinstance(value, TableSpec):
        return value
    if not isinstance(value, dict) or value.get("kind") != TABLE_KIND:
        raise ValueError(f"{str(value)[:60]!r}... is not {FORMATS['manifest']}")
    try:
        spec = parse_manifest(value)
    except SpecError as exc:
        raise ValueError("; ".join(exc.problems)) from None
    assert isinstance(spec, TableSpec)  # its kind is DuckLakeTable
    return spec


def job_keywords(operation: str, params: Mapping[str, object], where: str = "params") -> dict[str, Any]:
    """``model.job_params.job_keywords`` with a "manifest" parameter read as its TableSpec."""
    return job_params.job_keywords(operation, params, where, read_table_manifest)


def parse_args(operation: str, params: Mapping[str, object], where: str = "params") -> object:
    """``model.job_params.parse_args`` with a "manifest" parameter read as its TableSpec: the
    typed arguments of a job, parsed once per process."""
    return job_params.parse_args(operation, params, where, read_table_manifest)
