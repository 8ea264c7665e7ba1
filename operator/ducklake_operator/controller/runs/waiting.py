"""What a run waits for before it may take its locks: its policy's window, the run holding
its table, a slot among the catalog's ``maxJobsPerCatalog``; decided from the controller's
own view of the catalog's runs, so waiting costs no API call (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

from ...api.v1alpha1.job import JobSpec
from ...maintenance.windows import closed_until, describe_instant, describe_window, in_window, window_zone
from ...model.names import fold
from .run_context import PolicyWindow, RunContext
from .tick import parse_stamp


def window_wait(policy: PolicyWindow | None, now: float) -> str | None:
    """What a run created by a policy with a window waits for while the window is closed
    (None: it may start): nothing starts outside the window, neither a first attempt nor a
    retry, however long the run waited for its table or a slot inside it."""
    if policy is None:
        return None
    opens = closed_until(policy.window, datetime.fromtimestamp(now, UTC))
    if opens is None:
        return None
    return (f"the maintenance window {describe_window(policy.window)} of DuckLakeMaintenancePolicy {policy.name}, "
            f"closed until {describe_instant(opens, window_zone(policy.window))}")  # fmt: skip


def waits_for(spec: JobSpec, uid: str, ctx: RunContext, now: float, *, holding: bool = False) -> str | None:
    """What the controller's own view of the catalog's runs says a run waits for (None: try
    the Leases), so waiting runs cost no API calls; the Leases decide when this says go.
    ``holding``: the run has taken its Leases (its status lists them) and not launched yet:
    it waits only for its window, since the Leases have decided the rest (a run created
    before it, due since, would otherwise count as ahead for the slot it holds, and each
    wait for the other).
    A run of a policy whose window is closed waits for it to open (``window_wait``). A run
    waits for the run holding its table (a catalog-wide run: the catalog-wide one), and for
    a slot when the runs holding slots and the runs waiting for one, created before it, fill
    ``maxJobsPerCatalog``; a run waiting for a table, a retry or its window does not count
    as ahead."""
    closed = window_wait(ctx.windows.get(ctx.policy or ""), now)
    if closed is not None or holding:
        return closed
    others = [o for o in ctx.others if o.uid != uid]
    held = {fold(o.table) if o.table else "*": o for o in others if o.holds}
    holder = held.get(fold(spec.table) if spec.table else "*")
    if holder is not None:
        what = f"table {spec.table}" if spec.table else f"catalog-wide maintenance of {spec.catalog}"
        return f"DuckLakeJob {holder.name}, which holds {what}"
    if not ctx.max_jobs:
        return None
    running = sum(1 for o in others if o.holds)
    ahead = sum(
        1
        for o in others
        if not o.holds
        and (o.created, o.name) < (ctx.created, spec.ref.name)
        and (fold(o.table) if o.table else "*") not in held
        and (parse_stamp(o.retry_at) or 0) <= now
        and _window_open(ctx.windows.get(o.policy or ""), now)
    )
    if running + ahead < ctx.max_jobs:
        return None
    return (f"a slot in catalog {spec.catalog}: {running} of {ctx.max_jobs} runs (maxJobsPerCatalog) running, "
            f"{ahead} waiting before this one")  # fmt: skip


def _window_open(policy: PolicyWindow | None, now: float) -> bool:
    return policy is None or in_window(policy.window, datetime.fromtimestamp(now, UTC))
