"""When the connection fails during COMMIT: find out whether the snapshot landed.

A lost COMMIT leaves a job unable to tell whether its files are now referenced (keep them)
or not (delete them, or plan again). Reading the catalog at once is not enough: the server
may still be executing that COMMIT. On PostgreSQL the server process that ran the
transaction decides it, so we wait until it is gone (a process still idle in that
transaction after a grace period never got the COMMIT, or the network dropped it: it is
ours, and terminating it aborts the transaction). Then the snapshot row we inserted, with
its time and change list, is there or not. On SQLite the failed call has already decided.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from .tables import CATALOG_TABLES

log = logging.getLogger(__name__)

GRACE_SECONDS = 2.0  # a server process still in our transaction after this is terminated
TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class CommitWitness:
    """What identifies our snapshot row: its id, its time as stored, its change list."""

    snapshot_id: int
    snapshot_time: Any
    changes_made: str | None
    backend_pid: int | None  # PostgreSQL: the server process of the transaction


def backend_pid(conn: sa.Connection) -> int | None:
    info = getattr(conn.connection.dbapi_connection, "info", None)  # psycopg2's ConnectionInfo
    return getattr(info, "backend_pid", None)


def was_committed(engine: sa.Engine, witness: CommitWitness, *, timeout: float = TIMEOUT_SECONDS) -> bool | None:
    """True or False once known; None if the catalog stayed unreachable, or the old server
    process would not go, for ``timeout`` seconds."""
    return _once_ended(engine, witness.backend_pid, lambda conn: _snapshot_is_ours(conn, witness), timeout)


def transaction_ended(engine: sa.Engine, pid: int | None, *, timeout: float = TIMEOUT_SECONDS) -> bool:
    """Whether the lost transaction is decided (its server process gone), within ``timeout``."""
    return bool(_once_ended(engine, pid, lambda conn: True, timeout))


def _once_ended(
    engine: sa.Engine, pid: int | None, check: Callable[[sa.Connection], bool], timeout: float
) -> bool | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with engine.connect() as conn:
                if pid is not None and not _wait_gone(conn, pid, deadline):
                    return None
                return check(conn)
        except sa.exc.DBAPIError as exc:
            log.info("reading the outcome of a lost COMMIT: %s", exc.orig)
            time.sleep(0.5)
    return None


def _wait_gone(conn: sa.Connection, pid: int, deadline: float) -> bool:
    grace = time.monotonic() + GRACE_SECONDS
    terminated = False
    while time.monotonic() < deadline:
        state = conn.execute(sa.text("SELECT state FROM pg_stat_activity WHERE pid = :pid"), {"pid": pid}).scalar()
        conn.rollback()  # a fresh view of pg_stat_activity each time
        if state is None:
            return True
        if not terminated and time.monotonic() > grace and state.startswith("idle in transaction"):
            log.warning("terminating server process %d, still in the transaction whose COMMIT was lost", pid)
            conn.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            conn.rollback()
            terminated = True
        time.sleep(0.05)
    return False


def _snapshot_is_ours(conn: sa.Connection, witness: CommitWitness) -> bool:
    snap, changes = CATALOG_TABLES["ducklake_snapshot"], CATALOG_TABLES["ducklake_snapshot_changes"]
    row = conn.execute(
        sa.select(snap.c.snapshot_time, changes.c.changes_made)
        .join(changes, changes.c.snapshot_id == snap.c.snapshot_id)
        .where(snap.c.snapshot_id == witness.snapshot_id)
    ).first()
    return row is not None and row.snapshot_time == witness.snapshot_time and row.changes_made == witness.changes_made
