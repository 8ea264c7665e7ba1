"""Commit a list of changes as one DuckLake snapshot, in one database transaction.

Protocol (docs/ducklake-format.md §2.1-§2.6), per attempt:
1. BEGIN (PostgreSQL REPEATABLE READ; SQLite BEGIN IMMEDIATE); read the latest snapshot.
2. Run every writer against the catalog as it is now: checks, id allocation, buffered rows.
3. If snapshots were committed since the caller's base, apply DuckDB's conflict rules
   to them; a logical conflict fails at once with ``CommitConflict`` naming the snapshot.
   The snapshot row latest+1 is inserted right after step 1 (its primary key serialises
   writers); its counters are set once every change has taken its ids.
4. Write the rows, the ``ducklake_schema_versions`` rows, and ``ducklake_snapshot_changes``
   last; COMMIT.
A primary-key collision or serialization failure means someone committed in between:
roll back and retry with fresh ids, bounded, with exponential backoff and jitter. A
connection lost during COMMIT is settled by reading back our snapshot row once the
server has ended the transaction (``commit_outcome``): committed, or a clean failure.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from tenacity import (
    RetryCallState,
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

from ..errors import CatalogUnavailable, CommitConflict, CommitRetriesExhausted, CommitStateUnknown
from ..model.changes import Change, SetOption
from ..model.file_changes import FileChange
from ..model.state import SnapshotInfo
from .changes_made import Change as Token
from .changes_made import parse_changes, render_changes
from .commit_outcome import CommitWitness, backend_pid, transaction_ended, was_committed
from .conflicts import find_conflict
from .connect import describe_db_error
from .read_metadata import check_format_version, load_metadata
from .read_snapshots import load_snapshot, load_snapshots
from .tables import CATALOG_TABLES, catalog_now
from .write_context import CommitContext, execute_buffered
from .write_snapshot import finish_commit
from .write_tables import relation_names
from .writers import write_change

log = logging.getLogger(__name__)

DEFAULT_AUTHOR = "ducklake-operator"  # ducklake_snapshot_changes.author of the operator's and its jobs' commits
MAX_ATTEMPTS = 10  # DuckDB's ducklake_max_retry_count
# PostgreSQL SQLSTATEs that mean "another writer got there first": unique violation,
# serialization failure, deadlock.
_RETRY_SQLSTATES = {"23505", "40001", "40P01"}


@dataclass(frozen=True)
class CommitResult:
    snapshot_id: int | None  # None: nothing needed a snapshot (no changes, or options only)
    schema_version: int
    attempts: int
    changes_made: str | None = None
    created_table_ids: dict[str, int] = field(default_factory=dict)


class _Collision(Exception):
    """Another writer committed during our attempt; retry with fresh ids."""


class _Rewrite(Exception):
    """An options-only commit whose COMMIT was lost, once the server ended it: options are
    rewritten whole, so writing them again gives the same catalog either way."""


def is_collision(exc: sa.exc.DBAPIError) -> bool:
    code = getattr(exc.orig, "pgcode", None)
    if code in _RETRY_SQLSTATES:
        return True
    text = str(exc.orig).lower()
    # SQLite: "UNIQUE constraint failed", "database is locked" (busy timeout expired)
    return "unique constraint" in text or "database is locked" in text


Changes = Sequence[Change | FileChange]
# Changes made inside the transaction, once snapshot latest+1 is reserved: no other writer
# can commit until this one ends, so a job catches up there with what was committed since
# it read (given the latest snapshot's id) and can no longer be overtaken. It has checked
# what happened up to that snapshot itself: DuckDB's conflict rules apply from there.
LateChanges = Callable[[int], Changes]


def commit_changes(
    engine: sa.Engine,
    changes: Changes | LateChanges,
    *,
    dialect: str,
    pg_schema: str | None = None,
    author: str | None = DEFAULT_AUTHOR,
    message: str | None = None,
    extra_info: str | Callable[[], str | None] | None = None,
    base_snapshot: int | None = None,
    max_attempts: int = MAX_ATTEMPTS,
    wait: Callable[[RetryCallState], float] | None = None,
    same_files_deleted: Callable[[sa.Connection, int, int], bool] | None = None,
    before_commit: Callable[[], None] | None = None,
) -> CommitResult:
    """Commit ``changes`` as one snapshot; see the module docstring for the protocol.

    ``base_snapshot`` is the snapshot the changes were planned against; if omitted, the
    latest snapshot at the first attempt. ``changes`` may be ``LateChanges`` (then
    ``extra_info`` may be a function too, called after them). ``before_commit`` runs inside
    the transaction once every row is written, right before COMMIT (the jobs' fault point
    for kill tests).
    """
    base: list[int] = [] if base_snapshot is None else [base_snapshot]
    attempts = 0

    def attempt() -> CommitResult:
        nonlocal attempts
        attempts += 1
        return _attempt(
            engine,
            changes,
            dialect,
            pg_schema,
            author,
            message,
            extra_info,
            base,
            attempts,
            same_files_deleted,
            before_commit,
        )

    retrying = Retrying(
        stop=stop_after_attempt(max_attempts),
        wait=wait or wait_random_exponential(multiplier=0.05, max=2.0),
        retry=retry_if_exception_type((_Collision, _Rewrite)),
        before_sleep=_log_retry,
    )
    try:
        return retrying(attempt)
    except RetryError:
        raise CommitRetriesExhausted(
            f"gave up after {attempts} attempts: every attempt collided with a concurrent commit; nothing was committed"
        ) from None


def _record_snapshot(
    conn: sa.Connection,
    ctx: CommitContext,
    latest: SnapshotInfo,
    dialect: str,
    reserved: bool,
    snapshot_time: Any,
    changes_made: str | None,
    said: tuple[str | None, str | None, str | None],
) -> Any:
    """The snapshot's final counters, the tables whose schema version it starts, and its
    change set with who made it and why (``said``: author, message, extra info); or, when
    nothing is to be recorded after all, the reserved snapshot row dropped again. The
    snapshot's time (inserted here when it was not reserved)."""
    author, message, info = said
    snap = CATALOG_TABLES["ducklake_snapshot"]
    if ctx.needs_snapshot:
        if not reserved:
            snapshot_time = _insert_snapshot(conn, latest, dialect)
        conn.execute(
            snap.update()
            .where(snap.c.snapshot_id == ctx.snapshot_id)
            .values(
                schema_version=ctx.schema_version,
                next_catalog_id=ctx.next_catalog_id,
                next_file_id=ctx.next_file_id,
            )
        )
        if ctx.versioned_tables:
            conn.execute(
                CATALOG_TABLES["ducklake_schema_versions"]
                .insert()
                .values(
                    [
                        dict(begin_snapshot=ctx.snapshot_id, schema_version=ctx.schema_version, table_id=tid)
                        for tid in dict.fromkeys(ctx.versioned_tables)
                    ]
                )
            )
        conn.execute(
            CATALOG_TABLES["ducklake_snapshot_changes"]
            .insert()
            .values(
                snapshot_id=ctx.snapshot_id,
                changes_made=changes_made,
                author=author,
                commit_message=message,
                commit_extra_info=info,
            )
        )
    elif reserved:  # nothing to record after all (e.g. tags already as asked)
        conn.execute(snap.delete().where(snap.c.snapshot_id == ctx.snapshot_id))
    return snapshot_time


def _attempt(
    engine: sa.Engine,
    changes: Changes | LateChanges,
    dialect: str,
    pg_schema: str | None,
    author: str | None,
    message: str | None,
    extra_info: str | Callable[[], str | None] | None,
    base: list[int],
    attempt_no: int,
    same_files_deleted: Callable[[sa.Connection, int, int], bool] | None,
    before_commit: Callable[[], None] | None,
) -> CommitResult:
    try:
        conn = engine.connect().execution_options(ducklake_write=True)
    except sa.exc.DBAPIError as exc:
        raise CatalogUnavailable(f"cannot connect to the catalog database: {describe_db_error(exc)}") from None
    try:
        trans = conn.begin()
        try:
            latest = load_snapshot(conn)
            if not base:
                base.append(latest.snapshot_id)
            # Reserve snapshot latest+1 at once: its primary key is what serialises writers,
            # so the window in which another commit can slip in is one round trip, not the
            # whole attempt (otherwise a busy DuckDB writer starves us). Counters are final-
            # ised below, before COMMIT; nobody sees the row until then.
            reserved = callable(changes) or any(not isinstance(c, SetOption) for c in changes)
            snapshot_time = _insert_snapshot(conn, latest, dialect) if reserved else None
            if callable(changes):
                changes = changes(latest.snapshot_id)
                base[0] = latest.snapshot_id  # the caller is current as of it (LateChanges)
            info = extra_info() if callable(extra_info) else extra_info
            metadata = load_metadata(conn)
            check_format_version(metadata, "the catalog")
            ctx = CommitContext(
                conn=conn,
                dialect=dialect,
                pg_schema=pg_schema,
                base=latest,
                metadata=metadata,
                wanted_relations=relation_names(changes),
            )
            for change in changes:
                write_change(change, ctx)
            if latest.snapshot_id > base[0]:
                _check_conflicts(conn, ctx.tokens, base[0], same_files_deleted)
            changes_made = render_changes(ctx.tokens)
            execute_buffered(conn, ctx.statements)
            finish_commit(ctx)
            snapshot_time = _record_snapshot(
                conn, ctx, latest, dialect, reserved, snapshot_time, changes_made, (author, message, info)
            )
            if before_commit is not None:
                before_commit()
        except sa.exc.DBAPIError as exc:
            trans.rollback()
            if is_collision(exc):
                raise _Collision() from exc
            if exc.connection_invalidated or isinstance(exc, sa.exc.OperationalError):
                raise CatalogUnavailable(
                    f"lost the catalog database during the commit: {describe_db_error(exc)}; nothing was committed"
                ) from None
            raise
        except BaseException:
            trans.rollback()
            raise
        pid = backend_pid(conn)
        witness = CommitWitness(ctx.snapshot_id, snapshot_time, changes_made, pid) if ctx.needs_snapshot else None
        try:
            trans.commit()
        except sa.exc.DBAPIError as exc:
            if is_collision(exc):
                raise _Collision() from exc
            if not reserved and witness is None and transaction_ended(engine, pid):  # options only
                raise _Rewrite() from exc
            _settle_lost_commit(engine, witness, describe_db_error(exc))
    finally:
        conn.close()
    return CommitResult(
        snapshot_id=ctx.snapshot_id if ctx.needs_snapshot else None,
        schema_version=ctx.schema_version,
        attempts=attempt_no,
        changes_made=changes_made,
        created_table_ids=dict(ctx.created_table_ids),
    )


def _log_retry(state: RetryCallState) -> None:
    lost = state.outcome is not None and isinstance(state.outcome.exception(), _Rewrite)
    log.info(
        "commit attempt %d %s",
        state.attempt_number,
        "lost its COMMIT; writing the options again" if lost else "collided with a concurrent writer; retrying",
    )


def _settle_lost_commit(engine: sa.Engine, witness: CommitWitness | None, error: str) -> None:
    """The connection failed during COMMIT: return if the snapshot landed after all, raise
    ``CatalogUnavailable`` (cleanable) if it did not, ``CommitStateUnknown`` if that cannot
    be found out."""
    outcome = was_committed(engine, witness) if witness is not None else None
    if witness is not None and outcome is True:
        log.warning(
            "the connection failed while committing snapshot %d (%s); it was committed", witness.snapshot_id, error
        )
        return
    what = f"snapshot {witness.snapshot_id}" if witness is not None else "the options"
    if outcome is False:
        raise CatalogUnavailable(
            f"the connection failed while committing {what}: {error}; it was not committed "
            "(checked once the server had ended the transaction)"
        )
    raise CommitStateUnknown(
        f"the connection failed while committing {what}: {error}. It may or may not have been committed, "
        "and the catalog could not tell; re-read the catalog before acting."
    )


def _insert_snapshot(conn: sa.Connection, latest: SnapshotInfo, dialect: str) -> Any:
    """Insert snapshot latest+1 with the counters unchanged (finalised before COMMIT);
    returns its time as stored."""
    snap = CATALOG_TABLES["ducklake_snapshot"]
    return conn.execute(
        snap.insert()
        .values(
            snapshot_id=latest.snapshot_id + 1,
            snapshot_time=catalog_now(dialect),
            schema_version=latest.schema_version,
            next_catalog_id=latest.next_catalog_id,
            next_file_id=latest.next_file_id,
        )
        .returning(snap.c.snapshot_time)
    ).scalar_one()


def _check_conflicts(
    conn: sa.Connection,
    mine: list[Token],
    base: int,
    same_files_deleted: Callable[[sa.Connection, int, int], bool] | None,
) -> None:
    theirs = [(s.snapshot_id, c) for s in load_snapshots(conn, after=base) for c in parse_changes(s.changes_made)]
    sc = CATALOG_TABLES["ducklake_schema"]
    schema_names = dict(conn.execute(sa.select(sc.c.schema_id, sc.c.schema_name)).all())
    checker = (
        (lambda table_id, snapshot_id: same_files_deleted(conn, table_id, snapshot_id)) if same_files_deleted else None
    )
    conflict = find_conflict(mine, theirs, schema_names=schema_names, same_files_deleted=checker)
    if conflict is not None:
        raise CommitConflict(
            f"conflict with snapshot {conflict.snapshot_id} ({conflict.reason}); nothing was committed. "
            "Re-read the catalog and plan again.",
            snapshot_id=conflict.snapshot_id,
        )
