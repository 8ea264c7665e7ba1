"""Every job on a PostgreSQL catalog kept in its own metadata schema (DuckDB's
METADATA_SCHEMA): catalog tables and the dynamic inlined-data tables live there, and no job
may look for them anywhere else. DuckDB reads the same rows and rowids after each job."""

from __future__ import annotations

import os
from dataclasses import replace

from ducklake_jobs.job_template import run_operation
from ducklake_operator.catalog import Catalog
from support import duck


def test_every_job_on_a_catalog_in_its_own_schema(pg_location, tmp_path) -> None:
    location = replace(pg_location, schema="lake_meta")
    data = str(tmp_path / "data") + "/"
    Catalog.create(location, data)
    duck.run_workload(
        location,
        ["CREATE TABLE lk.t(id INTEGER, v VARCHAR)"]
        + [f"INSERT INTO lk.t SELECT i, 'v' || i FROM range({k * 100}, {k * 100 + 100}) t(i)" for k in range(3)]
        + [
            "DELETE FROM lk.t WHERE id BETWEEN 100 AND 190",  # a delete file
            "DELETE FROM lk.t WHERE id = 5",  # an inlined file deletion
            "INSERT INTO lk.t VALUES (1000, 'inlined'), (1001, 'gone')",
            "DELETE FROM lk.t WHERE id = 1001",
        ],
    )  # an inlined row deleted
    catalog = Catalog.open(location)
    before = duck.observe_table(location, "t")
    assert len(before["now"]) == 300 - 91 - 1 + 1

    flushed = run_operation(catalog, "flushInlinedData", None, {})
    assert flushed["rowsFlushed"] == 2 and duck.same_as_before(duck.observe_table(location, "t"), before)
    rewritten = run_operation(catalog, "rewriteDeletes", "main.t", {"deleteThreshold": 0.5})
    assert rewritten["filesWritten"] == 1 and duck.same_as_before(duck.observe_table(location, "t"), before)
    compacted = run_operation(catalog, "compact", "main.t", {})
    assert compacted["filesWritten"] == 1 and duck.same_as_before(duck.observe_table(location, "t"), before)

    expired = run_operation(catalog, "expireSnapshots", None, {"retainLast": 1})
    assert expired["expired"] and expired["filesScheduled"]
    cleaned = run_operation(catalog, "cleanupFiles", None, {"olderThan": "0s"})
    assert cleaned["deleted"] and all(p.startswith("main/t/") for p in cleaned["deleted"])
    assert not any(os.path.exists(data + p) for p in cleaned["deleted"])
    open(data + "main/t/stray.parquet", "wb").close()
    assert run_operation(catalog, "deleteOrphanFiles", None, {"olderThan": "0s"})["deleted"] == ["main/t/stray.parquet"]
    assert duck.observe_table(location, "t")["now"] == before["now"]
    duck.run_workload(location, ["INSERT INTO lk.t VALUES (2000, 'after')", "CALL ducklake_merge_adjacent_files('lk')"])
    assert len(duck.observe_table(location, "t")["now"]) == len(before["now"]) + 1
