"""The wheel installed into fresh venvs, as a user installs it: with no extras, and with
``[controller]`` only (no pyspark, no DuckDB extension wheels). Every CLI verb's help and
one real command each on a small SQLite catalog end in their exit code and, on failure, one
sentence saying what to install: never a traceback.

The wheel is built once from a copy of the sources (nothing is written into the checkout);
pip installs from PyPI through its cache; the venvs have no system site-packages, so a
missing dependency cannot hide.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ducklake_operator.catalog import CatalogLocation
from support import duck

ROOT = Path(__file__).resolve().parents[2]
VERBS = ("plan", "apply", "status", "sql", "run-job")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in ("operator", "jobs"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    pip(sys.executable, "wheel", str(source), "--no-deps", "-w", str(work / "dist"))
    (built,) = (work / "dist").glob("ducklake_operator-*.whl")
    return built


def pip(python: str, *args: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "--disable-pip-version-check", "-q", *args],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module", params=["", "controller"], ids=["no extras", "controller only"])
def venv(request: pytest.FixtureRequest, wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    extras = f"[{request.param}]" if request.param else ""
    pip(str(path / "bin" / "python"), "install", f"ducklake-operator{extras} @ {wheel.as_uri()}")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def run(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A command of the venv, with an empty HOME (no DuckDB extensions installed by hand)
    and nothing of this checkout on the path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HOME=str(cwd / "home"), PATH=f"{venv / 'bin'}:{env.get('PATH', '')}")
    result = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, env=env, timeout=300)
    assert "Traceback" not in result.stdout + result.stderr, (args, result.stderr)
    return result


def test_every_verb_in_a_fresh_venv(venv: Path, tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    python = str(venv / "bin" / "python")
    premise = run(venv, python, "-c", "import importlib.util as u; print(u.find_spec('pyspark'), u.find_spec('duckdb_extension_ducklake'))", cwd=tmp_path)  # fmt: skip
    assert premise.stdout.split() == ["None", "None"]  # neither Spark nor DuckDB's extension wheels

    for command in (["ducklake"], ["ducklake-operator"], *(["ducklake", verb] for verb in VERBS)):
        helped = run(venv, *command, "--help", cwd=tmp_path)
        assert helped.returncode == 0 and helped.stdout.startswith("usage: "), (command, helped.stderr)

    manifests = ("-f", "examples/")
    assert "+ create table sales.orders" in run(venv, "ducklake", "plan", *manifests, cwd=tmp_path).stdout
    applied = run(venv, "ducklake", "apply", *manifests, cwd=tmp_path)
    assert applied.returncode == 0 and "committed snapshot 2" in applied.stdout, applied.stderr
    status = run(venv, "ducklake", "status", *manifests, cwd=tmp_path)
    assert status.returncode == 0 and "table sales.orders (id 2)" in status.stdout, status.stderr

    sql = run(venv, "ducklake", "sql", "-f", "examples/catalog.yaml", "FROM lake.sales.orders", cwd=tmp_path)
    assert sql.returncode == 1
    assert (
        sql.stderr == "error: DuckDB's ducklake extension is not installed: pip install 'ducklake-operator[duckdb]'\n"
    )

    # two Parquet files (more rows than the inlining limit), written by DuckDB from this venv
    lake = duck.attach(CatalogLocation(kind="sqlite", path=str(tmp_path / "demo" / "catalog.sqlite")))
    for first in (0, 100):
        lake.execute(f"INSERT INTO lk.sales.orders (id) SELECT i FROM range({first}, {first + 50}) t(i)")
    lake.close()
    job = ("ducklake", "run-job", "compact", "sales.orders", "-f", "examples/catalog.yaml")
    on_spark = run(venv, *job, cwd=tmp_path)
    assert on_spark.returncode == 1 and on_spark.stderr.count("\n") == 1, on_spark.stderr
    assert "pip install 'ducklake-operator[spark]'" in on_spark.stderr and "--no-spark" in on_spark.stderr
    in_process = run(venv, *job, "--no-spark", cwd=tmp_path)
    assert in_process.returncode == 0, in_process.stderr
    assert '"filesRead": 2' in in_process.stdout and '"filesWritten": 1' in in_process.stdout

    # a SQLite catalog needs the ducklake and sqlite_scanner extensions, and nothing else:
    # with only those two wheels (no postgres_scanner, no httpfs) `ducklake sql` works
    pip(python, "install", "duckdb-extension-ducklake==1.5.5", "duckdb-extension-sqlite-scanner==1.5.5")
    wheels = run(venv, python, "-c", "import importlib.util as u; print(u.find_spec('duckdb_extension_postgres_scanner'), u.find_spec('duckdb_extension_httpfs'))", cwd=tmp_path)  # fmt: skip
    assert wheels.stdout.split() == ["None", "None"]
    sql = run(venv, "ducklake", "sql", "-f", "examples/catalog.yaml", "SELECT count(*) FROM lake.sales.orders", cwd=tmp_path)  # fmt: skip
    assert sql.returncode == 0 and "100" in sql.stdout, sql.stderr
