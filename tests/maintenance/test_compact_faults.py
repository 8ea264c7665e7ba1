"""SIGKILL the compaction before, during and after its commit: the table is consistent every
time (DuckDB reads the same rows), and files that never got committed are orphans that
deleteOrphanFiles removes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import yaml
from support import duck

from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_jobs.housekeeping import delete_orphan_files


@pytest.mark.parametrize("point, committed", [("before_commit", False), ("in_commit", False), ("after_commit", True)])
def test_kill_during_compaction(tmp_path, point: str, committed: bool) -> None:  # type: ignore[no-untyped-def]
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "c.sqlite"))
    data = str(tmp_path / "data") + "/"
    Catalog.create(location, data)
    con = duck.attach(location)
    con.execute("CREATE TABLE lk.t(id INTEGER, v VARCHAR)")
    for k in range(4):
        con.execute(f"INSERT INTO lk.t SELECT i, 'v' || i FROM range({k * 100}, {k * 100 + 100}) t(i)")
    rows = con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall()
    con.close()
    manifest = tmp_path / "catalog.yaml"
    manifest.write_text(yaml.safe_dump({"apiVersion": "ducklake.dev/v1alpha1", "kind": "DuckLakeCatalog", "metadata": {"name": "lake"},
                                        "spec": {"metadata": {"sqlite": {"path": location.path}}, "dataPath": data}}))
    marker = tmp_path / "marker"
    proc = subprocess.Popen([sys.executable, "-m", "ducklake_operator.cli", "run-job", "compact", "main.t", "-f", str(manifest)],
                            env={**os.environ, "DUCKLAKE_FAULT_PAUSE": point, "DUCKLAKE_FAULT_MARKER": str(marker)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while not marker.exists():
        assert proc.poll() is None and time.time() < deadline, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    catalog = Catalog.open(location)
    files = catalog.state().table("main", "t").data_files
    assert len(files) == (1 if committed else 4)
    con = duck.attach(location)
    assert con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall() == rows
    con.close()
    orphans = delete_orphan_files(catalog, older_than="0s")["deleted"]
    assert len(orphans) == (0 if committed else 1)  # the merged file nobody committed
    con = duck.attach(location, con=duck.connect())
    assert con.execute("SELECT rowid, * FROM lk.t ORDER BY rowid").fetchall() == rows
    con.execute("INSERT INTO lk.t VALUES (1000, 'after')")
    con.execute("CALL ducklake_merge_adjacent_files('lk')")
    assert con.execute("SELECT count(*) FROM lk.t").fetchone() == (401,)
