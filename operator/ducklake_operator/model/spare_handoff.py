"""How the Local launcher hands a run to a warm spare (``ducklake_jobs.spare``): one JSON
line on the spare's stdin, the run document's path and the run's credentials."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

RUN_FILE, ENV = "runFile", "env"


@dataclass(frozen=True)
class Handoff:
    run_file: str
    env: dict[str, str]  # added to the spare's environment: what it could not have before its run


def handoff_line(handoff: Handoff) -> str:
    return json.dumps({RUN_FILE: handoff.run_file, ENV: handoff.env}) + "\n"


def parse_handoff(line: str) -> Handoff | None:
    """The handoff a line holds; None for an empty one (the end of input: no run comes)."""
    if not line.strip():
        return None
    raw: Mapping[str, Any] = json.loads(line)
    return Handoff(str(raw[RUN_FILE]), {str(k): str(v) for k, v in dict(raw.get(ENV) or {}).items()})
