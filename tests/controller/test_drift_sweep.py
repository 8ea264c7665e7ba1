"""A catalog's drift pass (``catalogs.drift_sweep.sweep``) over many tables: real catalogs
(SQLite, PostgreSQL), DuckDB changing a table outside the operator; the status writer is
a function recording what the pass would patch (its API call is exercised on the real
API server in tests/e2e/test_drift_and_deletion.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine, Iterator, Mapping
from dataclasses import replace
from typing import Any, cast

import kopf
import pytest

from ducklake_operator.api.v1alpha1.table import TableSpec
from ducklake_operator.controller.catalog_pool import CatalogPool
from ducklake_operator.controller.catalogs import drift_sweep
from ducklake_operator.controller.catalogs.drift_sweep import QuietTables, SpecCache, sweep
from ducklake_operator.controller.catalogs.reconciler import reconcile_catalog
from ducklake_operator.controller.manifests import HeldManifest
from ducklake_operator.controller.tables.handlers import table_manifests
from ducklake_operator.controller.tables.reconciler import check_table_drift, reconcile_table
from support import duck
from support.manifests import parse_as
from support.reconcile_specs import catalog_spec
from support.tcp_switch import TcpSwitch

COLUMNS: list[dict[str, Any]] = [
    {"name": "id", "type": "int64", "nullable": False},
    {"name": "amount", "type": "int32"},
]


@pytest.fixture
def pool() -> Iterator[CatalogPool]:
    p = CatalogPool(credentials=lambda *_: ("postgres", None))
    yield p
    p.close()


def table_doc(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "ducklake.dev/v1alpha1",
        "kind": "DuckLakeTable",
        "metadata": {"name": f"t{i}", "namespace": "ns", "uid": f"uid-{i}", "generation": 1, "resourceVersion": "1"},
        "spec": {"catalogRef": {"name": "lake"}, "name": f"t{i}", "columns": COLUMNS},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Applied"}]},
    }


class Published:
    """The status writer: merges what a pass writes into the documents and gives them a new
    resourceVersion, as the API server would, and remembers which tables were written."""

    def __init__(self) -> None:
        self.written: list[str] = []

    def __call__(self, held: Mapping[str, Any], fields: dict[str, Any]) -> bool:
        doc = cast(dict[str, Any], held)  # these tests' documents are plain dicts, updated in place
        self.written.append(doc["metadata"]["name"])
        status = doc["status"]
        doc["metadata"]["resourceVersion"] = str(int(doc["metadata"]["resourceVersion"]) + 1)
        for key, value in fields.items():
            if value is None:
                status.pop(key, None)
            else:
                status[key] = value
        return True


def test_a_pass_reads_the_catalog_once_and_plans_only_what_changed(location, data_path, pool, monkeypatch) -> None:
    cat = catalog_spec(location, data_path)
    reconcile_catalog(cat, pool)
    docs = [table_doc(i) for i in range(60)]
    for doc in docs:
        reconcile_table(parse_as(TableSpec, doc), cat, pool)
    planned: list[str] = []  # the tables a pass plans (check_table_drift counted, not replaced)

    def counted(spec: TableSpec, *args: Any, **kwargs: Any) -> Any:
        planned.append(spec.name)
        return check_table_drift(spec, *args, **kwargs)

    monkeypatch.setattr(drift_sweep, "check_table_drift", counted)
    specs, quiet, writer = SpecCache(), QuietTables(), Published()
    sweep(cat, docs, pool, specs, quiet, writer, str)  # the first pass publishes each table's drift and stats
    assert sorted(writer.written) == sorted(d["metadata"]["name"] for d in docs)

    assert len(planned) == len(docs)
    writer.written.clear()
    planned.clear()
    assert sweep(cat, docs, pool, specs, quiet, writer, str) == []  # each table planned again: its status moved
    assert len(planned) == len(docs) and writer.written == []
    planned.clear()
    statements = []
    for count in (10, 60):  # nothing changed: the same statements for 10 tables as for 60
        writer.written.clear()
        before = pool.queries
        assert sweep(cat, docs[:count], pool, specs, quiet, writer, str) == []
        statements.append(pool.queries - before)
        assert writer.written == []
    assert statements[0] == statements[1] <= 2, statements
    assert planned == []  # nothing changed: nothing planned again

    duck.attach(location).execute("ALTER TABLE lk.t7 ADD COLUMN sneaky INTEGER")
    before = pool.queries
    updates = sweep(cat, docs, pool, specs, quiet, writer, str)
    assert planned == ["t7"]
    assert [u.body["metadata"]["name"] for u in updates] == ["t7"]
    assert updates[0].status["drift"] == ["sneaky is in the catalog but not in the manifest"]
    assert [e[1] for e in updates[0].events] == ["Drifted"]
    refresh = pool.queries - before  # the freshness check, then a read of the changed table only

    before = pool.queries
    assert sweep(cat, docs, pool, specs, quiet, writer, str) == []  # reported once; the condition stays
    assert pool.queries - before <= 2 and refresh < len(docs) / 2, (refresh, pool.queries - before)
    assert docs[7]["status"]["drift"] == ["sneaky is in the catalog but not in the manifest"]
    assert planned == ["t7", "t7"]  # planned again once: its status moved
    assert sweep(cat, docs, pool, specs, quiet, writer, str) == [] and planned == ["t7", "t7"]


def test_tables_a_failed_read_made_not_ready_are_ready_again_once_the_catalog_reads(
    make_location, data_path, pool
) -> None:
    """An outage seen by a pass makes its tables not Ready; nothing else runs for them (their
    manifests are applied), so the first pass that reads the catalog again brings them back,
    and reports what changed outside meanwhile. A table whose new generation its handler has
    not applied yet stays its handler's."""
    reachable = make_location("postgres")
    switch = TcpSwitch(reachable.host or "127.0.0.1", reachable.port)
    try:
        cat = catalog_spec(replace(reachable, port=switch.port), data_path)
        reconcile_catalog(cat, pool)
        docs = [table_doc(i) for i in range(3)]
        for doc in docs:
            reconcile_table(parse_as(TableSpec, doc), cat, pool)
        docs[2]["metadata"]["generation"] = 2  # changed since: its handler applies it (it is not Ready now)
        for doc in docs:
            doc["status"]["observedGeneration"] = 1
        specs, quiet, writer = SpecCache(), QuietTables(), Published()
        sweep(cat, docs, pool, specs, quiet, writer, str)
        docs[2]["status"]["conditions"][0].update(status="False", reason="CatalogUnreachable")

        switch.off()
        sweep(cat, docs, pool, specs, quiet, writer, str)
        ready = [condition_of(d, "Ready") for d in docs[:2]]
        assert [(c["status"], c["reason"]) for c in ready] == [("False", "CatalogUnreachable")] * 2
        writer.written.clear()
        assert sweep(cat, docs, pool, specs, quiet, writer, str) == [] and writer.written == []  # said once

        switch.on()
        duck.attach(reachable).execute("ALTER TABLE lk.t1 ADD COLUMN sneaky INTEGER")  # during the outage
        sweep(cat, docs, pool, specs, quiet, writer, str)
        assert [(condition_of(d, "Ready")["status"], condition_of(d, "Ready")["reason"]) for d in docs] == [
            ("True", "UpToDate"),
            ("True", "UpToDate"),
            ("False", "CatalogUnreachable"),  # its handler's: generation 2 is not applied
        ]
        assert docs[0]["status"]["drift"] == [] and condition_of(docs[0], "Drifted")["status"] == "False"
        assert docs[1]["status"]["drift"] == ["sneaky is in the catalog but not in the manifest"]
        writer.written.clear()
        assert sweep(cat, docs, pool, specs, quiet, writer, str) == []  # and it stays so
    finally:
        switch.off()


def condition_of(doc: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in doc["status"]["conditions"] if c["type"] == type_)


def held_by_the_index(body: dict[str, Any]) -> HeldManifest:
    """The document ``table_manifests`` (the real index handler) holds for an object."""
    index: Any = table_manifests  # kopf's decorator types it for kopf's own call, with every keyword
    indexed = index(namespace="ns", name=body["metadata"]["name"], body=kopf.Body(cast(Any, body)))
    (doc,) = asyncio.run(cast(Coroutine[Any, Any, dict[Any, HeldManifest]], indexed)).values()
    return doc


def test_a_pass_over_the_index_as_it_holds_tables_finds_their_drift(location, data_path, pool) -> None:
    """``table_manifests`` holds each object compactly (``HeldManifest``: spec and status as
    text, without kopf's bookkeeping); a pass reads them as it reads plain documents."""
    cat = catalog_spec(location, data_path)
    reconcile_catalog(cat, pool)
    bodies = {f"t{i}": table_doc(i) for i in range(3)}
    for body in bodies.values():
        reconcile_table(parse_as(TableSpec, body), cat, pool)
        body["status"]["kopf"] = {"lastHandledConfiguration": json.dumps({"spec": body["spec"]}), "progress": {}}
    written: list[str] = []

    def write(doc: Mapping[str, Any], fields: dict[str, Any]) -> bool:
        """The API server's side: the object's new version, which the index then holds."""
        body = bodies[doc["metadata"]["name"]]
        body["status"] = {k: v for k, v in {**body["status"], **fields}.items() if v is not None}
        body["metadata"]["resourceVersion"] = str(int(body["metadata"]["resourceVersion"]) + 1)
        written.append(doc["metadata"]["name"])
        return True

    held = [held_by_the_index(body) for body in bodies.values()]
    assert [d["status"] for d in held] == [
        {k: v for k, v in b["status"].items() if k != "kopf"} for b in bodies.values()
    ]
    assert [parse_as(TableSpec, dict(d)) for d in held] == [parse_as(TableSpec, b) for b in bodies.values()]
    specs, quiet = SpecCache(), QuietTables()
    sweep(cat, held, pool, specs, quiet, write, str)  # the first pass says each is in sync
    duck.attach(location).execute("ALTER TABLE lk.t1 ADD COLUMN sneaky INTEGER")
    written.clear()
    held = [held_by_the_index(body) for body in bodies.values()]
    updates = sweep(cat, held, pool, specs, quiet, write, str)
    assert [u.body["metadata"]["name"] for u in updates] == written == ["t1"]
    assert updates[0].status["drift"] == ["sneaky is in the catalog but not in the manifest"]
    assert [e[1] for e in updates[0].events] == ["Drifted"]
    written.clear()
    held = [held_by_the_index(body) for body in bodies.values()]
    assert sweep(cat, held, pool, specs, quiet, write, str) == [] and written == []  # said once
    reads: list[str] = []

    class Watched(Mapping[str, Any]):
        """A held document that notes each read of its status (decoded from text each time)."""

        def __init__(self, doc: Mapping[str, Any]) -> None:
            self._doc = doc

        def __getitem__(self, key: str) -> Any:
            if key == "status":
                reads.append(self._doc["metadata"]["name"])
            return self._doc[key]

        def __iter__(self) -> Iterator[str]:
            return iter(self._doc)

        def __len__(self) -> int:
            return len(self._doc)

    watched = [Watched(held_by_the_index(body)) for body in bodies.values()]
    assert sweep(cat, watched, pool, specs, quiet, write, str) == [] and written == []
    assert reads == []  # every table quiet: none of their statuses decoded
