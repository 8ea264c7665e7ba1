"""One change to kopf's internals, for restarts with many objects.

At start, kopf holds every object's handlers until all index handlers have seen all objects
(index pre-population): a ``ToggleSet(all)`` with one toggle per object of an indexed
resource (ours: every DuckLakeTable, for ``table_manifests``). Each object's worker drops its
toggle once indexed and then waits on the set. kopf's ``ToggleSet`` wakes every waiter on
every toggle added or dropped, though the set's state (all on or not) has not changed. So N
objects cost about N²/2 wake-ups, each re-taking the set's lock, on the event loop. At
1,000 tables that was 4.6 s of a 6.4 s restart resync, before the first handler ran.

Here the set wakes its waiters only when its state changes. A waiter on the set waits for a
state, so it misses nothing. A waiter on one toggle is woken by that toggle's own
``turn_to``, which is left as kopf wrote it. ``install`` checks that kopf's ``ToggleSet``
still has the shape this was written against (kopf 1.45). If it does not, kopf is left as it
is, and the cost is only speed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

log = logging.getLogger(__name__)

_PATCHED = "_ducklake_wakes_on_change"


def install() -> bool:
    """Make ``kopf``'s ``ToggleSet`` wake its waiters only when its state changes; False
    (kopf untouched) when its ``ToggleSet`` is not the one this was written for."""
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
