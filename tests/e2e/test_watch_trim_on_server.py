"""kopf's watch as ``controller.kopf_patches`` leaves it, against the real API server: the
objects it lists and the events it streams come without ``metadata.managedFields`` (what
server-side apply records for every field), and with everything else the server sent."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import kopf
import pytest
from kopf._cogs.clients import auth, watching
from kopf._cogs.structs import credentials, references

from ducklake_operator.controller import kopf_patches
from support.kube_cluster import KubeCluster
from support.kube_namespace import Kube

CONFIGMAPS = references.Resource(group="", version="v1", plural="configmaps", namespaced=True)


def _applied(kube: Kube, name: str, value: str) -> dict[str, Any]:
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": value}}
    kube.kubectl("apply", "--server-side", "--field-manager=trim-test", "-f", "-", input=json.dumps(manifest))
    return dict(kube.cluster.request("GET", f"/api/v1/namespaces/{kube.namespace}/configmaps/{name}"))


async def _watched(cluster: KubeCluster, kube: Kube, count: int, while_watching: Any) -> list[Any]:
    """The first ``count`` events (listing included) of kopf's own watch of the namespace's
    ConfigMaps, logged in with the cluster's admin kubeconfig (``KUBECONFIG``)."""
    settings = kopf.OperatorSettings()
    info = kopf.login_with_kubeconfig(logger=logging.getLogger("test"), settings=settings)
    assert info is not None
    vault = credentials.Vault()
    await vault.populate({"kubeconfig": info})
    auth.vault_var.set(vault)
    never = asyncio.get_running_loop().create_future()
    events: list[Any] = []
    namespace = references.NamespaceName(kube.namespace)
    stream = watching.continuous_watch(
        settings=settings, resource=CONFIGMAPS, namespace=namespace, operator_pause_waiter=never
    )
    try:
        async for event in stream:
            events.append(event)
            if event is watching.Bookmark.LISTED:
                await asyncio.to_thread(while_watching)
            elif len([e for e in events if isinstance(e, dict)]) >= count:
                break
    finally:
        await stream.aclose()  # type: ignore[attr-defined]  # an async generator
        await vault.close()
    return [e for e in events if isinstance(e, dict)]


def test_listed_and_watched_objects_come_without_managed_fields(
    cluster: KubeCluster, kube: Kube, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert kopf_patches.install()
    monkeypatch.setenv("KUBECONFIG", cluster.kubeconfig)
    listed = _applied(kube, "listed", "1")
    assert listed["metadata"].get("managedFields")  # the server keeps them: what the watch drops
    updated: dict[str, Any] = {}

    def update() -> None:
        updated.update(_applied(kube, "listed", "2"))

    events = asyncio.run(asyncio.wait_for(_watched(cluster, kube, 2, update), timeout=60))
    assert [e["type"] for e in events] == [None, "MODIFIED"]  # kopf's listing, then the watch
    for event, expected in zip(events, (listed, updated), strict=True):
        got = event["object"]
        assert "managedFields" not in got["metadata"]
        assert got["data"] == expected["data"]
        want = {k: v for k, v in expected["metadata"].items() if k != "managedFields"}
        assert got["metadata"] == want
