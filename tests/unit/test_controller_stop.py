"""The controller at the operator's exit: work that arrives after ``stop`` is cancelled (kopf
leaves a slow timer running past the cleanup handlers; it found the thread pool shut down
and logged a RuntimeError traceback at every exit)."""

from __future__ import annotations

import asyncio

import pytest

from ducklake_operator.controller.catalog_pool import CatalogPool
from ducklake_operator.controller.context import Controller


def test_work_after_stop_is_cancelled_not_failed() -> None:
    async def scenario() -> None:
        ctl = Controller(pool=CatalogPool())
        ctl.start(asyncio.get_running_loop())
        assert await ctl.call(sum, [1, 2]) == 3
        await ctl.stop()
        with pytest.raises(asyncio.CancelledError):
            await ctl.call(sum, [1, 2])

    asyncio.run(scenario())
