"""Every maintenance operation the jobs run, registered explicitly: one ``OperationPlugin``
per operation, declared beside its job function (``PLUGIN`` in its module), named here by
its module and attribute. A job imports only its own operation's module (and the libraries
it needs), not every operation's: a job process starts sooner. A new operation is its
declaration in ``model.job_params`` and its job module, plus its line here."""

from __future__ import annotations

import importlib
from typing import Any

from ducklake_operator.errors import DuckLakeError, SpecError
from ducklake_operator.model.job_params import OPERATIONS

from .operation_plugin import OperationPlugin

MODULES: dict[str, tuple[str, str]] = {  # operation -> (module in this package, its plugin's name there)
    "compact": ("compact", "PLUGIN"),
    "rewriteDeletes": ("rewrite_deletes", "PLUGIN"),
    "flushInlinedData": ("flush", "PLUGIN"),
    "expireSnapshots": ("housekeeping", "EXPIRE"),
    "cleanupFiles": ("housekeeping", "CLEANUP"),
    "deleteOrphanFiles": ("housekeeping", "ORPHANS"),
    "repartition": ("repartition", "PLUGIN"),
    "rewriteColumnType": ("rewrite_column_type", "PLUGIN"),
    "ingest": ("ingest", "PLUGIN"),
}
assert set(MODULES) == {n for n, op in OPERATIONS.items() if op.available}, "every available operation has a plugin"


def plugin(operation: str) -> OperationPlugin[Any]:
    """The plugin of ``operation`` (its module imported now); ``SpecError`` for an unknown
    name, ``DuckLakeError`` for one declared but not available."""
    if operation not in OPERATIONS:
        raise SpecError(f"unknown operation {operation!r}; one of {', '.join(OPERATIONS)}")
    where = MODULES.get(operation)
    if where is None:
        raise DuckLakeError(f"{operation} is not available yet; available: " + ", ".join(MODULES))
    module, name = where
    found: OperationPlugin[Any] = getattr(importlib.import_module(f".{module}", __package__), name)
    assert found.name == operation, f"{module}.{name} is {found.name}, not {operation}"
    return found
