"""rewriteColumnType through DuckDB 1.5.5, on SQLite and PostgreSQL catalogs.

Where DuckDB can change the type itself (a widening it allows, int32 -> float64), the job is
compared with DuckDB's ALTER COLUMN TYPE on a twin lake: the same rows, rowids and types now
and at every earlier snapshot, the same column rows, schema versions and inlined tables. Where
it cannot (varchar -> int64, a struct field varchar -> date), DuckDB reads the converted values
now and the old ones at every earlier snapshot. DuckDB keeps writing, merging and flushing
afterwards. Bad input fails with a sentence and changes nothing; rows DuckDB writes while the
job runs are never lost; a job killed before, during or after its commit leaves a consistent
table and only orphans."""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from ducklake_jobs import retype_task
from ducklake_jobs import rewrite_column_type as job
from ducklake_jobs.housekeeping import delete_orphan_files
from ducklake_jobs.job_template import run_operation
from ducklake_jobs.task_runners import Runner, run_in_process, run_on_spark
from ducklake_operator import cli, storage
from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.errors import CommitConflict, DuckLakeError, JobFailed
from ducklake_operator.model.types import parse_type
from support import duck, duck_inserter
from support.dump import dump
from support.job_lakes import Lake, new_lake
from support.job_program import killed_at, run_job_command

DAY_FORMATS = ("%Y/%m/%d", "%y-%m-%d", "%Y%m%d")  # s.a of the three inserts, in Doris's formats
WORKLOAD = [
    "CREATE TABLE lk.t(id INTEGER, n INTEGER DEFAULT 7, v VARCHAR, s STRUCT(a VARCHAR, b INTEGER))",
    *[
        f"INSERT INTO lk.t SELECT i, i % 50, ' ' || (i * 3)::VARCHAR, "
        f"{{'a': strftime(DATE '2024-01-01' + (i % 60)::INTEGER, '{fmt}'), 'b': i}} "
        f"FROM range({k * 100}, {k * 100 + 100}) t(i)"
        for k, fmt in enumerate(DAY_FORMATS)
    ],
    "DELETE FROM lk.t WHERE id BETWEEN 10 AND 40",  # a delete file
    "DELETE FROM lk.t WHERE id = 150",  # an inlined file deletion
    "UPDATE lk.t SET v = '999' WHERE id = 250",
    "INSERT INTO lk.t VALUES (1000, 1, '42', NULL), (1001, NULL, NULL, {'a': NULL, 'b': 1})",  # inlined rows
    "DELETE FROM lk.t WHERE id = 1001",  # an inlined row deleted
    "ALTER TABLE lk.t ADD COLUMN extra INTEGER DEFAULT 5",  # files written before it lack it
    "INSERT INTO lk.t SELECT i, i % 50, i::VARCHAR, {'a': '2024-03-01', 'b': i}, i FROM range(2000, 2040) t(i)",
]
# what DuckDB keeps doing on the table afterwards (each side of a twin the same)
AFTERWARDS = [
    "INSERT INTO lk.t (id, n, v) VALUES (5000, 3, 77)",
    "INSERT INTO lk.t (id, n, v) SELECT i, 2, i FROM range(6000, 6100) t(i)",
    "DELETE FROM lk.t WHERE id IN (60, 6050)",
    "CALL ducklake_merge_adjacent_files('lk')",
    "CALL ducklake_flush_inlined_data('lk')",
]


def build(location: CatalogLocation, data_path: str) -> None:
    new_lake(location, data_path, WORKLOAD)


def observe(location: CatalogLocation, agg: str = "count(*), min(id), max(id)") -> dict[str, Any]:
    """Rows and column types now and at every snapshot since the table's creation (snapshot 1),
    and aggregates DuckDB may answer from statistics."""
    return duck.observe_typed(location, agg, since=1)


def same_history(after: dict[str, Any], before: dict[str, Any]) -> None:
    for v, seen in before["history"].items():
        assert after["history"][v] == seen, f"snapshot {v} reads differently"


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_rewrite_matches_duckdbs_alter_column_type(
    make_location: Callable[[str], CatalogLocation], tmp_path: Path, kind: str
) -> None:
    """int32 -> float64 (DuckDB widens it in place; a rewrite under the DuckLake spec's rules)."""
    theirs, ours = make_location(kind), make_location(kind)
    build(theirs, str(tmp_path / "a") + "/")
    build(ours, str(tmp_path / "b") + "/")
    before = observe(ours)
    duck.run_workload(theirs, ["ALTER TABLE lk.t ALTER COLUMN n TYPE DOUBLE"])
    report = run_operation(Catalog.open(ours), "rewriteColumnType", "main.t", {"column": "n", "type": "float64"})
    assert report["committedSnapshot"] is not None and report["inlinedRowsRewritten"] == 2  # 1000 and the update

    agg = "count(*), min(n), max(n), sum(n), count(n)"
    a, b = observe(theirs, agg), observe(ours, agg)
    assert b == a
    assert ("n", "DOUBLE") in b["now"][1]
    same_history(b, before)
    x, y = dump(theirs), dump(ours)
    for table in ("ducklake_column", "ducklake_schema_versions", "ducklake_inlined_data_tables"):
        assert x[table] == y[table], table
    latest = lambda rows: max(rows, key=lambda r: r[0])  # noqa: E731  (dump sorts by text)
    assert latest(x["ducklake_snapshot"])[2:4] == latest(y["ducklake_snapshot"])[2:4]  # schema version, catalog ids
    assert "altered_table:1" in latest(y["ducklake_snapshot_changes"])[1]

    duck.run_workload(theirs, AFTERWARDS)
    duck.run_workload(ours, AFTERWARDS)
    a, b = observe(theirs, agg), observe(ours, agg)
    assert a["now"] == b["now"] and a["agg"] == b["agg"]
    same_history(b, before)


def converted(rows: list[tuple[Any, ...]], v: bool, day: bool) -> list[tuple[Any, ...]]:
    """The workload's rows (rowid, id, n, v, s, extra) as the conversions make them."""

    def to_date(text: str | None) -> datetime.date | None:
        if text is None:
            return None
        fmt = next(f for f in ("%Y/%m/%d", "%y-%m-%d", "%Y%m%d", "%Y-%m-%d") if _parses(text, f))
        return datetime.datetime.strptime(text, fmt).date()

    out = []
    for rowid, id_, n, text, s, extra in rows:
        value = int(text) if v and text is not None else text
        struct = dict(s, a=to_date(s["a"])) if day and s is not None else s
        out.append((rowid, id_, n, value, struct, extra))
    return out


def _parses(text: str, fmt: str) -> bool:
    try:
        datetime.datetime.strptime(text, fmt)
    except ValueError:
        return False
    return len(text) == len(datetime.datetime.strptime(text, fmt).strftime(fmt))


@pytest.mark.parametrize(
    "kind, runner",
    [("sqlite", run_in_process), ("postgres", run_in_process), ("sqlite", run_on_spark)],
    ids=["sqlite", "postgres", "sqlite-spark"],
)
def test_new_type_now_old_values_before(
    make_location: Callable[[str], CatalogLocation], tmp_path: Path, kind: str, runner: Runner
) -> None:
    location = make_location(kind)
    build(location, str(tmp_path / "data") + "/")
    catalog = Catalog.open(location)
    before = observe(location)
    first = job.rewrite_column_type(catalog, "main", "t", column=("v",), new_type=parse_type("int64"), runner=runner)
    assert first["ranOn"] == ("spark" if runner is run_on_spark else "in-process")
    middle = observe(location)
    job.rewrite_column_type(catalog, "main", "t", column=("s", "a"), new_type=parse_type("date"), runner=runner)
    agg = "count(*), min(v), max(v), sum(v), min(s.a), max(s.a), count(s.a)"
    after = observe(location, agg)

    expected = converted(before["now"][0], v=True, day=True)
    assert after["now"][0] == expected  # same rowids, converted values
    assert ("v", "BIGINT") in after["now"][1] and ("s", "STRUCT(a DATE, b INTEGER)") in after["now"][1]
    values, days = [r[3] for r in expected if r[3] is not None], [r[4]["a"] for r in expected if r[4] and r[4]["a"]]
    assert after["agg"] == (len(expected), min(values), max(values), sum(values), min(days), max(days), len(days))
    same_history(after, before)
    assert middle["now"][0] == converted(before["now"][0], v=True, day=False)
    same_history(after, middle)

    duck.run_workload(location, AFTERWARDS)
    con = duck.attach(location, con=duck.connect())
    assert con.execute("SELECT count(*), sum(v) FILTER (WHERE id >= 5000) FROM lk.t").fetchone() == (
        len(expected) + 101 - 2,
        77 + sum(range(6000, 6100)) - 6050,
    )
    con.close()
    same_history(observe(location), after)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_several_columns_match_duckdbs_alters_in_one_transaction(
    make_location: Callable[[str], CatalogLocation], tmp_path: Path, kind: str
) -> None:
    """int32 -> float64 and int32 -> int64 in one job: the catalog rows of DuckDB's two ALTER
    COLUMN TYPEs in one transaction (one snapshot, one schema version), the same rows since."""
    theirs, ours = make_location(kind), make_location(kind)
    build(theirs, str(tmp_path / "a") + "/")
    build(ours, str(tmp_path / "b") + "/")
    before = observe(ours)
    duck.run_workload(
        theirs, ["BEGIN", "ALTER TABLE lk.t ALTER COLUMN n TYPE DOUBLE", "ALTER TABLE lk.t ALTER COLUMN id TYPE BIGINT", "COMMIT"]
    )  # fmt: skip
    with closing(Catalog.open(ours)) as catalog:
        report = run_operation(catalog, "rewriteColumnType", "main.t", {"columns": {"n": "float64", "id": "int64"}})
    assert [c["column"] for c in report["columns"]] == ["n", "id"]
    assert report["committedSnapshot"] == max(before["history"]) + 1
    agg = "count(*), min(n), max(n), sum(n), sum(id)"
    a, b = observe(theirs, agg), observe(ours, agg)
    assert b == a and ("n", "DOUBLE") in b["now"][1] and ("id", "BIGINT") in b["now"][1]
    same_history(b, before)
    x, y = dump(theirs), dump(ours)
    for table in ("ducklake_column", "ducklake_schema_versions", "ducklake_inlined_data_tables"):
        assert x[table] == y[table], table
    duck.run_workload(theirs, AFTERWARDS)
    duck.run_workload(ours, AFTERWARDS)
    a, b = observe(theirs, agg), observe(ours, agg)
    assert a["now"] == b["now"] and a["agg"] == b["agg"]


@pytest.mark.parametrize(
    "kind, runner",
    [("sqlite", run_in_process), ("postgres", run_in_process), ("sqlite", run_on_spark)],
    ids=["sqlite", "postgres", "sqlite-spark"],
)
def test_several_columns_in_one_pass_and_one_snapshot(
    make_location: Callable[[str], CatalogLocation], tmp_path: Path, kind: str, runner: Runner
) -> None:
    """v varchar -> int64 and the struct field s.a varchar -> date together: one snapshot, whose
    rows are those the two jobs one after the other make, every earlier snapshot as before."""
    location = make_location(kind)
    build(location, str(tmp_path / "data") + "/")
    before = observe(location)
    with closing(Catalog.open(location)) as catalog:
        report = job.rewrite_column_type(
            catalog, "main", "t", columns=((("v",), parse_type("int64")), (("s", "a"), parse_type("date"))), runner=runner
        )  # fmt: skip
    assert report["committedSnapshot"] == max(before["history"]) + 1 and report["filesRead"] == 4
    after = observe(location)
    assert after["now"][0] == converted(before["now"][0], v=True, day=True)
    assert ("v", "BIGINT") in after["now"][1] and ("s", "STRUCT(a DATE, b INTEGER)") in after["now"][1]
    same_history(after, before)


def test_several_columns_failing_are_named_each(lake: Lake) -> None:
    snapshot, files = lake.snapshot(), lake.files()
    with closing(Catalog.open(lake.location)) as catalog, pytest.raises(JobFailed) as failed:
        run_operation(catalog, "rewriteColumnType", "main.t", {"columns": {"v": "int32", "id": "date"}})
    message = str(failed.value)
    assert message.startswith(
        "rewriteColumnType main.t: 2 value(s) of v do not convert from varchar to int32: 'abc' (row id 50), '6.5' "
        "(row id 60); 80 value(s) of id do not convert from int32 to date: '0' (row id 0), '1' (row id 1)"
    ) and message.endswith(
        "; nothing was committed and the job's files were deleted (onCastError: null writes NULL instead)"
    )
    assert lake.snapshot() == snapshot and lake.files() == files
    with closing(Catalog.open(lake.location)) as catalog:
        report = run_operation(catalog, "rewriteColumnType", "main.t", {"columns": {"id": "varchar", "v": "int32"}, "onCastError": "null"})  # fmt: skip
    assert report["valuesNulled"] == 2 and report["valuesNulledByColumn"] == {"id": 0, "v": 2}
    got = {r[1]: r[2] for r in lake.rows()}
    assert got["50"] is None and got["51"] == 7


# ------------------------------------------------------------------ bad input


@pytest.fixture
def lake(location: CatalogLocation, tmp_path: Path) -> Lake:
    return new_lake(
        location,
        str(tmp_path / "data") + "/",
        [
            "CREATE TABLE lk.t(id INTEGER, v VARCHAR, l VARCHAR[], p INTEGER)",
            "INSERT INTO lk.t SELECT i, i::VARCHAR, ['1'], 0 FROM range(50) t(i)",
            "INSERT INTO lk.t VALUES (50, 'abc', NULL, 0), (51, '7', NULL, 0)",
            "INSERT INTO lk.t SELECT i, CASE WHEN i = 60 THEN '6.5' ELSE i::VARCHAR END, NULL, 0 FROM range(52, 80) t(i)",
            "ALTER TABLE lk.t SET PARTITIONED BY (p)",
        ],
    )


@pytest.mark.parametrize(
    "params, message",
    [
        ({"column": "v", "type": "boolean"}, "varchar → boolean is not a conversion a rewrite can do"),
        ({"column": "id", "type": "int16"}, "int32 → int16 is not a conversion a rewrite can do"),
        ({"column": "l.element", "type": "int32"}, "only top-level columns and struct fields"),
        ({"column": "p", "type": "varchar"}, "the table is partitioned by it"),
        ({"column": "nope", "type": "int32"}, "main.t has no column nope"),
    ],
    ids=["outside-the-list", "narrowing", "list-element", "partition-key", "no-such-column"],
)
def test_what_no_rewrite_can_do_is_refused(lake: Lake, params: dict[str, str], message: str) -> None:
    snapshot, files = lake.snapshot(), lake.files()
    with closing(Catalog.open(lake.location)) as catalog:
        with pytest.raises(DuckLakeError, match=message):
            run_operation(catalog, "rewriteColumnType", "main.t", params)
    assert lake.snapshot() == snapshot and lake.files() == files


def test_values_that_do_not_convert_fail_the_job_and_change_nothing(
    lake: Lake, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One output file per input file: the first file converts and is written, the second and
    the inlined rows do not; the written file is deleted with the rest."""
    duck.run_workload(lake.location, ["CALL lk.set_option('target_file_size', '1KB', table_name => 't')"])
    snapshot, files, rows = lake.snapshot(), lake.files(), lake.rows()
    stored: list[str] = []
    store = storage.store

    def spy(local: str, path: str) -> None:
        stored.append(path)
        store(local, path)

    monkeypatch.setattr(storage, "store", spy)
    with closing(Catalog.open(lake.location)) as catalog:
        with pytest.raises(JobFailed) as failed:
            run_operation(catalog, "rewriteColumnType", "main.t", {"column": "v", "type": "int32"})
    message = str(failed.value)
    assert "2 value(s) of v do not convert from varchar to int32: 'abc' (row id 50), '6.5' (row id 60)" in message
    assert "nothing was committed and the job's files were deleted" in message and "\n" not in message
    assert lake.snapshot() == snapshot and lake.files() == files and lake.rows() == rows
    assert len(stored) == 1 and not os.path.exists(stored[0])


def test_on_cast_error_null_writes_null_and_counts(lake: Lake) -> None:
    rows = lake.rows()
    with closing(Catalog.open(lake.location)) as catalog:
        report = run_operation(
            catalog, "rewriteColumnType", "main.t", {"column": "v", "type": "int32", "onCastError": "null"}
        )
    assert report["valuesNulled"] == 2 and report["rowsWritten"] == len(rows)
    got = {r[1]: r[2] for r in lake.rows()}
    assert got[50] is None and got[60] is None and got[51] == 7 and got[79] == 79


def test_row_ids_by_position_where_they_run_on_embedded_where_rows_were_deleted(numbers: Lake) -> None:
    """A group of files whose row ids follow on with none deleted writes no row id column: its
    output takes them by position (row_id_start), as a merge does; a group with a deleted row
    embeds them. DuckDB reads the same row ids either way."""
    duck.run_workload(
        numbers.location,
        ["CALL lk.set_option('target_file_size', '1KB', table_name => 't')", "DELETE FROM lk.t WHERE i = 1 AND r = 7"],
    )
    before = numbers.rows()
    with closing(Catalog.open(numbers.location)) as catalog:
        run_operation(catalog, "rewriteColumnType", "main.t", {"column": "r", "type": "int64"})
        table = catalog.state().table("main", "t")
    assert table is not None
    assert numbers.rows() == before  # same row ids and values (int64 now)
    live = sorted((f for f in table.data_files if f.end_snapshot is None), key=lambda f: f.row_id_start or -1)
    embedded = {}
    for f in live:
        (local,) = Path(numbers.data_path).rglob(os.path.basename(f.path))
        embedded[f.row_id_start] = "_ducklake_internal_row_id" in pq.ParquetFile(local).schema_arrow.names
    assert embedded == {None: True, 0: False, 200: False}


def test_dry_run_plans_and_writes_nothing(lake: Lake) -> None:
    snapshot, files = lake.snapshot(), lake.files()
    with closing(Catalog.open(lake.location)) as catalog:
        report = run_operation(catalog, "rewriteColumnType", "main.t", {"column": "v", "type": "int64", "dryRun": True})
    assert report["plan"]["columns"] == [{"column": "v", "from": "varchar", "to": "int64"}]
    assert report["filesRead"] == 2 and report["inlinedRowsRead"] == 2 and report["committedSnapshot"] is None
    assert lake.snapshot() == snapshot and lake.files() == files


def test_cli_needs_column_and_type(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run-job", "rewriteColumnType", "main.t", "-p", "type=int64", "-f", "/nonexistent.yaml"]) == 1
    assert "-p.column: is required" in capsys.readouterr().err
    assert cli.main(["run-job", "rewriteColumnType", "main.t", "-p", "column=v", "-p", "type=int65", "-f", "x"]) == 1
    assert "-p.type: 'int65' is not a DuckLake type; did you mean int64?" in capsys.readouterr().err


# ------------------------------------------------------------------ DuckDB writing meanwhile


@pytest.fixture
def numbers(location: CatalogLocation, tmp_path: Path) -> Lake:
    """main.t(w, i, r): r int32 holds values any type on the way to float64 takes."""
    return new_lake(
        location,
        str(tmp_path / "data") + "/",
        ["CREATE TABLE lk.t(w INTEGER, i INTEGER, r INTEGER)"]
        + [f"INSERT INTO lk.t SELECT 0, {k}, r FROM range(100) t(r)" for k in range(3)],
    )


def test_rows_inserted_while_rewriting_are_rewritten_too(numbers: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    con = duck.attach(numbers.location)
    original, inserted = retype_task.retype_files, list[bool]()

    def retype_then_insert(task: retype_task.RetypeTask) -> retype_task.RetypeOutput:
        out = original(task)
        if not inserted:  # lands while the job writes: a file and inlined rows, in the old type
            con.execute("INSERT INTO lk.t SELECT 1, 0, r FROM range(50) t(r)")
            con.execute("INSERT INTO lk.t VALUES (1, 1, 7), (1, 1, 8)")
            inserted.append(True)
        return out

    monkeypatch.setattr(job, "retype_files", retype_then_insert)
    with closing(Catalog.open(numbers.location)) as catalog:
        report = run_operation(catalog, "rewriteColumnType", "main.t", {"column": "r", "type": "float64"})
    assert report["catchUpRounds"] == 1 and report["rowsWritten"] == 352
    con.close()
    con = duck.attach(numbers.location, con=duck.connect())
    assert con.execute("SELECT count(*), sum(r), typeof(any_value(r)) FROM lk.t").fetchone() == (
        352,
        3 * 4950 + 1225 + 15,
        "DOUBLE",
    )


def test_a_commit_refused_for_new_rows_catches_up(numbers: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    """An insert that lands after the job's last look, before its commit: the commit is
    refused, the job rewrites the new rows and commits again."""
    con = duck.attach(numbers.location)
    original, calls = job._catch_up, list[bool]()

    def catch_up_then_insert(*args: Any) -> None:
        original(*args)
        calls.append(True)
        if len(calls) == 1:
            con.execute("INSERT INTO lk.t SELECT 2, 0, r FROM range(40) t(r)")

    monkeypatch.setattr(job, "_catch_up", catch_up_then_insert)
    with closing(Catalog.open(numbers.location)) as catalog:
        report = run_operation(catalog, "rewriteColumnType", "main.t", {"column": "r", "type": "float64"})
    assert len(calls) == 2 and report["catchUpRounds"] == 1 and report["rowsWritten"] == 340
    assert con.execute("SELECT count(*) FROM lk.t WHERE w = 2").fetchone() == (40,)
    con.close()


def test_a_deletion_while_rewriting_makes_the_job_plan_again(numbers: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    con = duck.attach(numbers.location)
    original, written = retype_task.retype_files, list[str]()

    def retype_then_delete(task: retype_task.RetypeTask) -> retype_task.RetypeOutput:
        out = original(task)
        written.append(task.output)
        if len(written) == 1:
            con.execute("DELETE FROM lk.t WHERE i = 1 AND r < 10")
        return out

    monkeypatch.setattr(job, "retype_files", retype_then_delete)
    with closing(Catalog.open(numbers.location)) as catalog:
        with pytest.raises(CommitConflict, match="deleted or updated after snapshot"):
            job.rewrite_column_type(catalog, "main", "t", column=("r",), new_type=parse_type("float64"))
        assert not any(os.path.exists(p) for p in written)  # its files went
        report = run_operation(catalog, "rewriteColumnType", "main.t", {"column": "r", "type": "float64"})
    assert report["rowsWritten"] == 290
    assert con.execute("SELECT count(*), typeof(any_value(r)) FROM lk.t").fetchone() == (290, "DOUBLE")
    con.close()


def test_a_concurrent_duckdb_writer_loses_no_row(numbers: Lake, tmp_path: Path) -> None:
    """A DuckDB process inserting in a loop (files and inlined rows) while jobs change r's
    type back and forth: every job commits (the last inserts are caught up inside the
    commit, DuckDB waiting; with catch-up rounds only, a writer that never pauses overtook
    every job), and every insert DuckDB says committed is in the table afterwards (the
    others failed on a conflict with a type change, as with DuckDB's own ALTER)."""
    stop = tmp_path / "stop"  # the writer inserts until the jobs are done, however long they take
    writer = duck_inserter.start(numbers.location.duckdb_attach_target(), "t", 100_000, 9, stop_file=str(stop))
    jobs = rounds = 0
    try:
        with closing(duck.attach(numbers.location, con=duck.connect())) as watch:
            duck_inserter.wait_until_writing(writer, watch, "t", 9)
        with closing(Catalog.open(numbers.location)) as catalog:
            # at least 4 jobs, and until one caught up with rows inserted while it ran (quick
            # jobs may all fall between two inserts)
            while writer.poll() is None and (jobs < 4 or rounds == 0) and jobs < 40:
                for new_type in ("varchar", "int64"):
                    report = run_operation(catalog, "rewriteColumnType", "main.t", {"column": "r", "type": new_type})
                    rounds += report["catchUpRounds"]
                    jobs += 1
    finally:
        stop.touch()
        out, _ = writer.communicate(timeout=300)
    committed = json.loads(out)["committed"]
    con = duck.attach(numbers.location, con=duck.connect())
    assert con.execute("SELECT count(*), typeof(any_value(r)) FROM lk.t WHERE w = 9").fetchone() == (
        committed,
        "BIGINT",
    )
    assert con.execute("SELECT count(*), sum(r) FROM lk.t WHERE w = 0").fetchone() == (300, 3 * 4950)
    con.close()
    assert jobs >= 4 and committed > 0 and rounds > 0  # the writer was inserting all along


# ------------------------------------------------------------------ killed


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("point, committed", [("before_commit", False), ("in_commit", False), ("after_commit", True)])
def test_kill_during_the_job(make_location, tmp_path: Path, kind: str, point: str, committed: bool) -> None:
    location = make_location(kind)
    lake = new_lake(
        location,
        str(tmp_path / "data") + "/",
        [
            "CREATE TABLE lk.t(id INTEGER, v VARCHAR)",
            "INSERT INTO lk.t SELECT i, i::VARCHAR FROM range(100) t(i)",
            "INSERT INTO lk.t SELECT i, i::VARCHAR FROM range(100, 200) t(i)",
            "INSERT INTO lk.t VALUES (1000, '1000')",
        ],
    )
    rows = lake.rows()
    args = ("rewriteColumnType", "main.t", "--no-spark", "-p", "column=v", "-p", "type=int64")
    killed_at(point, run_job_command(lake.manifest(), str(tmp_path), *args), str(tmp_path))

    expected = [(rowid, i, int(v)) for rowid, i, v in rows] if committed else rows
    assert lake.rows() == expected
    with closing(Catalog.open(location)) as catalog:
        orphans = delete_orphan_files(catalog, older_than="0s")["deleted"]
    assert len(orphans) == (0 if committed else 2)  # a file per group and one of the inlined row
    assert lake.rows() == expected
    duck.run_workload(
        location,
        [
            f"INSERT INTO lk.t VALUES (2000, {'5' if committed else chr(39) + '5' + chr(39)})",
            "CALL ducklake_flush_inlined_data('lk')",
            "CALL ducklake_merge_adjacent_files('lk')",
        ],
    )
    assert len(lake.rows()) == len(rows) + 1
