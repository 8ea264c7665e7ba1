"""Every maintenance operation at least once through pods on the test node: compact,
rewriteDeletes, flushInlinedData, expireSnapshots, cleanupFiles, deleteOrphanFiles,
repartition (after a DuckLakeTable's partitionBy changed), rewriteColumnType (the run a
DuckLakeTable's type change starts), ingest (its input on S3) and a run a
DuckLakeMaintenancePolicy starts, each on a PostgreSQL catalog and an S3 lake, launched as
batch Jobs (Spark inside the driver's pod, but for the repartition's two executor pods and
the chart's default for the type change, one executor pod).

The runs are independent (other tables, other catalogs), so they run side by side: the
module's fixture prepares every lake, starts every run at once and waits for them all; each
test then checks its run through DuckDB (rows, files), the bucket's listing and the run's
status."""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ducklake_operator.catalog import CatalogLocation
from support.kube_namespace import Kube
from support.manifests import manifest, table
from support.operator_process import condition, is_ready, wait_for
from support.pod_env import BUCKET, PodEnv
from support.pod_runs import SMALL, explain, runs_to_end, s3_files, s3_url

# Spark inside the driver's pod: one JVM per run on a node of 2 CPUs (a Python worker per CPU beside it)
IN_DRIVER = {"launcher": "Job", "driver": {"cores": "100m", "memory": "768m"}, "executor": {"instances": 0}}
TWO_EXECUTORS = {"launcher": "Job", "driver": SMALL, "executor": {"instances": 2, **SMALL}}
NO_INLINING = {"dataInliningRowLimit": 0}
CODED = [{"name": "id", "type": "int64"}, {"name": "code", "type": "varchar"}]
POLICY = "tidy"


def run(name: str, catalog: str, operation: str, table_name: str | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"catalogRef": {"name": catalog}, "operation": operation, "spark": IN_DRIVER, **spec}
    if table_name:
        body["table"] = f"main.{table_name}"
    return manifest("DuckLakeJob", name, body)


def sql(pods: PodEnv, location: CatalogLocation, *statements: str) -> list[list[tuple[Any, ...]]]:
    """Statements through DuckDB on the lake (attached as ``lk``), in one session; their rows."""
    con = pods.duckdb(location)
    try:
        return [con.execute(s).fetchall() for s in statements]
    finally:
        con.close()


def observe(pods: PodEnv, location: CatalogLocation, table_name: str) -> dict[str, Any]:
    """What DuckDB reads of the table now and at every snapshot of the lake (rowids too), and
    the lake's snapshots. Sorted here: DuckDB 1.5.5 sorting an earlier snapshot's rows of a
    file rewritten since (ducklake_rewrite_data_files, rewriteDeletes) returned a wrong value
    in a row (id 0 read as 256 or 65536 under ORDER BY; right without it)."""
    con = pods.duckdb(location)
    try:
        versions = [r[0] for r in con.execute("SELECT snapshot_id FROM lk.snapshots() ORDER BY 1").fetchall()]
        query = f"SELECT rowid, * FROM lk.{table_name}"
        history = {}
        for v in versions:
            try:
                history[v] = sorted(con.execute(f"{query} AT (VERSION => {v})").fetchall())
            except duckdb.Error:  # a snapshot before the table existed
                continue
        return {"now": sorted(con.execute(query).fetchall()), "history": history, "snapshots": versions}
    finally:
        con.close()


def live_files(pods: PodEnv, location: CatalogLocation, table_name: str) -> list[tuple[str, str | None]]:
    """The table's live data files and their delete files, as bucket keys."""
    (found,) = sql(pods, location, f"SELECT data_file, delete_file FROM ducklake_list_files('lk', '{table_name}')")
    return sorted((key(d), key(x) if x else None) for d, x in found)


def key(url: str) -> str:
    assert url.startswith(f"s3://{BUCKET}/"), url
    return url[len(BUCKET) + 6 :]


def parquet(keys: dict[str, int]) -> set[str]:
    return {k for k in keys if k.endswith(".parquet")}


def put(pods: PodEnv, object_key: str, data: bytes) -> None:
    with pods.s3fs().open_output_stream(f"{BUCKET}/{object_key}") as out:
        out.write(data)


def parquet_bytes(columns: dict[str, pa.Array]) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table(columns), sink)
    return sink.getvalue()


@dataclass
class Lakes:
    """The lakes as they were before the runs, and the runs as they ended."""

    pods: PodEnv
    kube: Kube
    locations: dict[str, CatalogLocation] = field(default_factory=dict)
    before: dict[str, Any] = field(default_factory=dict)
    runs: dict[str, str] = field(default_factory=dict)  # what each test checks -> the DuckLakeJob's name
    ended: dict[str, dict[str, Any]] = field(default_factory=dict)  # DuckLakeJob -> its last status
    pods_seen: dict[str, set[str]] = field(default_factory=dict)  # DuckLakeJob -> the names of its pods
    seconds: float = 0.0  # from the first run applied to the last one ended

    def status(self, what: str) -> dict[str, Any]:
        name = self.runs[what]
        status = self.ended[name]
        assert status["state"] == "Succeeded", explain(self.kube, name, status)
        assert status["launched"]["kind"] == "Job", status["launched"]
        return status

    def lake(self, name: str, tables: dict[str, list[dict[str, Any]] | None], **catalog: Any) -> CatalogLocation:
        """A Ready catalog with Ready tables (``None``: the default columns)."""
        location = self.pods.lake(self.kube, name, **catalog)
        self.kube.apply(*(table(t, name, columns=columns) for t, columns in tables.items()))
        wait_for("tables Ready", lambda: all(is_ready(self.kube.get("dlt", t)) for t in tables), timeout=60)
        self.locations[name] = location
        return location

    def get(self, kind: str, name: str) -> dict[str, Any]:
        found = self.kube.get(kind, name)
        assert found is not None, f"{kind} {name} not found"
        return found

    def prefix(self, catalog: str) -> str:
        """The catalog's data path, as a key prefix of the bucket."""
        return f"{self.kube.namespace}/{catalog}/"


def inserts(table_name: str, files: int, rows: int, value: Callable[[int], str] = str) -> list[str]:
    """``files`` INSERTs (a file each) of ``rows`` rows: ids in sequence, the second column ``value(k)``."""
    return [
        f"INSERT INTO lk.{table_name} SELECT i, {value(k)} FROM range({k * rows}, {(k + 1) * rows}) t(i)"
        for k in range(files)
    ]


def prepare(lakes: Lakes) -> None:
    """Every lake and table as its run finds it, with what each looked like before."""
    pods, kube = lakes.pods, lakes.kube
    # one catalog for the table operations, each on a table of its own
    lake = lakes.lake("lake", {"orders": None, "deletes": None, "parts": None, "landing": None, "coded": CODED,
                               "events": None}, options=NO_INLINING)  # fmt: skip
    sql(
        pods,
        lake,
        *inserts("orders", 12, 100),
        *inserts("deletes", 4, 100),
        "DELETE FROM lk.deletes WHERE amount < 2 AND id % 2 = 0",  # half of the first two files' rows
        *inserts("parts", 4, 100, value=lambda k: f"(i + {k}) % 3"),
        "INSERT INTO lk.coded SELECT i, (i * 7)::VARCHAR FROM range(100) t(i)",
        *inserts("events", 5, 20),
    )
    for t in ("orders", "deletes", "parts", "events"):
        lakes.before[t] = observe(pods, lake, t)
    lakes.before["deletes files"] = live_files(pods, lake, "deletes")

    # ingest's input on S3, beside the lakes: JSON lines and Parquet
    landing = f"{kube.namespace}/landing-in/"
    put(pods, landing + "a.jsonl", "".join(f'{{"id": {i}, "amount": {i % 5}}}\n' for i in range(30)).encode())
    put(pods, landing + "b.parquet", parquet_bytes({"id": pa.array(range(100, 120), pa.int64()),
                                                    "amount": pa.array([7] * 20, pa.int32())}))  # fmt: skip
    lakes.before["landing input"] = s3_files(pods, landing)

    # inlined rows: in the catalog database, no file on S3
    inlined = lakes.lake("inlined", {"small": None}, options={"dataInliningRowLimit": 1000})
    sql(pods, inlined, *inserts("small", 3, 10))
    lakes.before["small"] = observe(pods, inlined, "small")

    # snapshots to expire, and a file only they read: all its rows were deleted since
    expiring = lakes.lake("expiring", {"aging": None}, options=NO_INLINING)
    sql(pods, expiring, *inserts("aging", 3, 10), "DELETE FROM lk.aging WHERE amount = 0",
        "DELETE FROM lk.aging WHERE id = 15")  # fmt: skip
    (ended,) = sql(pods, expiring, "SELECT path FROM __ducklake_metadata_lk.ducklake_data_file WHERE end_snapshot "
                   "IS NOT NULL UNION ALL SELECT path FROM __ducklake_metadata_lk.ducklake_delete_file WHERE "
                   "end_snapshot IS NOT NULL")  # fmt: skip
    lakes.before["ended"] = sorted(p for (p,) in ended)
    lakes.before["aging"] = observe(pods, expiring, "aging")

    # files scheduled for deletion: DuckDB's own compaction schedules its inputs at once
    cleaning = lakes.lake("cleaning", {"cleaned": None}, options=NO_INLINING)
    sql(pods, cleaning, *inserts("cleaned", 3, 10), "CALL ducklake_merge_adjacent_files('lk')")
    (scheduled,) = sql(pods, cleaning, "SELECT path FROM __ducklake_metadata_lk.ducklake_files_scheduled_for_deletion")
    lakes.before["scheduled"] = sorted(p for (p,) in scheduled)  # relative to the data path
    lakes.before["cleaned"] = observe(pods, cleaning, "cleaned")

    # orphans: Parquet files under the data path that no catalog row names, and a file that is no Parquet
    orphans = lakes.lake("orphans", {"kept": None}, options=NO_INLINING)
    sql(pods, orphans, *inserts("kept", 2, 10))
    stray = parquet_bytes({"x": pa.array([1, 2, 3])})
    for name in ("main/kept/orphan-1.parquet", "stray.parquet"):
        put(pods, lakes.prefix("orphans") + name, stray)
    put(pods, lakes.prefix("orphans") + "notes.txt", b"not a lake file")
    lakes.before["kept"] = observe(pods, orphans, "kept")

    for catalog in ("lake", "inlined", "expiring", "cleaning", "orphans"):
        lakes.before[f"s3 {catalog}"] = s3_files(pods, lakes.prefix(catalog))

    # the DuckLakeTable changes: a new partitioning (repartition moves the files) and a type
    # change under typeChanges: rewrite (the operator starts its rewrite as a run)
    kube.apply(table("parts", "lake", partitionBy=[{"column": "amount"}]),
               table("coded", "lake", columns=[CODED[0], {"name": "code", "type": "int64"}],
                     evolution={"typeChanges": "rewrite"}))  # fmt: skip
    wait_for("the new partitioning applied", lambda: is_ready(parts := lakes.get("dlt", "parts"))
             and parts["status"].get("observedGeneration") == 2)  # fmt: skip


def launch(lakes: Lakes) -> None:
    """Every run at once, then wait for all of them to end, watching their pods."""
    kube = lakes.kube
    runs = [
        run("compact", "lake", "compact", "orders"),
        run("rewrite-deletes", "lake", "rewriteDeletes", "deletes", params={"deleteThreshold": 0.3}),
        run("repartition", "lake", "repartition", "parts", spark=TWO_EXECUTORS),
        run("ingest", "lake", "ingest", "landing", params={"path": s3_url(f"{kube.namespace}/landing-in/")}),
        run("flush", "inlined", "flushInlinedData", "small"),
        run("expire", "expiring", "expireSnapshots", params={"retainLast": 1}),
        run("cleanup", "cleaning", "cleanupFiles", params={"olderThan": "0s"}),
        run("orphans", "orphans", "deleteOrphanFiles", params={"olderThan": "0s"}),
    ]
    trigger = {"schedule": "0 3 * * *", "whenSmallFilesAbove": 3}  # due at once: 5 small files
    policy = manifest("DuckLakeMaintenancePolicy", POLICY, {"catalogRef": {"name": "lake"}, "tables": ["main.events"],
                                                            "spark": IN_DRIVER, "compaction": trigger})  # fmt: skip
    started = time.monotonic()
    kube.apply(*runs, policy)
    lakes.runs = {r["spec"]["operation"]: r["metadata"]["name"] for r in runs}
    lakes.runs["rewriteColumnType"] = wait_for(
        "the type change's run", lambda: ((kube.get("dlt", "coded") or {}).get("status") or {}).get("heavyJob"),
        timeout=120,
    )["name"]  # fmt: skip
    lakes.runs["policy"] = wait_for("the policy's run", lambda: [
        j["metadata"]["name"] for j in kube.list("dlj") if j["metadata"].get("labels", {}).get("ducklake.dev/policy")
        == POLICY], timeout=120)[0]  # fmt: skip
    lakes.ended, lakes.pods_seen = runs_to_end(kube, list(lakes.runs.values()), timeout=900)
    lakes.seconds = time.monotonic() - started
    print(
        f"{len(lakes.runs)} runs side by side on the node: {lakes.seconds:.1f} s from the first applied to the last ended"
    )


@pytest.fixture(scope="module")
def lakes(pods: PodEnv) -> Lakes:
    lakes = Lakes(pods, pods.namespace())
    prepare(lakes)
    launch(lakes)
    return lakes


def executors(lakes: Lakes, what: str) -> set[str]:
    return {p for p in lakes.pods_seen[lakes.runs[what]] if "-exec-" in p}


def report(status: dict[str, Any]) -> dict[str, Any]:
    """The job program's report, as the run's status carries it."""
    return dict(status["jobReport"]["report"])


def assert_same_rows(lakes: Lakes, catalog: str, table_name: str) -> None:
    """The table reads the same rows (rowids too) now and at every snapshot it had before."""
    before = lakes.before[table_name]
    after = observe(lakes.pods, lakes.locations[catalog], table_name)
    changed = {v: (len(r), len(after["history"].get(v) or [])) for v, r in before["history"].items()
               if after["history"].get(v) != r}  # fmt: skip
    now = [(b, a) for b, a in zip(before["now"], after["now"], strict=False) if a != b][:3]
    assert after["now"] == before["now"] and not changed, (
        f"{table_name}: {len(before['now'])} rows before, {len(after['now'])} after (first changed: {now}); "
        f"snapshots read otherwise (rows before, after): {changed}"
    )


def directory(keys: list[str]) -> str:
    (found,) = {k.rsplit("/", 1)[0] + "/" for k in keys}
    return found


def test_compact(lakes: Lakes) -> None:
    status = lakes.status("compact")
    assert (status["filesRead"], status["filesWritten"], status["rowsWritten"]) == (12, 1, 1200)
    assert status["ranOn"] == "spark" and status["committedSnapshot"] and not executors(lakes, "compact")
    assert_same_rows(lakes, "lake", "orders")
    ((written, deletes),) = live_files(lakes.pods, lakes.locations["lake"], "orders")
    # the inputs stay on S3 for the snapshots that read them (cleanupFiles deletes them once expired)
    table_dir = directory([written])
    inputs = {k for k in parquet(lakes.before["s3 lake"]) if k.startswith(table_dir)}
    assert len(inputs) == 12 and deletes is None
    assert parquet(s3_files(lakes.pods, table_dir)) == inputs | {written}


def test_rewrite_deletes(lakes: Lakes) -> None:
    status = lakes.status("rewriteDeletes")
    assert status["rowsWritten"] == 100  # what is left of the two files half deleted
    assert_same_rows(lakes, "lake", "deletes")
    before, after = lakes.before["deletes files"], live_files(lakes.pods, lakes.locations["lake"], "deletes")
    assert len([d for d in before if d[1]]) == 2 and not [d for d in after if d[1]]
    kept = [d for d in before if not d[1]]
    assert set(kept) <= set(after) and len(after) == len(kept) + status["filesWritten"]
    assert {d for d, _ in after} <= set(s3_files(lakes.pods, directory([d for d, _ in after])))


def test_repartition_after_the_table_changed_its_partitioning(lakes: Lakes) -> None:
    status = lakes.status("repartition")
    assert status["filesRead"] == 4 and status["rowsWritten"] == 400
    assert len(executors(lakes, "repartition")) >= 2, lakes.pods_seen[lakes.runs["repartition"]]
    assert_same_rows(lakes, "lake", "parts")
    after = live_files(lakes.pods, lakes.locations["lake"], "parts")
    keys = [d for d, _ in after]
    # every live file in its partition's hive directory, on S3
    assert {k.split("/amount=")[1].split("/")[0] for k in keys} == {"0", "1", "2"}, keys
    assert set(keys) <= set(s3_files(lakes.pods, lakes.prefix("lake")))


def test_ingest_of_files_on_s3(lakes: Lakes) -> None:
    status = lakes.status("ingest")
    assert status["rowsWritten"] == 50 and status["committedSnapshot"]
    (got,) = sql(lakes.pods, lakes.locations["lake"], "SELECT id, amount FROM lk.landing ORDER BY id")
    assert got == [(i, i % 5) for i in range(30)] + [(i, 7) for i in range(100, 120)]
    assert s3_files(lakes.pods, f"{lakes.kube.namespace}/landing-in/") == lakes.before["landing input"]


def test_rewrite_column_type_started_by_the_table(lakes: Lakes) -> None:
    """The chart's default settings for the run the operator starts: one executor pod."""
    status = lakes.status("rewriteColumnType")
    assert status["rowsWritten"] == 100 and len(executors(lakes, "rewriteColumnType")) >= 1
    coded = wait_for("the table Ready", lambda: is_ready(t := lakes.get("dlt", "coded")) and t, timeout=120)
    assert {c["name"]: c["type"] for c in coded["status"]["columns"]}["code"] == "int64"
    run_ = lakes.get("dlj", lakes.runs["rewriteColumnType"])
    assert [o["uid"] for o in run_["metadata"]["ownerReferences"]] == [coded["metadata"]["uid"]]
    types, values = sql(lakes.pods, lakes.locations["lake"], "SELECT data_type FROM duckdb_columns() WHERE "
                        "database_name = 'lk' AND table_name = 'coded' AND column_name = 'code'",
                        "SELECT count(*), sum(code) FROM lk.coded")  # fmt: skip
    assert types == [("BIGINT",)] and values == [(100, sum(i * 7 for i in range(100)))]


def test_a_run_started_by_a_maintenance_policy(lakes: Lakes) -> None:
    status = lakes.status("policy")
    assert (status["filesRead"], status["filesWritten"]) == (5, 1)
    run_ = lakes.get("dlj", lakes.runs["policy"])
    assert "small files > 3" in run_["metadata"]["annotations"]["ducklake.dev/reason"]
    assert_same_rows(lakes, "lake", "events")
    assert len(live_files(lakes.pods, lakes.locations["lake"], "events")) == 1
    last = wait_for("the policy's last run", lambda: lakes.get("dlmp", POLICY)["status"]["operations"]["compact"]
                    .get("lastRun"))  # fmt: skip
    assert last["name"] == lakes.runs["policy"] and condition(lakes.get("dlmp", POLICY), "Ready")["status"] == "True"


def test_flush_inlined_data(lakes: Lakes) -> None:
    status = lakes.status("flushInlinedData")
    assert report(status)["rowsFlushed"] == 30 and status["filesWritten"] >= 1, status
    assert not parquet(lakes.before["s3 inlined"])  # before: rows in the catalog database only
    assert_same_rows(lakes, "inlined", "small")
    keys = {d for d, _ in live_files(lakes.pods, lakes.locations["inlined"], "small")}
    assert keys and parquet(s3_files(lakes.pods, lakes.prefix("inlined"))) == keys


def test_expire_snapshots(lakes: Lakes) -> None:
    status = lakes.status("expireSnapshots")
    before = lakes.before["aging"]
    *expired, latest = before["snapshots"]
    said = report(status)
    assert said["expired"] == expired and said["filesScheduled"] == len(lakes.before["ended"]) == 1, said
    snapshots, scheduled = sql(lakes.pods, lakes.locations["expiring"], "SELECT snapshot_id FROM lk.snapshots()",
                               "SELECT path FROM __ducklake_metadata_lk.ducklake_files_scheduled_for_deletion")  # fmt: skip
    assert snapshots == [(latest,)] and sorted(p.rsplit("/", 1)[-1] for (p,) in scheduled) == lakes.before["ended"]
    assert observe(lakes.pods, lakes.locations["expiring"], "aging")["now"] == before["now"]
    # scheduled for deletion, not deleted: cleanupFiles does that
    assert s3_files(lakes.pods, lakes.prefix("expiring")) == lakes.before["s3 expiring"]


def test_cleanup_files(lakes: Lakes) -> None:
    status = lakes.status("cleanupFiles")
    scheduled = lakes.before["scheduled"]
    assert len(scheduled) == 3 and sorted(report(status)["deleted"]) == scheduled, report(status)
    gone = {lakes.prefix("cleaning") + p for p in scheduled}
    assert gone <= lakes.before["s3 cleaning"].keys()
    assert s3_files(lakes.pods, lakes.prefix("cleaning")).keys() == lakes.before["s3 cleaning"].keys() - gone
    (left,) = sql(lakes.pods, lakes.locations["cleaning"],
                  "SELECT count(*) FROM __ducklake_metadata_lk.ducklake_files_scheduled_for_deletion")  # fmt: skip
    assert left == [(0,)]
    assert_same_rows(lakes, "cleaning", "cleaned")


def test_delete_orphan_files(lakes: Lakes) -> None:
    status = lakes.status("deleteOrphanFiles")
    assert sorted(report(status)["deleted"]) == ["main/kept/orphan-1.parquet", "stray.parquet"]
    orphans = {lakes.prefix("orphans") + n for n in ("main/kept/orphan-1.parquet", "stray.parquet")}
    after = s3_files(lakes.pods, lakes.prefix("orphans"))
    assert after.keys() == lakes.before["s3 orphans"].keys() - orphans
    assert lakes.prefix("orphans") + "notes.txt" in after  # no Parquet file: not the lake's
    assert_same_rows(lakes, "orphans", "kept")
