"""The one error hierarchy of ducklake-operator.

Layers below the controller raise these; the controller and the CLI map them to
conditions, retries and exit codes in one place each. ``cleanable`` says whether the
failure proves that nothing was committed, so files written for the attempt may be
deleted (Iceberg's CleanableFailure).
"""

from __future__ import annotations

from collections.abc import Sequence


class DuckLakeError(Exception):
    """Base class of every error this project raises on purpose."""

    cleanable: bool = False


class SpecError(DuckLakeError):
    """A manifest or an argument is invalid; carries every problem found at once."""

    def __init__(self, problems: Sequence[str] | str, *, source: str | None = None) -> None:
        self.problems: tuple[str, ...] = (problems,) if isinstance(problems, str) else tuple(problems)
        self.source = source
        prefix = f"{source}: " if source else ""
        super().__init__(prefix + "; ".join(self.problems))


class UnsupportedCatalog(DuckLakeError):
    """The catalog's format version is not the one this operator reads and writes."""


class NotFound(DuckLakeError):
    """A catalog object the request refers to does not exist at the snapshot read."""


class CatalogNotFound(NotFound):
    pass


class SchemaNotFound(NotFound):
    pass


class TableNotFound(NotFound):
    pass


class AlreadyExists(DuckLakeError):
    """A schema or table with that name already exists."""


class CatalogUnavailable(DuckLakeError):
    """The metadata database cannot be reached (connection refused, timeout, auth)."""

    cleanable = True


class CredentialsInvalid(DuckLakeError):
    """The credentials a catalog names cannot be had: the Secret, or a key in it, is missing."""

    def __init__(self, message: str, *, secret: tuple[str, str] | None = None) -> None:
        self.secret = secret  # (namespace, name)
        super().__init__(message)


class CommitConflict(DuckLakeError):
    """A concurrent commit touched what this commit changes; nothing was committed."""

    cleanable = True

    def __init__(self, message: str, *, snapshot_id: int | None = None) -> None:
        self.snapshot_id = snapshot_id
        super().__init__(message)


class CommitRetriesExhausted(CommitConflict):
    """Every retry of a commit collided with another writer; nothing was committed."""


# how a job's failure ends, for whoever runs it by hand (the controller says it from the catalog)
NOTHING_COMMITTED = "nothing was committed and the job's files were deleted"


class JobFailed(DuckLakeError):
    """A maintenance job's work failed before its commit: nothing was committed and the
    files it wrote were deleted."""

    cleanable = True


class CommitStateUnknown(DuckLakeError):
    """The connection failed during COMMIT and reading the outcome back failed too (the
    catalog stayed unreachable): the snapshot may or may not exist.

    Never delete files written for such a commit: they may be referenced.
    """

    cleanable = False


class LaunchFailed(DuckLakeError):
    """A run could not be launched: a setting cannot be rendered (a memory size, a missing
    image), its credentials cannot be had, or the API server refused what was sent.
    Nothing ran, so nothing was committed."""

    cleanable = True


class LauncherBusy(DuckLakeError):
    """A launcher cannot start another attempt now (the Local launcher's programs share the
    operator's pod: at most so many at once); the run waits, holding nothing, and tries again."""


class LauncherNotInstalled(LaunchFailed):
    """The cluster does not serve the custom resource a launcher creates (its operator is
    not installed)."""
