"""Plans reconciled at once share snapshots through the CommitBatcher, on real catalogs, and
DuckDB reads every table they created, while a DuckDB client writes alongside."""

from __future__ import annotations

import threading

from ducklake_operator.api.v1alpha1.table import TableSpec
from ducklake_operator.catalog import Catalog
from ducklake_operator.catalog.batch import CommitBatcher
from ducklake_operator.use_cases import apply_plan
from support import duck
from support.manifests import parse_as


def table_spec(name: str) -> TableSpec:
    return parse_as(TableSpec, {
        "kind": "DuckLakeTable",
        "metadata": {"name": name, "namespace": "ns", "generation": 1},
        "spec": {"catalogRef": {"name": "lake"}, "name": name,
                 "columns": [{"name": "id", "type": "int64"}, {"name": "v", "type": "varchar"}]},
    })  # fmt: skip


def test_a_storm_of_table_plans_lands_in_few_snapshots(location, data_path) -> None:
    catalog = Catalog.create(location, data_path)
    duck.run_workload(location, ["CREATE TABLE lk.busy (i INTEGER)"])
    batcher = CommitBatcher(catalog.commit)
    errors: list[BaseException] = []
    stop = threading.Event()

    def plan_and_commit(i: int) -> None:
        try:
            apply_plan(catalog, table_spec(f"t{i}"), commit=batcher.commit)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    def duckdb_writer() -> None:  # another client commits meanwhile: conflicts are its own
        con = duck.attach(location, con=duck.connect())
        try:
            while not stop.is_set():
                con.execute("INSERT INTO lk.busy VALUES (1)")
        finally:
            con.close()

    writer = threading.Thread(target=duckdb_writer)
    if location.kind == "postgres":  # a SQLite catalog takes one writer at a time anyway
        writer.start()
    threads = [threading.Thread(target=plan_and_commit, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    stop.set()
    if writer.is_alive():
        writer.join(30)
    assert errors == []
    con = duck.attach(location, con=duck.connect())
    try:
        names = {
            r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = 'lk'").fetchall()
        }
        assert names >= {f"t{i}" for i in range(40)}
        snapshots, created = con.execute(
            "SELECT count(*), sum(len(changes['tables_created'])) FROM ducklake_snapshots('lk') "
            "WHERE changes['tables_created'] IS NOT NULL"
        ).fetchall()[0]
        con.execute("INSERT INTO lk.t7 VALUES (1, 'a')")
        assert con.execute("SELECT * FROM lk.t7").fetchall() == [(1, "a")]
    finally:
        con.close()
    assert created == 41 and snapshots < 40  # every table once (and "busy"), in fewer snapshots than plans
    catalog.close()
