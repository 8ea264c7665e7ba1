"""The single mapping from our errors to retry behaviour and condition reasons.

Waiting (``waits``: retried when the catalog's channel moves, see ``context``): the catalog
database is unreachable, the catalog or schema does not exist yet, the credentials Secret or
a key in it is missing. Temporary (retried after a short backoff that grows to ``cap``): a
commit collided or its outcome is being settled, anything unexpected. Permanent (not retried
until the spec changes): an invalid manifest, an unsupported catalog format. A blocked plan
is not an error at all: it is a status.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..api.v1alpha1.names import INVALID_SPEC
from ..errors import (
    CatalogNotFound,
    CatalogUnavailable,
    CommitConflict,
    CommitStateUnknown,
    CredentialsInvalid,
    DuckLakeError,
    SchemaNotFound,
    SpecError,
    TableNotFound,
    UnsupportedCatalog,
)

# the reasons ``classify`` gives a failure to reach or read the catalog: a drift pass that
# failed so made its tables not Ready, and a later pass that reads the catalog makes them
# Ready again (``catalogs.drift_sweep``); nothing else would, their manifests being applied
OUTAGE_REASONS = frozenset({"CatalogUnreachable", "CredentialsInvalid", "Error", "InternalError"})


@dataclass(frozen=True)
class Failure:
    reason: str  # condition reason
    message: str
    temporary: bool
    cap: float = 60.0  # most seconds between retries
    waits: bool = False  # retry as soon as the catalog's channel moves

    def delay(self, retry: int) -> float:
        """Backoff for a temporary failure: 0.5, 1, 2, ... seconds, up to ``cap``."""
        return min(self.cap, 0.5 * 2.0 ** min(retry, 16))


def classify(exc: BaseException) -> Failure:
    msg = str(exc)
    if isinstance(exc, CatalogUnavailable):
        return Failure("CatalogUnreachable", msg, True, waits=True)
    if isinstance(exc, CredentialsInvalid):
        return Failure("CredentialsInvalid", msg, True, waits=True)
    if isinstance(exc, CommitStateUnknown):
        return Failure("CommitStateUnknown", msg, True, cap=10)
    if isinstance(exc, CommitConflict):
        return Failure("CommitConflict", msg, True, cap=5)
    if isinstance(exc, CatalogNotFound):
        return Failure("CatalogNotFound", msg, True, waits=True)
    if isinstance(exc, SchemaNotFound):
        return Failure("WaitingForSchema", msg, True, waits=True)
    if isinstance(exc, TableNotFound):
        return Failure("TableNotFound", msg, True, waits=True)
    if isinstance(exc, SpecError):
        return Failure(INVALID_SPEC, msg, False)
    if isinstance(exc, UnsupportedCatalog):
        return Failure("UnsupportedFormat", msg, False)
    if isinstance(exc, DuckLakeError):
        return Failure("Error", msg, True)
    return Failure("InternalError", f"{type(exc).__name__}: {msg}", True)
