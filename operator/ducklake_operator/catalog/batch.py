"""Concurrent commits to one catalog, merged into one snapshot.

A catalog takes one snapshot at a time: writers that commit at once collide on the next
snapshot id and retry with backoff, so a storm of N plans (GitOps applying a folder of
tables) costs N serial commits plus their collisions. Here callers queue while a commit is
in flight, and the next commit takes everything queued as one snapshot, in one transaction:
each plan stays atomic (all of its changes land, or none), several land together.

If a merged commit fails, its plans are committed one by one, so one plan's conflict or
error is that plan's alone. The caller that finds no commit in flight leads: it commits
batches until its own plan has landed, then hands the lead to the first caller still
waiting, so nobody works for the others longer than one commit.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import CommitStateUnknown
from .commit import CommitResult

MAX_BATCH = 100  # plans per snapshot: bounds the transaction and the commit message


@dataclass(eq=False)
class _Request:
    changes: Sequence[Any]
    author: str
    message: str
    extra_info: str | None
    base_snapshot: int | None
    done: threading.Event = field(default_factory=threading.Event)
    lead: bool = False  # handed the lead while waiting
    result: CommitResult | None = None
    error: BaseException | None = None


Commit = Callable[..., CommitResult]  # Catalog.commit's signature


class CommitBatcher:
    def __init__(self, commit: Commit, max_batch: int = MAX_BATCH) -> None:
        self._commit = commit
        self._max = max_batch
        self._lock = threading.Lock()
        self._queue: list[_Request] = []
        self._leading = False

    def commit(
        self,
        changes: Sequence[Any],
        *,
        author: str,
        message: str,
        extra_info: str | None = None,
        base_snapshot: int | None = None,
    ) -> CommitResult:
        """``Catalog.commit`` for one plan; returns when it has landed (perhaps with others)."""
        request = _Request(changes, author, message, extra_info, base_snapshot)
        with self._lock:
            self._queue.append(request)
            lead = not self._leading
            self._leading = True
        if not lead:
            request.done.wait()
        if lead or request.lead:
            self._lead(request)
        if request.error is not None:
            raise request.error
        assert request.result is not None
        return request.result

    def _lead(self, own: _Request) -> None:
        while not own.done.is_set() or own.lead:
            own.lead = False
            with self._lock:
                batch, self._queue = self._queue[: self._max], self._queue[self._max :]
            if batch:
                self._run(batch)
            with self._lock:
                if own.done.is_set() or not self._queue:
                    nxt = next((r for r in self._queue if not r.done.is_set()), None)
                    if nxt is None:
                        self._leading = False
                    else:
                        nxt.lead = True
                        nxt.done.set()  # wakes it as the leader; it has not landed yet
                    return

    def _run(self, batch: list[_Request]) -> None:
        if len(batch) > 1:
            try:
                result = self._commit(
                    [c for r in batch for c in r.changes],
                    author=batch[0].author,
                    message=merged_message([r.message for r in batch]),
                    extra_info=merged_extra_info([r.extra_info for r in batch]),
                    base_snapshot=min((r.base_snapshot for r in batch if r.base_snapshot is not None), default=None),
                )
            except CommitStateUnknown as exc:  # it may have landed: trying again alone could apply twice
                for r in batch:
                    r.error = exc
                    r.done.set()
                return
            except Exception:  # noqa: BLE001 - each plan is tried alone, so its own error reaches its caller
                pass
            else:
                for r in batch:
                    r.result = result
                    r.done.set()
                return
        for r in batch:
            try:
                r.result = self._commit(
                    r.changes, author=r.author, message=r.message, extra_info=r.extra_info,
                    base_snapshot=r.base_snapshot,
                )  # fmt: skip
            except Exception as exc:  # noqa: BLE001 - handed to the caller, raised there
                r.error = exc
            r.done.set()


def merged_message(messages: list[str]) -> str:
    return messages[0] if len(messages) == 1 else f"{len(messages)} plans:\n" + "\n".join(messages)


def merged_extra_info(infos: list[str | None]) -> str | None:
    """One JSON list of the plans' extra info (each a JSON object, or text)."""
    entries = [i for i in infos if i]
    if len(infos) == 1:
        return infos[0]

    def parse(text: str) -> Any:
        try:
            return json.loads(text)
        except ValueError:
            return text

    return json.dumps([parse(e) for e in entries], sort_keys=True) if entries else None
