"""A small in-process Kubernetes API server for tests (there is no cluster on these machines).

A stand-in for the real API server and nothing else: it keeps objects in memory and serves
what kopf and ``kubectl get`` use, with the semantics they rely on (kmock 0.8 lacks several
of them, see the controller issue):

* discovery (``/api``, ``/apis``, group versions) built from our CRDs, with ``/status``;
* list with a ``resourceVersion``, and watch streams that resume from it without replaying
  or losing events (one ordered event log, a global resourceVersion counter);
* create answers 201, honours ``generateName`` and the namespace of the URL;
* JSON merge-patch (RFC 7386) on objects and on the status subresource; ``generation``
  increases only when ``spec`` changes; PUT replaces;
* delete honours finalizers (``deletionTimestamp`` first, gone when the last is removed);
* events and Secrets in the core group; ``kubectl get`` tables from the printer columns.
Everything listens on 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
import threading
import uuid
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from ducklake_operator.controller.crds import KINDS, crd

CORE = {"events": ("Event", True), "secrets": ("Secret", True), "namespaces": ("Namespace", False)}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def json_patch(target: Any, ops: list[dict[str, Any]]) -> Any:
    """RFC 6902 (add, remove, replace, test), which kopf uses for finalizers."""
    doc = copy.deepcopy(target)
    for op in ops:
        parts = (
            [p.replace("~1", "/").replace("~0", "~") for p in op["path"].lstrip("/").split("/")] if op["path"] else []
        )
        parent = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent.setdefault(part, {})
        last = parts[-1] if parts else None
        if op["op"] == "test":
            current = parent[int(last)] if isinstance(parent, list) else parent.get(last)
            if current != op.get("value"):
                raise web.HTTPUnprocessableEntity(
                    text=json.dumps({"kind": "Status", "code": 422, "message": f"test failed at {op['path']}"}),
                    content_type="application/json",
                )
        elif op["op"] in ("add", "replace"):
            if isinstance(parent, list):
                if last == "-":
                    parent.append(op["value"])
                elif op["op"] == "add":
                    parent.insert(int(last), op["value"])
                else:
                    parent[int(last)] = op["value"]
            else:
                parent[last] = op["value"]
        elif op["op"] == "remove":
            if isinstance(parent, list):
                parent.pop(int(last))
            else:
                parent.pop(last, None)
    return doc


def apply_defaults(schema: dict[str, Any], value: Any) -> Any:
    """Structural-schema defaulting, as the API server does on create and update."""
    if isinstance(value, dict):
        for name, sub in schema.get("properties", {}).items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                apply_defaults(sub, value[name])
    elif isinstance(value, list) and "items" in schema:
        for item in value:
            apply_defaults(schema["items"], item)
    return value


def jsonpath(obj: Any, path: str) -> Any:
    """The subset of JSONPath our printer columns use: .a.b and [?(@.k=="v")].x."""
    cur: Any = obj
    for part in re.findall(r'\.([A-Za-z0-9_]+)|\[\?\(@\.(\w+)=="([^"]*)"\)\]', path):
        key, fkey, fval = part
        if key:
            cur = cur.get(key) if isinstance(cur, dict) else None
        else:
            cur = next((x for x in cur or [] if isinstance(x, dict) and x.get(fkey) == fval), None)
        if cur is None:
            return None
    return cur


class KubeApi:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}  # (plural, namespace, name)
        self.log: list[tuple[int, str, str, dict[str, Any]]] = []  # (rv, plural, type, object)
        self.rv = 0
        self.kinds = {e["plural"]: e for e in KINDS}
        self.crds = {e["plural"]: crd(e) for e in KINDS}
        self.requests: list[tuple[str, str]] = []
        self._changed: asyncio.Condition | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.port = 0
        self._runner: web.AppRunner | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> KubeApi:
        ready = threading.Event()

        def run() -> None:
            self.loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self.loop)
            self._changed = asyncio.Condition()
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", self.handle)
            self._runner = web.AppRunner(app, handle_signals=False)
            self.loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            self.loop.run_until_complete(site.start())
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True, name="kube-api")
        self.thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        if self.loop and self._runner:

            async def shutdown() -> None:
                current = asyncio.current_task()
                tasks = [t for t in asyncio.all_tasks() if t is not current]
                for t in tasks:  # open watch streams
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                await self._runner.cleanup()  # type: ignore[union-attr]

            try:
                asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(10)
            finally:
                self.loop.call_soon_threadsafe(self.loop.stop)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kubeconfig(self, path: str) -> str:
        with open(path, "w") as fh:
            json.dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "emu",
                    "clusters": [{"name": "emu", "cluster": {"server": self.url}}],
                    "users": [{"name": "emu", "user": {"token": "test"}}],
                    "contexts": [{"name": "emu", "context": {"cluster": "emu", "user": "emu", "namespace": "default"}}],
                },
                fh,
            )
        return path

    # ------------------------------------------------------------------ thread-safe helpers for tests

    def call(self, coro):  # type: ignore[no-untyped-def]
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)  # type: ignore[arg-type]

    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.objects.get((plural, namespace, name)))

    def events_for(self, name: str) -> list[dict[str, Any]]:
        return [
            copy.deepcopy(o)
            for (p, _, _), o in self.objects.items()
            if p == "events" and o.get("involvedObject", {}).get("name") == name
        ]

    # ------------------------------------------------------------------ storage

    async def _record(self, plural: str, type_: str, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.log.append((self.rv, plural, type_, copy.deepcopy(obj)))
        assert self._changed is not None
        async with self._changed:
            self._changed.notify_all()
        return obj

    def _kind(self, plural: str) -> tuple[str, str]:
        if plural in CORE:
            return CORE[plural][0], "v1"
        return self.kinds[plural]["kind"], "ducklake.dev/v1alpha1"

    async def create(self, plural: str, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        obj = copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        meta["namespace"] = namespace
        if (plural, namespace, meta["name"]) in self.objects:
            raise web.HTTPConflict(
                text=json.dumps(self._status(409, "AlreadyExists", f"{plural} {meta['name']!r} already exists")),
                content_type="application/json",
            )
        kind, api_version = self._kind(plural)
        self._default(plural, obj)
        obj.setdefault("kind", kind)
        obj.setdefault("apiVersion", api_version)
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=_now(), generation=1)
        self.objects[(plural, namespace, meta["name"])] = obj
        return copy.deepcopy(await self._record(plural, "ADDED", obj))

    async def update(
        self, plural: str, namespace: str, name: str, new: dict[str, Any], *, status_only: bool
    ) -> dict[str, Any]:
        old = self.objects.get((plural, namespace, name))
        if old is None:
            raise web.HTTPNotFound(
                text=json.dumps(self._status(404, "NotFound", f"{plural} {name!r} not found")),
                content_type="application/json",
            )
        if status_only:
            obj = dict(old)
            obj["status"] = new.get("status")
        else:
            obj = dict(new)
            obj["status"] = old.get("status")  # the main resource does not write status
            meta = obj["metadata"]
            for frozen in ("uid", "creationTimestamp", "generation", "namespace", "name", "deletionTimestamp"):
                if frozen in old["metadata"]:
                    meta[frozen] = old["metadata"][frozen]
            if obj.get("spec") != old.get("spec"):
                meta["generation"] = old["metadata"]["generation"] + 1
        if obj.get("status") is None:
            obj.pop("status", None)
        self._default(plural, obj)
        meta = obj["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            del self.objects[(plural, namespace, name)]
            return copy.deepcopy(await self._record(plural, "DELETED", obj))
        self.objects[(plural, namespace, name)] = obj
        return copy.deepcopy(await self._record(plural, "MODIFIED", obj))

    async def delete(self, plural: str, namespace: str, name: str) -> dict[str, Any]:
        obj = self.objects.get((plural, namespace, name))
        if obj is None:
            raise web.HTTPNotFound(
                text=json.dumps(self._status(404, "NotFound", f"{name!r} not found")), content_type="application/json"
            )
        if obj["metadata"].get("finalizers"):
            if not obj["metadata"].get("deletionTimestamp"):
                obj = copy.deepcopy(obj)
                obj["metadata"]["deletionTimestamp"] = _now()
                self.objects[(plural, namespace, name)] = obj
                return copy.deepcopy(await self._record(plural, "MODIFIED", obj))
            return copy.deepcopy(obj)
        del self.objects[(plural, namespace, name)]
        return copy.deepcopy(await self._record(plural, "DELETED", obj))

    def _default(self, plural: str, obj: dict[str, Any]) -> None:
        if plural in self.crds:
            apply_defaults(self.crds[plural]["spec"]["versions"][0]["schema"]["openAPIV3Schema"], obj)

    @staticmethod
    def _status(code: int, reason: str, message: str) -> dict[str, Any]:
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": code,
            "reason": reason,
            "message": message,
        }

    # ------------------------------------------------------------------ HTTP

    def _discovery(self, path: str) -> dict[str, Any] | None:
        if path == "/version":
            return {"major": "1", "minor": "31", "gitVersion": "v1.31.0-emulator"}
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if path == "/apis":
            return {
                "kind": "APIGroupList",
                "apiVersion": "v1",
                "groups": [
                    {
                        "name": "ducklake.dev",
                        "versions": [{"groupVersion": "ducklake.dev/v1alpha1", "version": "v1alpha1"}],
                        "preferredVersion": {"groupVersion": "ducklake.dev/v1alpha1", "version": "v1alpha1"},
                    }
                ],
            }
        if path == "/api/v1":
            return {
                "kind": "APIResourceList",
                "groupVersion": "v1",
                "resources": [
                    {
                        "name": p,
                        "singularName": k.lower(),
                        "namespaced": ns,
                        "kind": k,
                        "verbs": ["create", "get", "list", "watch", "patch", "delete"],
                    }
                    for p, (k, ns) in CORE.items()
                ],
            }
        if path == "/apis/ducklake.dev/v1alpha1":
            resources = []
            for plural, e in self.kinds.items():
                names = self.crds[plural]["spec"]["names"]
                resources.append(
                    {
                        "name": plural,
                        "singularName": names["singular"],
                        "namespaced": True,
                        "kind": e["kind"],
                        "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
                        "shortNames": names["shortNames"],
                        "categories": names["categories"],
                    }
                )
                resources.append(
                    {
                        "name": f"{plural}/status",
                        "singularName": "",
                        "namespaced": True,
                        "kind": e["kind"],
                        "verbs": ["get", "patch", "update"],
                    }
                )
            return {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": "ducklake.dev/v1alpha1",
                "resources": resources,
            }
        return None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        self.requests.append((request.method, path))
        found = self._discovery(path)
        if found is not None:
            return web.json_response(found)
        m = re.fullmatch(
            r"/(?:api/v1|apis/ducklake\.dev/v1alpha1)(?:/namespaces/([^/]+))?/([a-z]+)(?:/([^/]+))?(?:/(status))?", path
        )
        if not m or (m.group(2) not in self.kinds and m.group(2) not in CORE):
            return web.json_response(self._status(404, "NotFound", f"no route {path}"), status=404)
        namespace, plural, name, sub = m.groups()
        try:
            if request.method == "GET" and name is None:
                if request.query.get("watch") in ("true", "1"):
                    return await self._watch(request, plural, namespace)
                return self._list(request, plural, namespace)
            if request.method == "GET":
                obj = self.objects.get((plural, namespace or "", name))
                if obj is None:
                    return web.json_response(self._status(404, "NotFound", f"{plural} {name!r} not found"), status=404)
                return web.json_response(obj)
            if request.method == "POST":
                return web.json_response(
                    await self.create(plural, namespace or "default", await request.json()), status=201
                )
            if request.method == "PATCH":
                current = self.objects.get((plural, namespace or "", name))
                if current is None:
                    return web.json_response(self._status(404, "NotFound", f"{plural} {name!r} not found"), status=404)
                payload = await request.json()
                patched = json_patch(current, payload) if isinstance(payload, list) else merge_patch(current, payload)
                return web.json_response(
                    await self.update(plural, namespace or "", name, patched, status_only=sub == "status")
                )
            if request.method == "PUT":
                return web.json_response(
                    await self.update(plural, namespace or "", name, await request.json(), status_only=sub == "status")
                )
            if request.method == "DELETE":
                return web.json_response(await self.delete(plural, namespace or "", name))
        except web.HTTPException as exc:
            return web.Response(status=exc.status, text=exc.text, content_type="application/json")
        return web.json_response(self._status(405, "MethodNotAllowed", request.method), status=405)

    def _items(self, plural: str, namespace: str | None) -> list[dict[str, Any]]:
        return [
            copy.deepcopy(o)
            for (p, ns, _), o in sorted(self.objects.items())
            if p == plural and namespace in (None, ns)
        ]

    def _list(self, request: web.Request, plural: str, namespace: str | None) -> web.Response:
        kind, api_version = self._kind(plural)
        items = self._items(plural, namespace)
        if "as=Table" in request.headers.get("Accept", "") and plural in self.kinds:
            return web.json_response(self._table(plural, items))
        return web.json_response(
            {
                "kind": kind + "List",
                "apiVersion": api_version,
                "metadata": {"resourceVersion": str(self.rv)},
                "items": items,
            }
        )

    def _table(self, plural: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        columns = self.crds[plural]["spec"]["versions"][0]["additionalPrinterColumns"]
        return {
            "kind": "Table",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": str(self.rv)},
            "columnDefinitions": [{"name": "Name", "type": "string", "format": "name"}]
            + [{"name": c["name"], "type": c["type"], "format": ""} for c in columns],
            "rows": [
                {
                    "cells": [o["metadata"]["name"]] + [jsonpath(o, c["jsonPath"]) for c in columns],
                    "object": {
                        "kind": "PartialObjectMetadata",
                        "apiVersion": "meta.k8s.io/v1",
                        "metadata": o["metadata"],
                    },
                }
                for o in items
            ],
        }

    async def _watch(self, request: web.Request, plural: str, namespace: str | None) -> web.StreamResponse:
        since = int(request.query.get("resourceVersion") or 0)
        timeout = float(request.query.get("timeoutSeconds") or 300)
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        deadline = asyncio.get_running_loop().time() + timeout
        sent = since
        assert self._changed is not None
        try:
            while asyncio.get_running_loop().time() < deadline:
                scanned = list(self.log)  # events recorded while we write are picked up next round
                for rv, p, type_, obj in scanned:
                    if rv > sent and p == plural and namespace in (None, obj["metadata"].get("namespace")):
                        await response.write((json.dumps({"type": type_, "object": obj}) + "\n").encode())
                if scanned:
                    sent = max(sent, scanned[-1][0])
                async with self._changed:
                    if self.rv > sent:
                        continue
                    try:
                        await asyncio.wait_for(
                            self._changed.wait(), timeout=max(0.1, deadline - asyncio.get_running_loop().time())
                        )
                    except TimeoutError:
                        pass
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        return response
