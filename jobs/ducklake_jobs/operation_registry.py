"""Every maintenance operation the jobs run, registered explicitly: one ``OperationPlugin``
per operation, declared beside its job function (``PLUGIN`` in its module). A new operation
is its declaration in ``model.job_params`` and its job module, plus its line here."""

from __future__ import annotations

from typing import Any

from ducklake_operator.errors import DuckLakeError, SpecError
from ducklake_operator.model.job_params import OPERATIONS

from . import compact, flush, housekeeping, ingest, repartition, rewrite_column_type, rewrite_deletes
from .operation_plugin import OperationPlugin

PLUGINS: dict[str, OperationPlugin[Any]] = {
    p.name: p
    for p in (
        compact.PLUGIN,
        rewrite_deletes.PLUGIN,
        flush.PLUGIN,
        housekeeping.EXPIRE,
        housekeeping.CLEANUP,
        housekeeping.ORPHANS,
        repartition.PLUGIN,
        rewrite_column_type.PLUGIN,
        ingest.PLUGIN,
    )
}
assert set(PLUGINS) == {n for n, op in OPERATIONS.items() if op.available}, "every available operation has a plugin"


def plugin(operation: str) -> OperationPlugin[Any]:
    """The plugin of ``operation``; ``SpecError`` for an unknown name, ``DuckLakeError`` for
    one declared but not available."""
    if operation not in OPERATIONS:
        raise SpecError(f"unknown operation {operation!r}; one of {', '.join(OPERATIONS)}")
    found = PLUGINS.get(operation)
    if found is None:
        raise DuckLakeError(f"{operation} is not available yet; available: " + ", ".join(PLUGINS))
    return found
