"""The reconcile functions as plain functions: real catalogs (SQLite, PostgreSQL), DuckDB as
the oracle, no Kubernetes (its part is exercised in test_operator_e2e)."""

from __future__ import annotations

from typing import Any

import pytest

from ducklake_operator.api.v1alpha1.catalog import CatalogSpec
from ducklake_operator.api.v1alpha1.schema import SchemaSpec
from ducklake_operator.api.v1alpha1.table import TableSpec
from ducklake_operator.controller.catalog_pool import CatalogPool
from ducklake_operator.controller.catalogs.reconciler import delete_catalog, reconcile_catalog
from ducklake_operator.controller.tables.reconciler import (
    check_table_drift,
    delete_table,
    reconcile_schema,
    reconcile_table,
)
from support import duck, reconcile_specs
from support.manifests import parse_as
from support.pgserver import free_port
from support.reconcile_specs import catalog_spec, conditions

COLUMNS: list[dict[str, Any]] = [
    {"name": "id", "type": "int64", "nullable": False},
    {"name": "amount", "type": "int32"},
]


def table_spec(columns: list[dict[str, Any]] | None = None, generation: int = 1, **spec: Any) -> TableSpec:
    return reconcile_specs.table_spec("orders", columns or COLUMNS, generation, **spec)


def pg_user(name, user_key, pw_key, namespace):
    return ("postgres", None)


@pytest.fixture
def pool():
    p = CatalogPool(credentials=pg_user)
    yield p
    p.close()


def test_catalog_is_created_then_adopted(location, data_path, pool) -> None:
    spec = catalog_spec(location, data_path)
    first = reconcile_catalog(spec, pool)
    assert conditions(first)["Ready"] == ("True", "Created") and first.status["formatVersion"] == "1.0"
    assert first.events[0][1] == "Created" and first.failure is None
    pool.forget(spec)
    again = reconcile_catalog(spec, pool)
    assert conditions(again)["Ready"] == ("True", "Adopted") and not again.events
    assert again.status["currentSnapshot"] == 0


def test_unreachable_catalog_is_temporary_and_keeps_secrets_out(tmp_path, pool) -> None:
    spec = parse_as(
        CatalogSpec,
        {
            "kind": "DuckLakeCatalog",
            "metadata": {"name": "lake", "namespace": "ns"},
            "spec": {
                "metadata": {
                    "postgres": {
                        "host": "127.0.0.1",
                        "port": free_port(),
                        "database": "x",
                        "credentialsSecretRef": {"name": "s"},
                    }
                },
                "dataPath": "/tmp/x/",
            },
        },
    )
    pool.credentials = lambda *a: ("u", "topsecret")
    outcome = reconcile_catalog(spec, pool)
    assert outcome.failure is not None and outcome.failure.temporary and outcome.failure.reason == "CatalogUnreachable"
    assert conditions(outcome)["CatalogReachable"][0] == "False"
    assert "topsecret" not in repr(outcome)


def test_table_waits_for_its_catalog(pool) -> None:
    outcome = reconcile_table(table_spec(), None, pool)
    assert outcome.failure is not None and outcome.failure.reason == "CatalogNotFound"
    assert conditions(outcome)["Ready"] == ("False", "CatalogNotFound")


def test_table_lifecycle(location, data_path, pool) -> None:
    cat = catalog_spec(location, data_path)
    reconcile_catalog(cat, pool)
    created = reconcile_table(table_spec(), cat, pool)
    assert conditions(created)["Ready"] == ("True", "Applied") and created.events[0][1] == "Applied"
    assert created.status["columns"] == [
        {"name": "id", "id": 1, "type": "int64"},
        {"name": "amount", "id": 2, "type": "int32"},
    ]
    assert created.status["lastPlan"]["snapshot"] == 1 and created.status["columnCount"] == 2
    # restart / resync: nothing re-applied, no new snapshot
    again = reconcile_table(table_spec(), cat, pool)
    assert conditions(again)["Ready"] == ("True", "UpToDate") and not again.events and again.status["snapshot"] == 1

    con = duck.attach(location)
    con.execute("INSERT INTO lk.orders SELECT i, i FROM range(50) t(i)")
    evolved = reconcile_table(table_spec(COLUMNS + [{"name": "note", "type": "varchar"}], generation=2), cat, pool)
    assert evolved.status["stats"]["rows"] == 50 and evolved.status["stats"]["files"] == 1
    assert evolved.status["observedGeneration"] == 2 and evolved.status["snapshot"] == 3

    blocked = reconcile_table(table_spec(COLUMNS, generation=3), cat, pool)  # drops note
    assert blocked.failure is None  # permanent until the spec changes: no retry loop
    assert (
        conditions(blocked)["Blocked"] == ("True", "DestructiveChange") and conditions(blocked)["Ready"][0] == "False"
    )
    assert (
        blocked.status["pendingPlan"]["hash"]
        and blocked.status["blockedChanges"][0]["reason"] == "allowDropColumns is false"
    )
    assert blocked.events[0][0] == "Warning"
    approved = table_spec(COLUMNS, generation=4, evolution={"approvedPlan": blocked.status["pendingPlan"]["hash"]})
    assert conditions(reconcile_table(approved, cat, pool))["Ready"] == ("True", "Applied")


def test_drift_is_reported_or_reverted(location, data_path, pool) -> None:
    cat = catalog_spec(location, data_path)
    reconcile_catalog(cat, pool)
    reconcile_table(table_spec(), cat, pool)
    assert conditions(check_table_drift(table_spec(), cat, pool))["Drifted"] == ("False", "InSync")
    con = duck.attach(location)
    con.execute("ALTER TABLE lk.orders ADD COLUMN sneaky INTEGER")
    report = check_table_drift(table_spec(), cat, pool)
    assert conditions(report)["Drifted"] == ("True", "ChangedOutside")
    assert report.status["drift"] == ["sneaky is in the catalog but not in the manifest"]
    revert = table_spec(evolution={"onDrift": "revert", "allowDropColumns": True})
    reverted = check_table_drift(revert, cat, pool)
    assert reverted.events[0][1] == "DriftReverted" and conditions(reverted)["Drifted"][0] == "False"
    assert [r[0] for r in duck.attach(location, con=duck.connect()).execute("DESCRIBE lk.orders").fetchall()] == [
        "id",
        "amount",
    ]


def test_deletion_policies(location, data_path, pool) -> None:
    cat = catalog_spec(location, data_path)
    reconcile_catalog(cat, pool)
    reconcile_table(table_spec(), cat, pool)
    assert delete_table(table_spec(), cat, pool).events[0][1] == "Retained"
    con = duck.attach(location)
    assert con.execute("SELECT count(*) FROM lk.orders").fetchone() == (0,)
    dropped = delete_table(table_spec(deletionPolicy="Delete"), cat, pool)
    assert dropped.events[0][1] == "Dropped"
    assert duck.attach(location, con=duck.connect()).execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'lk' AND table_name = 'orders'"
    ).fetchone() == (0,)
    assert delete_table(table_spec(deletionPolicy="Delete"), None, pool).events[0][1] == "CatalogGone"


def test_catalog_deletion_policies(location, data_path, pool, monkeypatch) -> None:
    """Retain leaves the lake; Delete waits for the schemas and tables that use the catalog,
    then deletes every file the catalog refers to (live, time-travel, scheduled) and drops
    its metadata; files no row refers to stay."""
    import os

    import sqlalchemy as sa

    from ducklake_operator.catalog import Catalog, drop
    from ducklake_operator.errors import CatalogNotFound

    reconcile_catalog(catalog_spec(location, data_path), pool)
    duck.run_workload(
        location,
        [
            "CREATE TABLE lk.t(id INTEGER, v VARCHAR)",
            "INSERT INTO lk.t SELECT i, 'v' || i FROM range(100) t(i)",
            "INSERT INTO lk.t SELECT i, 'v' || i FROM range(100, 200) t(i)",
            "DELETE FROM lk.t WHERE id % 3 = 0",  # a delete file
            "INSERT INTO lk.t VALUES (1000, 'inlined')",
            "CALL ducklake_rewrite_data_files('lk', 't', delete_threshold => 0.1)",
            "CALL ducklake_expire_snapshots('lk', versions => [2, 3])",
        ],
    )  # files scheduled for deletion
    orphan = os.path.join(data_path, "stray.parquet")
    open(orphan, "wb").close()

    def files():
        return sorted(os.path.relpath(os.path.join(d, f), data_path) for d, _, fs in os.walk(data_path) for f in fs)  # noqa: E731

    lake = files()
    assert len(lake) >= 5

    assert delete_catalog(catalog_spec(location, data_path), pool, []).events[0][1] == "Retained"
    shared = delete_catalog(catalog_spec(location, data_path, deletionPolicy="Delete"), pool, [], ["other/lake"])
    assert shared.failure is None and shared.events[0][:2] == ("Warning", "LakeShared") and files() == lake
    waiting = delete_catalog(catalog_spec(location, data_path, deletionPolicy="Delete"), pool, ["DuckLakeTable/orders"])
    assert (
        waiting.failure is not None and waiting.failure.temporary and "DuckLakeTable/orders" in waiting.failure.message
    )
    assert files() == lake
    reader = duck.attach(location, con=duck.connect())
    assert reader.execute("SELECT count(*) FROM lk.t").fetchone() == (134,)
    if location.kind == "postgres":  # a client still attached holds the tables: refused before deleting anything
        monkeypatch.setattr(drop, "LOCK_TIMEOUT", "1s")
        held = delete_catalog(catalog_spec(location, data_path, deletionPolicy="Delete"), pool, [])
        assert held.failure is not None and held.failure.temporary and "nothing was deleted" in held.failure.message
        assert files() == lake
        assert reader.execute("SELECT count(*) FROM lk.t").fetchone() == (134,)
    reader.close()

    deleted = delete_catalog(catalog_spec(location, data_path, deletionPolicy="Delete"), pool, [])
    assert deleted.failure is None and deleted.events[0][1] == "Deleted", deleted.events
    assert files() == ["stray.parquet"]
    with pytest.raises(CatalogNotFound):
        Catalog.open(location)
    if location.kind == "postgres":
        engine = sa.create_engine(location.sqlalchemy_url())
        with engine.connect() as conn:
            assert [n for n in sa.inspect(conn).get_table_names() if n.startswith("ducklake")] == []
        engine.dispose()
    else:
        assert not os.path.exists(location.path)
    assert (
        delete_catalog(catalog_spec(location, data_path, deletionPolicy="Delete"), pool, []).events[0][1]
        == "AlreadyGone"
    )


def test_schema_reconcile(location, data_path, pool) -> None:
    cat = catalog_spec(location, data_path)
    reconcile_catalog(cat, pool)
    spec = parse_as(
        SchemaSpec,
        {
            "kind": "DuckLakeSchema",
            "metadata": {"name": "sales", "namespace": "ns", "generation": 1},
            "spec": {"catalogRef": {"name": "lake"}, "name": "sales", "comment": "c"},
        },
    )
    outcome = reconcile_schema(spec, cat, pool)
    assert conditions(outcome)["Ready"] == ("True", "Applied") and outcome.status["schemaId"] == 1


def test_resync_of_many_tables_reuses_the_cached_state(location, data_path, pool) -> None:
    cat = catalog_spec(location, data_path)
    reconcile_catalog(cat, pool)
    specs = [
        parse_as(
            TableSpec,
            {
                "kind": "DuckLakeTable",
                "metadata": {"name": f"t{i}", "namespace": "ns"},
                "spec": {"catalogRef": {"name": "lake"}, "name": f"t{i}", "columns": COLUMNS},
            },
        )
        for i in range(40)
    ]
    for s in specs:
        reconcile_table(s, cat, pool)
    before = pool.queries
    for s in specs:  # e.g. the operator restarted: every table is resumed
        assert conditions(reconcile_table(s, cat, pool))["Ready"] == ("True", "UpToDate")
    per_table = (pool.queries - before) / len(specs)
    assert per_table < 2, per_table  # one snapshot check each (plus one full read for all)


def test_lake_identity(tmp_path) -> None:
    """Two DuckLakeCatalog resources are the same lake when they name the same metadata database."""
    from dataclasses import replace

    from ducklake_operator.catalog import CatalogLocation
    from ducklake_operator.use_cases import lake_identity

    sqlite = CatalogLocation(kind="sqlite", path=str(tmp_path / "c.sqlite"))
    same = CatalogLocation(kind="sqlite", path=str(tmp_path / "x" / ".." / "c.sqlite"))
    assert lake_identity(catalog_spec(sqlite, "/d/")) == lake_identity(catalog_spec(same, "/other/"))
    pg = CatalogLocation(kind="postgres", host="db", port=5432, database="lake")
    assert lake_identity(catalog_spec(pg, "/d/")) != lake_identity(catalog_spec(replace(pg, database="lake2"), "/d/"))
    assert lake_identity(catalog_spec(pg, "/d/")) != lake_identity(catalog_spec(sqlite, "/d/"))
