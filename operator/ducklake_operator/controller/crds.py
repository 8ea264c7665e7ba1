"""The CRDs' generator, run as ``python -m ducklake_operator.controller.crds [ROOT]``: the
schemas are declared per kind in ``api/v1alpha1`` and rendered by ``api/crd.py``. This
module keeps the entry point and the names other modules and tests use."""

from __future__ import annotations

import sys
from typing import Any

from ..api import crd as _crd
from ..api.crd import write_all
from ..api.v1alpha1 import KINDS as _KINDS
from ..api.v1alpha1.fields import Schema
from ..api.v1alpha1.names import JOB_KIND

__all__ = ["KINDS", "crd", "file_name", "job_schema", "render", "write_all"]

# one entry per kind, as callers iterate them
KINDS: list[dict[str, Any]] = [{"kind": k.name, "declaration": k} for k in _KINDS.values()]


def crd(entry: dict[str, Any]) -> dict[str, Any]:
    return _crd.crd(entry["declaration"])


def render(entry: dict[str, Any]) -> str:
    return _crd.render(entry["declaration"])


def file_name(entry: dict[str, Any]) -> str:
    return _crd.file_name(entry["declaration"])


def job_schema() -> dict[str, Schema]:
    job = _KINDS[JOB_KIND]
    return {"spec": job.spec.schema(), "status": job.status.schema()}


if __name__ == "__main__":
    for p in write_all(sys.argv[1] if len(sys.argv) > 1 else "."):
        print(p)
