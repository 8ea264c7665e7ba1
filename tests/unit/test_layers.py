"""The layers hold: the control plane never needs the data plane (``ducklake_jobs``), and
the catalog package is the only code that speaks SQL (imports ``sqlalchemy``)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OPERATOR = ROOT / "operator" / "ducklake_operator"
JOBS = ROOT / "jobs" / "ducklake_jobs"


def modules(package: Path) -> list[str]:
    """Dotted names of every module of a package directory."""
    out = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def imports(path: Path) -> list[tuple[str, str]]:
    """(top-level package imported, enclosing function or '') for every import in a file."""
    found: list[tuple[str, str]] = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, child.name)
                continue
            if isinstance(child, ast.Import):
                found.extend((alias.name.split(".")[0], function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.append((child.module.split(".")[0], function))
            visit(child, function)

    visit(ast.parse(path.read_text()), "")
    return found


def test_controller_modules_import_without_the_jobs() -> None:
    """Every module but the CLI imports in a process where ``ducklake_jobs`` cannot be imported."""
    names = [m for m in modules(OPERATOR) if m != "ducklake_operator.cli"]
    script = (
        "import importlib, json, sys\n"
        "sys.modules['ducklake_jobs'] = None  # any import of it raises ImportError\n"
        "failed = {}\n"
        f"for name in {names!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception as exc:\n"
        "        failed[name] = repr(exc)\n"
        "print(json.dumps(failed))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""}
    )
    assert proc.returncode == 0, proc.stderr
    assert len(names) > 40 and json.loads(proc.stdout) == {}


def test_only_the_run_job_command_imports_the_jobs() -> None:
    """In the CLI, and there only inside functions (``run-job``), so ``ducklake plan`` needs no jobs."""
    users = {
        (str(path.relative_to(OPERATOR)), bool(function))
        for path in OPERATOR.rglob("*.py")
        for package, function in imports(path)
        if package == "ducklake_jobs"
    }
    assert users == {("cli.py", True)}


def test_only_the_catalog_package_speaks_sql() -> None:
    """Neither the controller nor the jobs import sqlalchemy, nor reach for the catalog's
    tables or engine: the jobs commit file change values and read through catalog functions."""
    offenders = sorted(
        str(path.relative_to(ROOT))
        for package_dir in (OPERATOR, JOBS)
        for path in package_dir.rglob("*.py")
        if any(package == "sqlalchemy" for package, _ in imports(path))
        and not path.is_relative_to(OPERATOR / "catalog")
    )
    assert offenders == []
    jobs_source = "\n".join(path.read_text() for path in JOBS.rglob("*.py"))
    assert "catalog.tables" not in jobs_source and ".engine" not in jobs_source
