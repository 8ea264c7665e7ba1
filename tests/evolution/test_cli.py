"""The ``ducklake`` CLI end to end on the embedded default (a copy of examples/)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest
import yaml

from ducklake_operator.controller.launchers.local import _live_groups

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


def ducklake(*args: str, cwd: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ducklake_operator.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


@pytest.fixture
def workdir(tmp_path) -> str:
    shutil.copytree(os.path.join(ROOT, "examples"), tmp_path / "examples")
    return str(tmp_path)


def test_plan_apply_status_and_exit_codes(workdir: str) -> None:
    plan = ducklake("plan", "-f", "examples/", cwd=workdir)
    assert plan.returncode == 0, plan.stderr
    assert "will be created" in plan.stdout and "+ create table sales.orders" in plan.stdout
    assert not os.path.exists(os.path.join(workdir, "demo"))  # plan writes nothing
    early = ducklake("sql", "-f", "examples/catalog.yaml", "SELECT 1", cwd=workdir)  # before the catalog exists
    assert early.returncode == 1 and "ducklake apply" in early.stderr and "Traceback" not in early.stderr
    assert not os.path.exists(os.path.join(workdir, "demo"))

    applied = ducklake("apply", "-f", "examples/", cwd=workdir)
    assert applied.returncode == 0, applied.stderr
    assert "committed snapshot 2" in applied.stdout
    again = ducklake("apply", "-f", "examples/", cwd=workdir)
    assert again.returncode == 0 and "committed" not in again.stdout and again.stdout.count("no changes") == 2

    sql = ducklake(
        "sql",
        "-f",
        "examples/catalog.yaml",
        "INSERT INTO lake.sales.orders (id, amount) VALUES (1, 2)",
        "SELECT count(*) AS n FROM lake.sales.orders",
        cwd=workdir,
    )
    assert sql.returncode == 0, sql.stderr

    evolved = [
        "-f",
        "examples/catalog.yaml",
        "-f",
        "examples/sales-schema.yaml",
        "-f",
        "examples/evolved/orders-table.yaml",
    ]
    out = json.loads(ducklake("plan", "-o", "json", *evolved, cwd=workdir).stdout)
    changes = out[0]["plans"][1]["changes"]
    assert changes == [
        "~ rename status → state",
        "~ promote amount int32 → int64",
        "+ add field customer.email varchar",
        "+ add column note varchar default n/a",
    ]
    assert any("before this promotion fail queries filtering on amount" in n for n in out[0]["plans"][1]["notes"])
    assert ducklake("apply", *evolved, cwd=workdir).returncode == 0
    status = ducklake("status", *evolved, cwd=workdir)
    assert status.returncode == 0 and "drift" not in status.stdout and "8  email  varchar" in status.stdout

    # a destructive edit is blocked: exit 2, nothing applied
    path = os.path.join(workdir, "examples/evolved/orders-table.yaml")
    doc = yaml.safe_load(open(path))
    doc["spec"]["columns"] = [c for c in doc["spec"]["columns"] if c["name"] != "note"]
    yaml.safe_dump(doc, open(path, "w"))
    blocked = ducklake("apply", *evolved, cwd=workdir)
    assert blocked.returncode == 2 and "drop column note (blocked: allowDropColumns is false)" in blocked.stdout
    assert "approvedPlan" in blocked.stdout
    # and status shows the drift between manifest and catalog
    assert "note is in the catalog but not in the manifest" in ducklake("status", *evolved, cwd=workdir).stdout


LOADED_EXTENSIONS = (
    "SELECT string_agg(extension_name, ',' ORDER BY extension_name) AS loaded FROM duckdb_extensions() "
    "WHERE loaded AND install_mode <> 'STATICALLY_LINKED'"
)


def test_sql_loads_only_what_the_catalog_needs_and_sql_errors_are_one_message(workdir: str) -> None:
    assert ducklake("apply", "-f", "examples/", cwd=workdir).returncode == 0
    loaded = ducklake("sql", "-f", "examples/catalog.yaml", LOADED_EXTENSIONS, cwd=workdir)
    assert loaded.returncode == 0, loaded.stderr
    assert "│ ducklake,sqlite_scanner │" in loaded.stdout  # no postgres_scanner, no httpfs
    wrong = ducklake("sql", "-f", "examples/catalog.yaml", "SELECT * FROM lake.sales.nope", cwd=workdir)
    assert wrong.returncode == 1 and wrong.stdout == ""
    assert wrong.stderr.startswith("error: DuckDB: Catalog Error: Table with name nope does not exist!")
    assert "Traceback" not in wrong.stderr


def test_errors_exit_1_with_field_paths(workdir: str) -> None:
    path = os.path.join(workdir, "examples/orders-table.yaml")
    doc = yaml.safe_load(open(path))
    doc["spec"]["columns"][1]["type"] = "int65"
    yaml.safe_dump(doc, open(path, "w"))
    result = ducklake("plan", "-f", "examples/", cwd=workdir)
    assert result.returncode == 1
    assert "spec.columns[1].type: 'int65' is not a DuckLake type; did you mean int64?" in result.stderr
    assert ducklake("plan", "-f", "nope/", cwd=workdir).returncode == 1


def test_unreachable_postgres_catalog_is_exit_1_without_secrets(workdir: str) -> None:
    from support.pgserver import free_port

    doc = {
        "apiVersion": "ducklake.dev/v1alpha1",
        "kind": "DuckLakeCatalog",
        "metadata": {"name": "pg"},
        "spec": {
            "metadata": {
                "postgres": {
                    "host": "127.0.0.1",
                    "port": free_port(),
                    "database": "x",
                    "credentialsSecretRef": {"name": "lake-pg"},
                }
            },
            "dataPath": "/tmp/x/",
        },
    }
    with open(os.path.join(workdir, "pg.yaml"), "w") as fh:
        yaml.safe_dump(doc, fh)
    result = ducklake("apply", "-f", "pg.yaml", cwd=workdir, env={"DUCKLAKE_SECRET_LAKE_PG_PASSWORD": "hunter2"})
    assert result.returncode == 1 and "cannot reach the catalog" in result.stderr and "hunter2" not in result.stderr


def write_postgres_catalog(workdir: str, pg_server, database: str) -> None:
    """examples/catalog.yaml on ``database`` (metadata schema lakemeta), user from the environment."""
    doc = {
        "apiVersion": "ducklake.dev/v1alpha1",
        "kind": "DuckLakeCatalog",
        "metadata": {"name": "lake"},
        "spec": {
            "metadata": {
                "postgres": {
                    "host": pg_server.host,
                    "port": pg_server.port,
                    "database": database,
                    "schema": "lakemeta",
                    "credentialsSecretRef": {"name": "lake-pg"},
                }
            },
            "dataPath": os.path.join(workdir, "pgdata") + "/",
        },
    }
    with open(os.path.join(workdir, "examples/catalog.yaml"), "w") as fh:
        yaml.safe_dump(doc, fh)


def test_postgres_catalog_with_credentials_from_the_environment(workdir: str, pg_server) -> None:
    pg_server.create_database("cli_lake")
    write_postgres_catalog(workdir, pg_server, "cli_lake")
    env = {"DUCKLAKE_SECRET_LAKE_PG_USERNAME": "postgres"}
    assert ducklake("apply", "-f", "examples/", cwd=workdir, env=env).returncode == 0
    sql = ducklake(
        "sql",
        "-f",
        "examples/catalog.yaml",
        "INSERT INTO lake.sales.orders (id) VALUES (7)",
        "SELECT id FROM lake.sales.orders",
        LOADED_EXTENSIONS,
        cwd=workdir,
        env=env,
    )
    assert sql.returncode == 0, sql.stderr
    assert "│ ducklake,postgres_scanner │" in sql.stdout
    assert ducklake("apply", "-f", "examples/", cwd=workdir, env=env).stdout.count("no changes") == 2


def test_status_of_a_table_not_applied_yet_is_an_error(workdir: str) -> None:
    assert (
        ducklake("apply", "-f", "examples/catalog.yaml", "-f", "examples/sales-schema.yaml", cwd=workdir).returncode
        == 0
    )
    status = ducklake("status", "-f", "examples/", cwd=workdir)
    assert status.returncode == 1  # an error, not "blocked" (2)
    assert "schema sales: present" in status.stdout and "table sales.orders: missing" in status.stdout
    assert status.stderr == "error: no such table sales.orders (run apply)\n"


def open_connections(server, database: str) -> int:
    """The library's connections to ``database``, once the server has seen closed ones go."""
    import psycopg2

    admin = psycopg2.connect(host=server.host, port=server.port, user="postgres", dbname="postgres")
    admin.autocommit = True
    try:
        for _ in range(100):
            cur = admin.cursor()
            cur.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", [database]
            )
            (count,) = cur.fetchone()
            if count == 0:
                break
            time.sleep(0.05)  # a backend leaves pg_stat_activity shortly after its client closed
        return count
    finally:
        admin.close()


def test_every_verb_closes_what_it_opens(workdir: str, pg_server, monkeypatch) -> None:
    from ducklake_operator.cli import main

    pg_server.create_database("cli_closes")
    write_postgres_catalog(workdir, pg_server, "cli_closes")
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("DUCKLAKE_SECRET_LAKE_PG_USERNAME", "postgres")
    for args in (
        ["apply", "-f", "examples/"],
        ["plan", "-f", "examples/"],
        ["status", "-f", "examples/"],
        ["sql", "-f", "examples/catalog.yaml", "SELECT count(*) FROM lake.sales.orders"],
        ["run-job", "compact", "sales.orders", "-f", "examples/catalog.yaml", "--no-spark"],
    ):
        assert main(args) == 0, args
        assert open_connections(pg_server, "cli_closes") == 0, args


def test_run_job_on_spark_ends_with_its_jvm(workdir: str) -> None:
    """The JVM of the session ``ducklake run-job`` started outlived the command by about
    0.35 s, running its shutdown hooks; the command kills it once its result is printed:
    when the command exits, nothing of its process group is left, nor of its session in its
    TMPDIR."""
    assert ducklake("apply", "-f", "examples/", cwd=workdir).returncode == 0
    for first in (0, 50):
        insert = f"INSERT INTO lake.sales.orders (id) SELECT i FROM range({first}, {first + 50}) t(i)"
        assert ducklake("sql", "-f", "examples/catalog.yaml", insert, cwd=workdir).returncode == 0
    command = [sys.executable, "-m", "ducklake_operator.cli", "run-job", "compact", "sales.orders"]
    out_path, err_path = os.path.join(workdir, "out"), os.path.join(workdir, "err")
    tmp = tempfile.mkdtemp(prefix="dl-", dir="/tmp")  # short: a socket's path there must fit in 107 bytes
    try:
        with open(out_path, "w") as out, open(err_path, "w") as err:  # files: a pipe would wait for the JVM too
            proc = subprocess.Popen([*command, "-f", "examples/catalog.yaml"], cwd=workdir, stdout=out, stderr=err,
                                    env={**os.environ, "TMPDIR": tmp}, start_new_session=True)  # fmt: skip
        assert proc.wait(300) == 0, open(err_path).read()[-3000:]
        assert proc.pid not in _live_groups(), "its JVM outlived it"
        assert os.listdir(tmp) == []  # the session's directories went with it
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with open(out_path) as fh:
        out_text = fh.read()
    result = json.loads(out_text)
    assert result["ranOn"] == "spark" and (result["filesRead"], result["filesWritten"]) == (2, 1)


def test_run_job_housekeeping(workdir: str) -> None:
    assert ducklake("apply", "-f", "examples/", cwd=workdir).returncode == 0
    for i in range(3):
        ducklake(
            "sql",
            "-f",
            "examples/catalog.yaml",
            f"INSERT INTO lake.sales.orders (id) SELECT i FROM range({i * 50}, {i * 50 + 50}) t(i)",
            cwd=workdir,
        )
    dry = ducklake(
        "run-job",
        "expireSnapshots",
        "-f",
        "examples/catalog.yaml",
        "--older-than",
        "0s",
        "--retain-last",
        "2",
        "--dry-run",
        cwd=workdir,
    )
    assert dry.returncode == 0, dry.stderr
    result = json.loads(dry.stdout)
    assert result["dryRun"] and result["expired"] == [0, 1, 2, 3]
    done = json.loads(
        ducklake(
            "run-job",
            "expireSnapshots",
            "-f",
            "examples/catalog.yaml",
            "--older-than",
            "0s",
            "--retain-last",
            "2",
            cwd=workdir,
        ).stdout
    )
    assert done["expired"] == [0, 1, 2, 3]
    assert (
        json.loads(ducklake("run-job", "cleanupFiles", "-f", "examples/catalog.yaml", cwd=workdir).stdout)["deleted"]
        == []
    )
    compact = ducklake("run-job", "compact", "sales.orders", "-f", "examples/catalog.yaml", cwd=workdir)
    assert compact.returncode == 0, compact.stderr
    assert json.loads(compact.stdout)["filesRead"] == 3  # the three inserts, merged into one
    bad = ducklake(
        "run-job",
        "compact",
        "sales.orders",
        "-f",
        "examples/catalog.yaml",
        "-p",
        "targetFileSize=huge",
        "-p",
        "minInputFile=3",
        cwd=workdir,
    )
    assert bad.returncode == 1 and "-p.targetFileSize: 'huge' is not a size" in bad.stderr
    assert "-p.minInputFile: not a parameter of compact (did you mean minInputFiles?)" in bad.stderr
    no_path = ducklake("run-job", "ingest", "sales.orders", "-f", "examples/catalog.yaml", cwd=workdir)
    assert no_path.returncode == 1 and no_path.stderr == "error: invalid parameters:\n  -p.path: is required\n"
    ducklake(
        "sql",
        "-f",
        "examples/catalog.yaml",
        "DELETE FROM lake.sales.orders WHERE id >= 20",
        "INSERT INTO lake.sales.orders (id) VALUES (1000)",
        cwd=workdir,
    )  # a delete file, an inlined row
    rewrite = ducklake(
        "run-job",
        "rewriteDeletes",
        "sales.orders",
        "-f",
        "examples/catalog.yaml",
        "-p",
        "deleteThreshold=0.5",
        "--no-spark",
        cwd=workdir,
    )
    assert rewrite.returncode == 0, rewrite.stderr
    assert json.loads(rewrite.stdout)["rowsWritten"] == 20
    flush = ducklake("run-job", "flushInlinedData", "-f", "examples/catalog.yaml", cwd=workdir)
    assert flush.returncode == 0, flush.stderr
    assert json.loads(flush.stdout)["rowsFlushed"] == 1
    count = ducklake("sql", "-f", "examples/catalog.yaml", "SELECT count(*) FROM lake.sales.orders", cwd=workdir)
    assert "21" in count.stdout


def test_run_job_help_lists_every_parameter(tmp_path) -> None:
    from ducklake_operator.model.job_params import OPERATIONS

    out = ducklake("run-job", "--help", cwd=str(tmp_path))
    assert out.returncode == 0
    for name, op in OPERATIONS.items():
        if op.available:
            assert all(f"    {key} " in out.stdout for key in op.params), name
