"""Concurrent writers on one PostgreSQL catalog: two DuckDB processes and the library."""

from __future__ import annotations

import json
import threading
import time

import pytest

from ducklake_operator.catalog import Catalog, CommitResult
from ducklake_operator.catalog.changes_made import parse_changes
from ducklake_operator.errors import CommitConflict
from ducklake_operator.model.changes import CreateTable, DropTable, PartitionColumn, SetPartitioning
from ducklake_operator.model.types import Field, parse_type
from support import duck, duck_inserter


def test_library_commits_alongside_two_inserting_duckdb_processes(pg_location, data_path) -> None:
    catalog = Catalog.create(pg_location, data_path)
    con = duck.attach(pg_location)
    con.execute("CREATE TABLE lk.events(worker INTEGER, iteration INTEGER, r BIGINT)")
    con.close()

    workers = [duck_inserter.start(pg_location.duckdb_attach_target(), "events", 120, w) for w in (1, 2)]
    results: list[CommitResult] = []
    failures: list[CommitConflict] = []

    def library_writer() -> None:
        deadline = time.time() + 60
        while catalog.snapshot().snapshot_id < 4 and time.time() < deadline:  # wait for the inserters
            time.sleep(0.02)
        for i in range(50):
            if i == 25:  # halfway, until DuckDB commits again: on a loaded machine its processes can starve
                waited = time.time() + 60
                while catalog.snapshot().snapshot_id == results[-1].snapshot_id and time.time() < waited:
                    time.sleep(0.05)
            for change in (
                lambda i=i: CreateTable("main", f"tmp_{i}", (Field("a", parse_type("int32")),)),
                lambda i=i: DropTable(catalog.state().table("main", f"tmp_{i}").table_id, f"main.tmp_{i}"),
            ):
                time.sleep(0.03)  # a reconciler, not a tight loop: lets DuckDB's commits interleave
                try:
                    results.append(catalog.commit([change()], message=f"concurrency step {i}"))
                except CommitConflict as exc:  # allowed by the rules, but must name a snapshot
                    failures.append(exc)

    thread = threading.Thread(target=library_writer)
    thread.start()
    outputs = [w.communicate(timeout=600) for w in workers]
    thread.join(timeout=600)

    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    inserted = sum(r["committed"] for r in reports)
    # DuckDB's own failures may only be exhausted retries, never a wrong result.
    for r in reports:
        assert all("retry" in e.lower() or "conflict" in e.lower() for e in r["errors"]), r["errors"]
    # Inserts into another table never conflict with creating/dropping tables: all 100 land.
    assert not failures, [str(f) for f in failures]
    assert len(results) == 100 and all(r.snapshot_id is not None for r in results)
    print(
        f"library attempts: max {max(r.attempts for r in results)}, retried {sum(r.attempts > 1 for r in results)}; "
        f"duckdb rows {inserted}, duckdb errors {sum(len(r['errors']) for r in reports)}"
    )

    con = duck.attach(pg_location, con=duck.connect())
    assert con.execute("SELECT count(*) FROM lk.events").fetchone() == (inserted,)
    assert inserted >= 120 * 43 // 4  # the bulk of the inserts went through (exhausted retries are allowed)
    snapshots = catalog.snapshots()
    ids = [s.snapshot_id for s in snapshots]
    assert ids == list(range(len(ids)))  # no gaps, one change row per snapshot
    for s in snapshots[1:]:
        parse_changes(s.changes_made)  # every change set is one DuckDB can parse
    assert sum(1 for s in snapshots if s.commit_message and s.commit_message.startswith("concurrency step")) == 100
    assert not [t for (_, t) in catalog.state().tables if t.startswith("tmp_")]
    # The writers really interleaved: DuckDB committed between our first and last commit.
    ours = {r.snapshot_id for r in results if r.snapshot_id is not None}
    print("SEQ", "".join("L" if s in ours else "d" for s in ids))
    assert any(min(ours) < s < max(ours) and s not in ours for s in ids)
    assert con.execute("SELECT count(*) FROM ducklake_snapshots('lk')").fetchone() == (len(ids),)


def test_conflicting_commit_names_the_snapshot(pg_location, data_path) -> None:
    catalog = Catalog.create(pg_location, data_path)
    catalog.commit([CreateTable("main", "t", (Field("a", parse_type("int32")),))])
    state = catalog.state()
    con = duck.attach(pg_location)
    con.execute("DROP TABLE lk.t")  # someone drops it after we planned
    dropped_at = catalog.snapshot().snapshot_id
    with pytest.raises(Exception) as err:
        catalog.commit(
            [DropTable(state.table("main", "t").table_id, "main.t")], base_snapshot=state.snapshot.snapshot_id
        )
    assert "no longer exists" in str(err.value) or str(dropped_at) in str(err.value)
    # A create racing another create of the same name conflicts by DuckDB's rules.
    con.execute("CREATE TABLE lk.n(a INTEGER)")
    with pytest.raises(Exception, match="already exists"):
        catalog.commit(
            [CreateTable("main", "n", (Field("a", parse_type("int32")),))], base_snapshot=state.snapshot.snapshot_id
        )


def test_late_changes_are_made_with_the_next_snapshot_held(pg_location, data_path) -> None:
    """``LateChanges``: the function runs inside the commit once snapshot latest+1 is
    reserved, given the latest snapshot (DuckDB altered the table after the caller's base);
    a DuckDB insert started meanwhile waits for the commit (then DuckDB retries it: it lands
    after), and DuckDB's conflict rules apply only from the latest snapshot: the same change
    as a list, with the old base, conflicts with DuckDB's ALTER."""
    catalog = Catalog.create(pg_location, data_path)
    con = duck.attach(pg_location)
    con.execute("CREATE TABLE lk.t(a INTEGER, b INTEGER)")
    base = catalog.snapshot().snapshot_id
    con.execute("ALTER TABLE lk.t ADD COLUMN c INTEGER")  # after the base
    con.execute("INSERT INTO lk.t VALUES (1, 1, 1)")
    latest = catalog.snapshot().snapshot_id
    table_id = catalog.table("main", "t").table_id
    change = SetPartitioning(table_id, "main.t", (PartitionColumn("a"),))
    with pytest.raises(CommitConflict):
        catalog.commit([change], base_snapshot=base)

    seen: list[int] = []
    blocked: list[bool] = []

    outcome: list[str] = []

    def insert() -> None:
        other = duck.attach(pg_location, con=duck.connect())
        try:
            other.execute("INSERT INTO lk.t VALUES (2, 2, 2)")
            outcome.append("committed")
        except Exception as exc:  # noqa: BLE001 - what DuckDB decides once our commit is in
            outcome.append(" ".join(str(exc).split()))
        other.close()

    def late(at: int) -> list[SetPartitioning]:
        seen.append(at)
        thread = threading.Thread(target=insert)
        thread.start()
        thread.join(timeout=1.0)
        blocked.append(thread.is_alive())  # its commit waits for ours
        threads.append(thread)
        return [change]

    threads: list[threading.Thread] = []
    result = catalog.commit(late, base_snapshot=base, extra_info=lambda: json.dumps({"seen": seen}))
    for thread in threads:
        thread.join(timeout=60)
    assert seen == [latest] and blocked == [True] and result.snapshot_id == latest + 1
    snapshots = {s.snapshot_id: s for s in catalog.snapshots()}
    assert json.loads(snapshots[latest + 1].commit_extra_info or "") == {"seen": [latest]}  # made after the changes
    # DuckDB retried its insert after our commit, and its rules refuse an insert beside a
    # concurrent ALTER: it failed on the conflict, having waited, and nothing of it landed
    assert len(outcome) == 1 and "conflict" in outcome[0].lower(), outcome
    assert max(snapshots) == latest + 1
    assert con.execute("SELECT count(*) FROM lk.t").fetchone() == (1,)
    con.close()
