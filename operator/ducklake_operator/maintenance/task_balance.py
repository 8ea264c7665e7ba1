"""How a job's file groups share the cores: pure arithmetic over their sizes.

A job's tasks run a few at a time (one per core in-process, per task slot on Spark) and its
last wave is only as short as its largest task: ingest's groups of "up to 64 MB, files never
split" made 10 files of 21 MB into 3+3+3+1 files, and on 2 cores the last 3-file group ran
alone while the 1-file group had long ended (1.04 s of tasks where 0.87 s do the same work).
So groups are cut to about equal sizes, as many as a whole number of waves needs, and the
largest run first (longest-processing-time-first scheduling), wherever they came from.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def balanced_runs(sizes: Sequence[int], cap: int, parallelism: int = 1) -> list[range]:
    """Cut the items (files, in order, never split) into consecutive runs of about equal
    total size: as many runs as items of ``cap`` would fill (at least one), rounded up to a
    multiple of ``parallelism`` when there is more than one, so no wave of tasks is left
    half empty; each item goes to the run its middle falls in. A run holds at least one
    item; an item larger than a run's share is a run of its own."""
    if not sizes:
        return []
    total = sum(max(0, s) for s in sizes)
    runs = max(1, math.ceil(total / cap)) if cap > 0 else len(sizes)
    if runs > 1 and parallelism > 1:
        runs = math.ceil(runs / parallelism) * parallelism
    runs = min(runs, len(sizes))
    if total == 0:
        share = len(sizes) / runs
        index = [min(runs - 1, int(i / share)) for i in range(len(sizes))]
    else:
        index, before = [], 0
        for s in sizes:
            s = max(0, s)
            index.append(min(runs - 1, int(runs * (before + s / 2) / total)))
            before += s
    out: list[range] = []
    start = 0
    for i in range(1, len(sizes) + 1):
        if i == len(sizes) or index[i] != index[start]:
            out.append(range(start, i))
            start = i
    return out


def largest_first(sizes: Sequence[int]) -> list[int]:
    """The items' indexes in the order to start them: largest first, equal ones in their
    own order."""
    return sorted(range(len(sizes)), key=lambda i: -sizes[i])
