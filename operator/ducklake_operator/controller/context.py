"""What the kopf handlers share, kept in the operator's memo: the catalog pool, the Secret
store, the wake-up signals, the worker threads, and the probes of unreachable catalogs.

Waiting is event-driven: a handler whose dependency is not there yet (its catalog is not
Ready, unreachable, its schema does not exist, its Secret lacks a key) notes the version of
its catalog's channel before it tries; after the failure is published it waits until that
channel moves (the catalog became Ready, a schema was created, the database came back, the
Secret changed) or a heartbeat that grows to a cap, whichever comes first. So a folder
applied at once converges in seconds, and an outage ends about a second after the database
returns, without every waiting object polling the database.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..errors import CatalogUnavailable, DuckLakeError
from .catalog_pool import CatalogPool
from .signals import Signals

log = logging.getLogger(__name__)
T = TypeVar("T")
HEARTBEAT_CAP = 30.0  # seconds a waiting handler sleeps at most before it tries again anyway
PROBE_INTERVAL = 1.0  # seconds between connection attempts to an unreachable catalog


def catalog_channel(namespace: str | None, name: str) -> Hashable:
    return ("catalog", namespace or "", name)


@dataclass
class Controller:
    pool: CatalogPool
    scrub: Callable[[str], str] = lambda text: text
    workers: int = 16
    signals: Signals = field(default_factory=Signals)
    waiting: dict[str, dict[Hashable, int]] = field(default_factory=dict)  # object uid -> channel versions seen
    _executor: ThreadPoolExecutor | None = None
    _stopping: bool = False
    _probes: dict[Hashable, asyncio.Task[None]] = field(default_factory=dict)

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.signals.bind(loop)
        self._executor = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="reconcile")

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run blocking catalog work on the worker threads. Once the operator is stopping, a
        handler or timer still running (kopf leaves a slow one orphaned at exit) is cancelled
        rather than failing on the closed pool; the next start redoes its work."""
        if self._stopping:
            raise asyncio.CancelledError("the operator is stopping")
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    # ------------------------------------------------------------------ waiting

    async def wait_if_blocked(self, uid: str, retry: int) -> None:
        """Before a retry of a handler that waits for a dependency: until the dependency's
        channel moves, or the heartbeat (1, 2, 4, ... up to 30 s)."""
        seen = self.waiting.pop(uid, None)
        if seen is not None:
            await self.signals.wait(seen, timeout=min(HEARTBEAT_CAP, 2.0 ** max(retry - 1, 0)))

    def note(self, channels: list[Hashable]) -> dict[Hashable, int]:
        return self.signals.versions(channels)

    def block(self, uid: str, seen: dict[Hashable, int]) -> None:
        self.waiting[uid] = seen

    def forget(self, uid: str) -> None:
        self.waiting.pop(uid, None)

    # ------------------------------------------------------------------ outages

    def probe(self, channel: Hashable, attempt: Callable[[], object]) -> None:
        """Start (once) a probe that retries ``attempt`` every second in a worker thread and
        notifies ``channel`` when it stops failing with CatalogUnavailable."""
        if channel in self._probes and not self._probes[channel].done():
            return
        self._probes[channel] = asyncio.get_running_loop().create_task(self._probe(channel, attempt))

    async def _probe(self, channel: Hashable, attempt: Callable[[], object]) -> None:
        while True:
            await asyncio.sleep(PROBE_INTERVAL)
            try:
                await self.call(attempt)
            except CatalogUnavailable:
                continue
            except DuckLakeError:
                pass  # reachable, but something else is wrong: the handlers will say what
            except Exception:  # noqa: BLE001 - a probe must not die; the handlers report errors
                log.exception("probing %s failed", channel)
            log.info("%s is reachable again", channel)
            self.signals.notify(channel)
            return

    async def stop(self) -> None:
        self._stopping = True
        for task in self._probes.values():
            task.cancel()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
        self.pool.close()
