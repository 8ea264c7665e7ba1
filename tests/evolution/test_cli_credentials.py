"""A PostgreSQL catalog whose role needs a password: with a wrong password and with the
database down, every CLI verb that connects ends in one ``error:`` line saying what failed,
exit 1, and no password anywhere in its output. DuckDB's own attach (whose errors carry the
whole libpq connection string) is checked directly too: the CLI's catalog check fails
first, so ``ducklake sql`` never reaches it with bad credentials."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys

import duckdb
import pytest
import yaml

from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.catalog.scrub import describe_failure, scrub
from ducklake_operator.duckdb_client import attach, connect, extensions_for
from ducklake_operator.errors import DuckLakeError
from support.pgserver import PgServer, free_port

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
# a space, quotes and a backslash: libpq's quoting and the scrubbing of quoted values
PASSWORD = "Right pw 'q' \\ 7f3e"
WRONG = "Wrong-pw-91c2"
VERBS = {
    "plan": ["plan", "-f", "examples/"],
    "apply": ["apply", "-f", "examples/"],
    "status": ["status", "-f", "examples/"],
    "sql": ["sql", "-f", "examples/catalog.yaml", "SELECT count(*) FROM lake.sales.orders"],
    "run-job": ["run-job", "compact", "sales.orders", "-f", "examples/catalog.yaml", "--no-spark"],
}


def ducklake(args: list[str], cwd: str, password: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DUCKLAKE_SECRET_LAKE_PG_USERNAME": ROLE, "DUCKLAKE_SECRET_LAKE_PG_PASSWORD": password}
    return subprocess.run(
        [sys.executable, "-m", "ducklake_operator.cli", *args], cwd=cwd, capture_output=True, text=True, env=env
    )


ROLE = "ducklake_pw"
_databases = itertools.count()


@pytest.fixture(scope="module")
def password_role(pg_server: PgServer) -> PgServer:
    pg_server.create_password_role(ROLE, PASSWORD)
    return pg_server


@pytest.fixture
def database(password_role: PgServer) -> str:
    """A fresh database the password role owns."""
    name = f"{ROLE}_{os.getpid()}_{next(_databases)}"
    password_role.create_database(name, owner=ROLE)
    return name


def lake(tmp_path, port: int, database: str) -> str:
    """examples/ with its catalog on the password-protected ``database`` (at ``port``)."""
    shutil.copytree(os.path.join(ROOT, "examples"), tmp_path / "examples")
    doc = {
        "apiVersion": "ducklake.dev/v1alpha1",
        "kind": "DuckLakeCatalog",
        "metadata": {"name": "lake"},
        "spec": {
            "metadata": {
                "postgres": {
                    "host": "127.0.0.1",
                    "port": port,
                    "database": database,
                    "credentialsSecretRef": {"name": "lake-pg"},
                }
            },
            "dataPath": str(tmp_path / "data") + "/",
        },
    }
    (tmp_path / "examples" / "catalog.yaml").write_text(yaml.safe_dump(doc))
    return str(tmp_path)


def assert_one_line_without_secrets(verb: str, result: subprocess.CompletedProcess[str], what: str) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == 1, (verb, output)
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, (verb, result.stderr)
    assert what in result.stderr, (verb, result.stderr)
    assert PASSWORD not in output and WRONG not in output and "Traceback" not in output


def test_every_verb_with_a_wrong_password_or_the_database_down(
    password_role: PgServer, database: str, tmp_path
) -> None:
    workdir = lake(tmp_path, password_role.port, database)
    # the right password works through every verb, so the failures below are the password's
    for verb in ("apply", "plan", "status", "sql", "run-job"):
        ok = ducklake(VERBS[verb], workdir, PASSWORD)
        assert ok.returncode == 0, (verb, ok.stderr)
        assert PASSWORD not in ok.stdout + ok.stderr

    for verb, args in VERBS.items():
        assert_one_line_without_secrets(verb, ducklake(args, workdir, WRONG), "authentication failed")

    down = lake(tmp_path / "down", free_port(), database)  # a port nobody listens on
    for verb, args in VERBS.items():
        assert_one_line_without_secrets(verb, ducklake(args, down, PASSWORD), "could not connect")


def test_duckdb_attach_failures_say_what_failed_without_the_password(
    password_role: PgServer, database: str, tmp_path
) -> None:
    def location(password: str, port: int) -> CatalogLocation:
        return CatalogLocation(
            kind="postgres", host=password_role.host, port=port, database=database, user=ROLE, password=password
        )

    right = location(PASSWORD, password_role.port)
    Catalog.create(right, str(tmp_path) + "/").close()
    attach(right).close()  # DuckDB attaches it with the right password
    # DuckDB's own message has the connection string, password included; scrub() removes it
    # by its pattern alone (quoted libpq value), without being told the password
    with pytest.raises(duckdb.Error) as raw:
        connect(extensions_for(right)).execute(f"ATTACH '{location(PASSWORD, free_port()).duckdb_attach_target()}'")
    assert "password='Right pw" in str(raw.value) and "Right pw" not in scrub(str(raw.value))
    for failing, what in (
        (location(WRONG, password_role.port), "authentication failed"),
        (location(PASSWORD, free_port()), "could not connect"),
    ):
        with pytest.raises(DuckLakeError) as err:
            attach(failing)
        message = str(err.value)
        assert message.startswith("DuckDB cannot attach the catalog at postgres://127.0.0.1:") and what in message
        assert "\n" not in message and PASSWORD not in message and WRONG not in message


@pytest.mark.parametrize(
    "text, secrets, expected",
    [
        ("host=h port=5 user=u password=plain dbname=d", (), "host=h port=5 user=u password=*** dbname=d"),
        ("user=u password='it\\'s a \\\\ pw' dbname=d", (), "user=u password=*** dbname=d"),
        ("at 'password = spaced'", (), "at 'password = ***"),
        ("postgresql://bob:p%40ss@db:5432/x, s3://bucket/key", (), "postgresql://bob:***@db:5432/x, s3://bucket/key"),
        ("key AKIA123 secret abc and abcdef", ("abc", "abcdef", None, ""), "key AKIA123 secret *** and ***"),
    ],
)
def test_scrub(text: str, secrets: tuple[str | None, ...], expected: str) -> None:
    assert scrub(text, secrets) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            'connection to server at "127.0.0.1", port 5 failed: FATAL:  password authentication failed for user "u"',
            "authentication failed (check the credentials)",
        ),
        ('connection to server at "h", port 5 failed: fe_sendauth: no password supplied\n', "authentication failed"),
        (
            'connection to server at "127.0.0.1", port 5 failed: Connection refused\n\tIs the server running?',
            "could not connect (Connection refused)",
        ),
        (
            'connection to server at "h", port 5 failed: FATAL:  database "x" does not exist',
            'could not connect (database "x" does not exist)',
        ),
        ("server closed the connection unexpectedly\nThis probably means", "server closed the connection unexpectedly"),
    ],
)
def test_describe_failure(text: str, expected: str) -> None:
    assert describe_failure(text).startswith(expected)
