"""Two changes to kopf's internals, for many objects.

**Index pre-population wakes its waiters once.** At start, kopf holds every object's handlers
until all index handlers have seen all objects (index pre-population): a ``ToggleSet(all)``
with one toggle per object of an indexed resource (ours: every DuckLakeTable, for
``table_manifests``). Each object's worker drops its toggle once indexed and then waits on
the set. kopf's ``ToggleSet`` wakes every waiter on every toggle added or dropped, though
the set's state (all on or not) has not changed. So N objects cost about N²/2 wake-ups, each
re-taking the set's lock, on the event loop. At 1,000 tables that was 4.6 s of a 6.4 s
restart resync, before the first handler ran. Here the set wakes its waiters only when its
state changes. A waiter on the set waits for a state, so it misses nothing. A waiter on one
toggle is woken by that toggle's own ``turn_to``, which is left as kopf wrote it.

**Watched objects come without ``metadata.managedFields``.** The API server sends every
object with its field managers (server-side apply's bookkeeping: a tree of every field each
manager set), which neither kopf nor a handler reads: 6.8 KB of a Ready DuckLakeTable's
15.9 KB of Python objects, as read from the API server. kopf holds each object's last
event while the object waits for a worker, for index pre-population or for its batch
window: at a restart, every object at once.

``install`` checks that kopf still has the shape this was written against (kopf 1.45). If it
does not, kopf is left as it is, and the cost is only speed or memory.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

log = logging.getLogger(__name__)

_PATCHED = "_ducklake_wakes_on_change"


def install() -> bool:
    """Both changes; False when kopf is not the one they were written for (then, for each
    that does not fit, kopf is left untouched)."""
    woken = _wake_on_state_change()
    trimmed = _watch_without_managed_fields()
    return woken and trimmed


def _wake_on_state_change() -> bool:
    """Make ``kopf``'s ``ToggleSet`` wake its waiters only when its state changes."""
    try:
        from kopf._cogs.aiokits import aiotoggles
    except ImportError:
        return False
    cls: Any = aiotoggles.ToggleSet
    if getattr(cls, _PATCHED, False):
        return True
    probe = cls(all)
    if not all(hasattr(probe, a) for a in ("_condition", "_toggles", "_fn", "is_on")) or not all(
        hasattr(cls, m) for m in ("make_toggle", "drop_toggle", "drop_toggles")
    ):
        log.warning("kopf's ToggleSet changed; leaving it as it is (restarts with many objects may be slower)")
        return False

    async def make_toggle(self: Any, __val: bool = False, *, name: str | None = None) -> Any:
        toggle = aiotoggles.Toggle(__val, name=name, condition=self._condition)
        async with self._condition:
            before = self.is_on()
            self._toggles.add(toggle)
            _wake_if_changed(self, before)
        return toggle

    async def drop_toggle(self: Any, toggle: Any) -> None:
        async with self._condition:
            before = self.is_on()
            self._toggles.discard(toggle)
            _wake_if_changed(self, before)

    async def drop_toggles(self: Any, toggles: Iterable[Any]) -> None:
        async with self._condition:
            before = self.is_on()
            self._toggles.difference_update(toggles)
            _wake_if_changed(self, before)

    cls.make_toggle, cls.drop_toggle, cls.drop_toggles = make_toggle, drop_toggle, drop_toggles
    setattr(cls, _PATCHED, True)
    return True


def _wake_if_changed(toggles: Any, before: bool) -> None:
    if toggles.is_on() != before:
        toggles._condition.notify_all()


def without_managed_fields(event: Any) -> Any:
    """A watch event (or kopf's bookmark marker) with its object's ``managedFields`` dropped."""
    if isinstance(event, dict):
        meta = (event.get("object") or {}).get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)
    return event


def _watch_without_managed_fields() -> bool:
    """Wrap kopf's ``continuous_watch`` (the listing and the watch of one resource, which
    ``infinite_watch`` calls by its module's name) to drop each object's managedFields."""
    try:
        from kopf._cogs.clients import watching
    except ImportError:
        return False
    original: Callable[..., AsyncIterator[Any]] = watching.continuous_watch
    if getattr(original, _PATCHED, False):
        return True
    if not inspect.isasyncgenfunction(original) or "continuous_watch(" not in inspect.getsource(
        watching.infinite_watch
    ):
        log.warning("kopf's watch changed; leaving it as it is (objects are held with their managedFields)")
        return False

    async def continuous_watch(**kwargs: Any) -> AsyncIterator[Any]:
        async with contextlib.aclosing(original(**kwargs)) as events:
            async for event in events:
                yield without_managed_fields(event)

    setattr(continuous_watch, _PATCHED, True)
    watching.continuous_watch = continuous_watch
    return True
