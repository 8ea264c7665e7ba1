"""The catalog state cache follows the catalog, options included: DuckDB's ``set_option``
and the operator's options-only commits write no snapshot, so a cache keyed on the
snapshot id alone would keep planning against the old options (every drift check
``Drifted``, and with ``onDrift: revert`` a re-apply every tick)."""

from __future__ import annotations

from typing import Any

from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.catalog.state_cache import StateCache
from ducklake_operator.controller.catalog_pool import CatalogPool
from ducklake_operator.controller.catalogs.reconciler import reconcile_catalog
from ducklake_operator.controller.tables.reconciler import check_table_drift, reconcile_table
from support import duck
from support.reconcile_specs import catalog_spec, table_spec


def manifests(location: CatalogLocation, data_path: str, table_options: dict[str, Any]) -> tuple[Any, Any]:
    catalog = catalog_spec(location, data_path)
    columns = [{"name": "id", "type": "int64"}]
    return catalog, table_spec("orders", columns, options=table_options, evolution={"onDrift": "revert"})


def test_options_set_by_duckdb_are_seen(catalog: Catalog, location: CatalogLocation) -> None:
    con = duck.attach(location)
    con.execute("CREATE TABLE lk.t(id INTEGER)")
    cache = StateCache(catalog)
    before = cache.state()
    assert cache.state() is before  # nothing changed: the cached state itself
    con.execute("CALL lk.set_option('target_file_size', '1MB')")
    con.execute("CALL lk.set_option('parquet_compression', 'zstd', schema => 'main')")
    con.execute("CALL lk.set_option('target_file_size', '2MB', table_name => 't')")
    after = cache.state()
    assert after.snapshot.snapshot_id == before.snapshot.snapshot_id  # set_option writes no snapshot
    assert after.options["target_file_size"] == "1000000"
    assert after.schemas["main"].options == {"parquet_compression": "zstd"}
    assert after.table("main", "t").options == {"target_file_size": "2000000"}
    assert after == catalog.state()


def test_tables_keep_current_options_across_snapshots(catalog: Catalog, location: CatalogLocation) -> None:
    """A table no change token names still gets its new options when other tables changed."""
    con = duck.attach(location)
    con.execute("CREATE TABLE lk.a(id INTEGER)")
    con.execute("CREATE TABLE lk.b(id INTEGER)")
    cache = StateCache(catalog)
    cache.state()
    con.execute("CALL lk.set_option('target_file_size', '3MB', table_name => 'a')")
    con.execute("INSERT INTO lk.b VALUES (1)")  # a new snapshot that names only b
    assert cache.state() == catalog.state()
    assert cache.state().table("main", "a").options == {"target_file_size": "3000000"}


def test_no_drift_after_an_options_only_apply(location: CatalogLocation, data_path: str) -> None:
    """The controller's pool: after the operator applied a changed option (no snapshot), the
    drift timer plans against the new options and finds nothing to do."""
    pool = CatalogPool(credentials=lambda *_: (location.user, location.password))
    try:
        catalog_spec, table = manifests(location, data_path, {"targetFileSize": "1MB"})
        reconcile_catalog(catalog_spec, pool)
        created = reconcile_table(table, catalog_spec, pool).status["snapshot"]
        assert check_table_drift(table, catalog_spec, pool).status["drift"] == []
        _, changed = manifests(location, data_path, {"targetFileSize": "2MB"})
        reconcile_table(changed, catalog_spec, pool)
        written = Catalog.open(location).state()
        assert written.snapshot.snapshot_id == created  # options only: no snapshot
        assert written.table("main", "orders").options == {"target_file_size": "2000000"}
        drift = check_table_drift(changed, catalog_spec, pool)
        assert drift.status["drift"] == [] and not drift.events  # nothing reverted either
        catalog, _ = pool.catalog(catalog_spec)
        assert pool.state(catalog_spec, catalog) == written
    finally:
        pool.close()


def test_a_refreshed_state_finds_tables_by_name_and_id_as_a_full_read_does(
    catalog: Catalog, location: CatalogLocation
) -> None:
    """The indexes a refresh carries over (not built again from every table) follow renames,
    drops and creations."""
    con = duck.attach(location)
    for name in ("a", "b", "c"):
        con.execute(f"CREATE TABLE lk.{name}(id INTEGER)")
    cache = StateCache(catalog)
    before = cache.state()
    assert before.table("main", "A") is not None and before.table_by_id(before.table("main", "b").table_id)
    renamed_id = before.table("main", "a").table_id
    con.execute("ALTER TABLE lk.a RENAME TO Renamed")
    con.execute("DROP TABLE lk.b")
    con.execute("CREATE TABLE lk.d(id INTEGER)")
    after = cache.state()
    full = catalog.state()
    assert after == full
    for schema, name in [("main", "a"), ("main", "B"), ("main", "renamed"), ("main", "RENAMED"), ("main", "D")]:
        assert after.table(schema, name) == full.table(schema, name), name
    assert after.table("main", "a") is None and after.table("main", "b") is None
    assert after.table_by_id(renamed_id) == full.table("main", "Renamed")
    assert after.table_by_id(before.table("main", "b").table_id) is None
