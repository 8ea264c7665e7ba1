"""A small table that gives each maintenance operation work, for tests that run every one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ducklake_operator.catalog import Catalog, CatalogLocation
from support import duck

INSERTS = [f"INSERT INTO lk.t SELECT i, 'v' || (i % 3) FROM range({k * 100}, {k * 100 + 100}) t(i)" for k in range(3)]
# each operation: the statements after CREATE TABLE lk.t(id INTEGER, v VARCHAR), its table,
# its parameters, and whether it commits written files
CASES: dict[str, tuple[list[str], str | None, dict[str, Any], bool]] = {
    "compact": (INSERTS, "main.t", {}, True),
    "rewriteDeletes": ([*INSERTS, "DELETE FROM lk.t WHERE id >= 10"], "main.t", {"deleteThreshold": 0.5}, True),
    "flushInlinedData": (["INSERT INTO lk.t VALUES (1, 'a')"], None, {}, False),
    "repartition": ([*INSERTS, "ALTER TABLE lk.t SET PARTITIONED BY (v)"], "main.t", {}, True),
    "rewriteColumnType": (INSERTS, "main.t", {"column": "id", "type": "varchar"}, True),
    "ingest": (INSERTS, "main.t", {"format": "csv"}, True),
    "expireSnapshots": (INSERTS, None, {"retainLast": 1}, False),
    "cleanupFiles": (INSERTS, None, {"olderThan": "0s"}, False),
    "deleteOrphanFiles": (INSERTS, None, {"olderThan": "0s"}, False),
}


def prepare(location: CatalogLocation, root: Path, operation: str) -> tuple[str | None, dict[str, Any], bool]:
    """A catalog at ``location`` (data under ``root``) ready for ``operation``: its table,
    parameters, and whether it writes files."""
    setup, table, params, writes = CASES[operation]
    Catalog.create(location, str(root / "data") + "/")
    duck.run_workload(location, ["CREATE TABLE lk.t(id INTEGER, v VARCHAR)", *setup])
    if operation == "ingest":
        (root / "in.csv").write_text("id,v\n1,a\n2,b\n")
        params = {**params, "path": str(root / "in.csv")}
    return table, params, writes
