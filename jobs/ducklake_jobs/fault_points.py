"""The test seam for faults: named points in a job where a test may hold it or kill it."""

from __future__ import annotations

import os
import time


def fault_point(name: str) -> None:
    """Test seam: with DUCKLAKE_FAULT_PAUSE=<name>, announce the point in DUCKLAKE_FAULT_MARKER
    and hang there while that file exists (10 minutes at most), so a test can SIGKILL the job
    exactly here, or hold it and let it go on by deleting the file. Inert otherwise."""
    if os.environ.get("DUCKLAKE_FAULT_PAUSE") == name:
        marker = os.environ["DUCKLAKE_FAULT_MARKER"]
        with open(marker, "w") as fh:
            fh.write(name)
        until = time.monotonic() + 600
        while os.path.exists(marker) and time.monotonic() < until:
            time.sleep(0.05)
