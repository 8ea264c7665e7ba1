"""Wake-ups between objects, so dependents converge when their dependency changes instead of
after a fixed retry delay.

A *channel* is a key (a catalog: ``("catalog", namespace, name)``; an object:
``("object", namespace, kind, name)``) with a version that grows on every notification.
A handler that must wait for something notes the version of the channels it depends on
*before* it tries, and after a failed try waits until any of them moves past that version,
or a heartbeat timeout. Notifications come from worker threads and from the event loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Hashable, Iterable

Channel = Hashable


class Signals:
    def __init__(self) -> None:
        self._versions: dict[Channel, int] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiters: dict[Channel, set[asyncio.Future[None]]] = {}  # touched on the loop only

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Attach to the operator's event loop (notifications from threads are handed to it)."""
        self._loop = loop

    def version(self, channel: Channel) -> int:
        with self._lock:
            return self._versions.get(channel, 0)

    def versions(self, channels: Iterable[Channel]) -> dict[Channel, int]:
        with self._lock:
            return {c: self._versions.get(c, 0) for c in channels}

    def notify(self, channel: Channel) -> None:
        """Bump ``channel`` and wake its waiters; safe from any thread."""
        with self._lock:
            self._versions[channel] = self._versions.get(channel, 0) + 1
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._wake, channel)

    def _wake(self, channel: Channel) -> None:
        for future in self._waiters.pop(channel, ()):
            if not future.done():
                future.set_result(None)

    def moved(self, seen: dict[Channel, int]) -> bool:
        with self._lock:
            return any(self._versions.get(c, 0) != v for c, v in seen.items())

    async def wait(self, seen: dict[Channel, int], timeout: float) -> bool:
        """Until a channel in ``seen`` moved past the version noted there (True), or
        ``timeout`` seconds (False). Runs on the bound loop."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for channel in seen:
            self._waiters.setdefault(channel, set()).add(future)
        try:
            if self.moved(seen):  # moved before we registered: its wake-up may have gone already
                return True
            try:
                await asyncio.wait_for(future, timeout)
                return True
            except TimeoutError:
                return self.moved(seen)
        finally:
            for channel in seen:
                waiters = self._waiters.get(channel)
                if waiters is not None:
                    waiters.discard(future)
                    if not waiters:
                        del self._waiters[channel]
