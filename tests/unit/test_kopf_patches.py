"""kopf's ToggleSet as ``controller.kopf_patches`` leaves it: waiters on the set wake when its
state changes, not on every toggle added or dropped (index pre-population at start was
quadratic in the objects), and waiters on one toggle still wake when it turns."""

from __future__ import annotations

import asyncio

from kopf._cogs.aiokits import aiotoggles

from ducklake_operator.controller import kopf_patches


def test_the_patch_applies_to_this_kopf() -> None:
    assert kopf_patches.install() and kopf_patches.install()  # idempotent


def test_index_pre_population_wakes_the_waiters_once() -> None:
    kopf_patches.install()

    async def scenario() -> tuple[int, list[bool]]:
        indexed = aiotoggles.ToggleSet(all)
        wakeups = 0
        notify_all = indexed._condition.notify_all

        def counted() -> None:
            nonlocal wakeups
            wakeups += 1
            notify_all()

        indexed._condition.notify_all = counted  # type: ignore[method-assign]
        toggles = [await indexed.make_toggle(name=f"object {i}") for i in range(200)]
        waiters = [asyncio.create_task(indexed.wait_for(True)) for _ in range(200)]
        await asyncio.sleep(0)
        for toggle in toggles[:-1]:
            await indexed.drop_toggle(toggle)
        await asyncio.sleep(0)
        before_last = [w.done() for w in waiters]
        await indexed.drop_toggle(toggles[-1])
        await asyncio.wait_for(asyncio.gather(*waiters), timeout=5)
        return wakeups, before_last

    wakeups, before_last = asyncio.run(scenario())
    assert not any(before_last)  # nobody went on while an object was not indexed
    assert wakeups == 2  # the first toggle (the empty set was on) and the last drop; kopf: 400


def test_paused_and_resumed_as_before() -> None:
    """The peering pause (``ToggleSet(any)``): a conflict's toggle turned on pauses, off
    resumes; a dropped toggle resumes too."""
    kopf_patches.install()

    async def scenario() -> list[bool]:
        paused = aiotoggles.ToggleSet(any)
        conflict = await paused.make_toggle(True, name="conflict")
        resumed = asyncio.create_task(paused.wait_for(False))
        await asyncio.sleep(0)
        seen = [resumed.done()]
        await conflict.turn_to(False)
        await asyncio.wait_for(resumed, timeout=5)
        other = await paused.make_toggle(True, name="another")
        pausing_again = asyncio.create_task(paused.wait_for(False))
        await asyncio.sleep(0)
        seen.append(pausing_again.done())
        await paused.drop_toggle(other)
        await asyncio.wait_for(pausing_again, timeout=5)
        seen.append(paused.is_on())
        return seen

    assert asyncio.run(scenario()) == [False, False, False]
