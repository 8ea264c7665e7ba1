"""An operation's declaration says whether its file groups run as Spark tasks
(``Operation.spark_tasks``), and ``ducklake run-job --help`` lists those as the ones
``--no-spark`` applies to: each declared one hands its work to the runner, and no other does."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from ducklake_jobs.job_template import run_operation
from ducklake_operator import cli
from ducklake_operator.catalog import Catalog
from ducklake_operator.model.job_params import OPERATIONS
from support.operation_cases import CASES, prepare


class RunnerCalled(Exception):
    pass


def refusing_runner(fn: Callable[[Any], Any], items: list[Any], on_done: object = None) -> list[Any]:
    raise RunnerCalled


def causes(exc: BaseException | None) -> list[BaseException]:
    seen: list[BaseException] = []
    while exc is not None and len(seen) < 10:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


@pytest.mark.parametrize("operation", list(CASES))
def test_declared_spark_tasks_are_the_runners_work(make_location, tmp_path: Path, operation: str) -> None:
    location = make_location("sqlite")
    table, params, _ = prepare(location, tmp_path, operation)
    with closing(Catalog.open(location)) as catalog:
        if OPERATIONS[operation].spark_tasks:
            with pytest.raises(Exception) as raised:
                run_operation(catalog, operation, table, params, runner=refusing_runner)
            assert any(isinstance(e, RunnerCalled) for e in causes(raised.value)), raised.value
        else:
            assert run_operation(catalog, operation, table, params, runner=refusing_runner)["ranOn"] == "in-process"


def no_spark_help(capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        cli.main(["run-job", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    return text[text.index("--no-spark ", text.index("options:")) :].split(". ")[0]


def test_run_job_help_names_the_operations_no_spark_applies_to(capsys: pytest.CaptureFixture[str]) -> None:
    text = no_spark_help(capsys)
    takers = [n for n, op in OPERATIONS.items() if op.available and op.spark_tasks]
    assert text.startswith("--no-spark " + ", ".join(takers) + ": run the file groups in this process"), text
    assert {"repartition", "rewriteColumnType", "ingest"} <= set(takers)
    for other in (n for n, op in OPERATIONS.items() if not op.spark_tasks):
        assert other not in text
