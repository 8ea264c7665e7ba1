"""A new run's table is looked for in the catalog before anything is launched: a table that
is not there fails the run for good, so a state cached a moment earlier must not decide it.
On a real SQLite catalog, the table created by DuckDB."""

from __future__ import annotations

from pathlib import Path

import pytest

from ducklake_operator.api.v1alpha1.job import JobSpec
from ducklake_operator.catalog import CatalogLocation
from ducklake_operator.controller.catalog_pool import CatalogPool
from ducklake_operator.controller.catalogs.reconciler import reconcile_catalog
from ducklake_operator.controller.launchers.local import LocalLauncher
from ducklake_operator.controller.runs.locks import Leases
from ducklake_operator.controller.runs.run_context import RunContext
from ducklake_operator.controller.runs.state_machine import Runs
from support import duck
from support.manifests import parse_as
from support.reconcile_specs import catalog_spec


@pytest.fixture
def pool():
    p = CatalogPool(credentials=lambda *_: ("", None))
    yield p
    p.close()


def compact(table: str) -> JobSpec:
    doc = {"kind": "DuckLakeJob", "metadata": {"name": "compact-1", "namespace": "ns"},
           "spec": {"catalogRef": {"name": "lake"}, "operation": "compact", "table": table}}  # fmt: skip
    return parse_as(JobSpec, doc)


def test_a_table_created_just_before_its_run_is_found(tmp_path: Path, pool: CatalogPool) -> None:
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "c.sqlite"))
    cat = catalog_spec(location, str(tmp_path / "data") + "/")
    reconcile_catalog(cat, pool)
    catalog, _ = pool.catalog(cat)
    pool.state(cat, catalog)  # checked now: another run, a reconcile
    duck.run_workload(location, ["CREATE TABLE lk.fresh (id BIGINT)"])
    runs = Runs(pool, Leases(lambda: None, lambda *_: False), {"Local": LocalLauncher(lambda *_: "")})
    ctx = RunContext(cat, None, True, None, {"launcher": "Local"})
    # the launch's check; it refused the table as missing when the state read above was under a second old
    assert runs._invalid(compact("main.fresh"), ctx) is None
    assert runs._invalid(compact("main.nothing"), ctx) == "table main.nothing does not exist in catalog lake"
