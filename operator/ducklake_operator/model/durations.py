"""Durations in manifests and job parameters: ``30s``, ``30m``, ``12h``, ``7d``, ``2 weeks``."""

from __future__ import annotations

import re
from datetime import timedelta

from ..errors import SpecError

# Also the CRDs' pattern (Go's RE2 reads it), with case-insensitivity added there.
DURATION_PATTERN = r"^\s*(\d+)\s*(s|m|h|d|w|seconds?|minutes?|hours?|days?|weeks?)\s*$"
_DURATION = re.compile(DURATION_PATTERN, re.I)
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> timedelta:
    """``7d``, ``12h``, ``2 days``, ``1 week`` -> timedelta."""
    m = _DURATION.match(str(text))
    if not m:
        raise SpecError(f"{text!r} is not a duration like 7d, 12h or '2 days'")
    return timedelta(seconds=int(m.group(1)) * _UNIT[m.group(2)[0].lower()])
