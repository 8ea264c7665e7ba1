"""The Argo CD health check (Lua, run with a real Lua interpreter) says what a GitOps user
expects of each kind's status; the argocd-cm snippet holds exactly that script per kind."""

from __future__ import annotations

import os
from typing import Any

import pytest
import yaml
from lupa import LuaRuntime

CHART = os.path.join(os.path.dirname(__file__), "..", "..", "charts", "ducklake-operator", "argocd")
KINDS = ("DuckLakeCatalog", "DuckLakeSchema", "DuckLakeTable", "DuckLakeMaintenancePolicy", "DuckLakeJob")


def script() -> str:
    with open(os.path.join(CHART, "health.lua")) as fh:
        return fh.read()


def health(obj: dict[str, Any]) -> tuple[str, str]:
    lua = LuaRuntime(unpack_returned_tuples=True)
    lua.globals().obj = lua.table_from(_lua(lua, obj))
    out = lua.execute(script())
    return out["status"], out["message"]


def _lua(lua: LuaRuntime, value: Any) -> Any:
    if isinstance(value, dict):
        return lua.table_from({k: _lua(lua, v) for k, v in value.items()})
    if isinstance(value, list):
        return lua.table_from([_lua(lua, v) for v in value])
    return value


def obj(kind: str, status: dict[str, Any] | None, generation: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "metadata": {"generation": generation},
        "spec": spec,
        **({"status": status} if status else {}),
    }


def ready(status: str, reason: str, generation: int = 1) -> dict[str, Any]:
    return {"observedGeneration": generation, "conditions": [{"type": "Ready", "status": status, "reason": reason,
                                                               "message": reason}]}  # fmt: skip


@pytest.mark.parametrize(
    "o, expected",
    [
        (obj("DuckLakeTable", None), "Progressing"),
        (obj("DuckLakeTable", ready("True", "Applied")), "Healthy"),
        (obj("DuckLakeTable", ready("True", "Applied"), generation=2), "Progressing"),  # not reconciled yet
        (obj("DuckLakeTable", ready("False", "Blocked")), "Degraded"),
        (obj("DuckLakeTable", ready("False", "CatalogUnreachable")), "Progressing"),
        (obj("DuckLakeCatalog", ready("False", "InvalidSpec")), "Degraded"),
        (obj("DuckLakeSchema", ready("False", "DeletionBlocked")), "Degraded"),
        (obj("DuckLakeJob", {"state": "Running"}), "Progressing"),
        (obj("DuckLakeJob", {"state": "Succeeded", "message": "committed snapshot 7"}), "Healthy"),
        (obj("DuckLakeJob", {"state": "Failed", "message": "timed out"}), "Degraded"),
        (obj("DuckLakeJob", {"state": "Cancelled"}), "Suspended"),
        (obj("DuckLakeMaintenancePolicy", ready("True", "Scheduling"), suspend=True), "Suspended"),
        (obj("DuckLakeMaintenancePolicy", {"observedGeneration": 1, "conditions": [
            {"type": "Ready", "status": "True", "reason": "Scheduling"},
            {"type": "Conflict", "status": "True", "reason": "CatalogWideOwner", "message": "owned by nightly"}]}),
         "Degraded"),
    ],
)  # fmt: skip
def test_health(o: dict[str, Any], expected: str) -> None:
    assert health(o)[0] == expected


def test_the_argocd_cm_snippet_is_the_script_for_every_kind() -> None:
    with open(os.path.join(CHART, "argocd-cm.yaml")) as fh:
        data = yaml.safe_load(fh)["data"]
    assert data == {f"resource.customizations.health.ducklake.dev_{k}": script() for k in KINDS}
