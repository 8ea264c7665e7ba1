"""The operator-wide startup and cleanup: kopf's persistence settings, the ``Controller``
(worker threads, the catalog pool, the wake-up signals) and the Secret store, made once and
kept on kopf's memo; closed at the end."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import kopf

from .catalog_pool import CatalogPool
from .context import Controller
from .credentials import SecretStore
from .handling import secret_channel
from .kube_clients import core_api


@kopf.on.startup()
async def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    # kopf's bookkeeping (handler progress, the last handled spec) in status.kopf: written in
    # the same request as our status, where annotations would cost one more per change
    settings.persistence.progress_storage = kopf.StatusProgressStorage(field="status.kopf.progress")
    settings.persistence.diffbase_storage = kopf.StatusDiffBaseStorage(field="status.kopf.lastHandledConfiguration")
    # Our own events only (applied, blocked, drifted, failures): kopf would post one more
    # per handler run ("Handler ... succeeded"), an API write per object per timer tick.
    settings.posting.loggers = False
    if "controller" not in memo:
        controller: Controller

        def secret_changed(key: tuple[str, str]) -> None:
            controller.signals.notify(secret_channel(*key))

        store = SecretStore(core_api, on_change=secret_changed)
        controller = Controller(
            pool=CatalogPool(credentials=store.read),
            scrub=store.scrub,
            workers=int(os.environ.get("DUCKLAKE_WORKERS", "16")),  # more threads, bigger merged commits
        )
        memo.controller = controller
        memo.secrets = store
    memo.controller.start(asyncio.get_running_loop())
    # the kubernetes client (Secrets, status writes, runs) is loaded now, once: left to the first
    # reconciles of a resync, every worker thread waited on its import lock
    await memo.controller.call(core_api)


@kopf.on.cleanup()
async def close_catalogs(memo: kopf.Memo, **_: Any) -> None:
    if "controller" in memo:
        memo.secrets.stop()
        await memo.controller.stop()
