"""The single mapping from our errors to retry behaviour and condition reasons.

Temporary (retried with a delay, ``Ready=False`` with the reason): the catalog database is
unreachable, a commit collided or conflicted, the catalog or schema does not exist yet.
Permanent (not retried until the spec changes): an invalid manifest, an unsupported catalog
format. A blocked plan is not an error at all: it is a status.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import (
    CatalogNotFound,
    CatalogUnavailable,
    CommitConflict,
    CommitStateUnknown,
    DuckLakeError,
    SchemaNotFound,
    SpecError,
    TableNotFound,
    UnsupportedCatalog,
)


@dataclass(frozen=True)
class Failure:
    reason: str  # condition reason
    message: str
    temporary: bool
    delay: float = 0.0


def classify(exc: BaseException) -> Failure:
    msg = str(exc)
    if isinstance(exc, CatalogUnavailable):
        return Failure("CatalogUnreachable", msg, True, 30)
    if isinstance(exc, CommitStateUnknown):
        return Failure("CommitStateUnknown", msg, True, 10)
    if isinstance(exc, CommitConflict):
        return Failure("CommitConflict", msg, True, 5)
    if isinstance(exc, CatalogNotFound):
        return Failure("CatalogNotFound", msg, True, 30)
    if isinstance(exc, (SchemaNotFound, TableNotFound)):
        return Failure("WaitingForSchema" if isinstance(exc, SchemaNotFound) else "TableNotFound", msg, True, 30)
    if isinstance(exc, SpecError):
        return Failure("InvalidSpec", msg, False)
    if isinstance(exc, UnsupportedCatalog):
        return Failure("UnsupportedFormat", msg, False)
    if isinstance(exc, DuckLakeError):
        return Failure("Error", msg, True, 60)
    return Failure("InternalError", f"{type(exc).__name__}: {msg}", True, 60)
