"""What an operation is to the jobs: its API declaration (``model.job_params.Operation``:
name, policy section, parameters, scope, typed arguments) and the job function that runs it,
given the run's ``JobContext`` and the typed arguments its parameters parsed into.
``operation_registry`` lists every plugin; ``job_template`` runs one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ducklake_operator.catalog import Catalog
from ducklake_operator.catalog.commit import DEFAULT_AUTHOR
from ducklake_operator.model.job_params import Operation

from .run_context import PLAIN_RUN, JobRun
from .task_runners import Runner, run_in_process

A = TypeVar("A")


@dataclass(frozen=True)
class JobContext:
    """Where and how one attempt of an operation runs (all but its arguments)."""

    catalog: Catalog
    schema: str | None  # None with table: a catalog-wide run
    table: str | None
    author: str = DEFAULT_AUTHOR
    runner: Runner = run_in_process  # where file groups run when they are many
    run: JobRun = PLAIN_RUN

    @property
    def table_schema(self) -> str:
        """The schema of an operation that requires a table (the template checked it has one)."""
        assert self.schema is not None
        return self.schema

    @property
    def table_name(self) -> str:
        assert self.table is not None
        return self.table


@dataclass(frozen=True)
class OperationPlugin(Generic[A]):
    operation: Operation[A]
    job: Callable[[JobContext, A], dict[str, Any]]  # the JSON report

    @property
    def name(self) -> str:
        return self.operation.name
