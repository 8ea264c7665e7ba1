"""Local launchers of test programs (real child processes) and their attempts: programs that
run while a file exists, a state directory of the test's, a new launcher per call as after an
operator restart."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from ducklake_operator.controller.launchers.local import LocalLauncher
from ducklake_operator.controller.launchers.spec import Launched, LaunchSpec, launch_spec

# waits while its file exists (the run file's directory is the launcher's state directory)
HOLD = "import os, sys, time\nwhile os.path.exists(os.environ['HOLD_FILE']): time.sleep(0.02)"


def attempt(name: str, uid: str) -> LaunchSpec:
    return launch_spec(job_name=name, namespace="data", uid=uid, attempt=1, run_document={"job": {"uid": uid}},
                       spark={"launcher": "Local"}, env_from_secrets=[], timeout_seconds=None, env={})  # fmt: skip


def launcher_of(tmp_path: Path, program: str, **settings: Any) -> LocalLauncher:
    """A launcher (a new one per call, as after an operator restart) of ``python -c program``,
    ``HOLD_FILE`` being ``tmp_path/hold``; state in ``tmp_path/runs``."""
    return LocalLauncher(lambda *_: "", state_dir=str(tmp_path / "runs"), program=(sys.executable, "-c", program),
                         env={"HOLD_FILE": str(tmp_path / "hold"), "PATH": os.environ["PATH"]}, **settings)  # fmt: skip


def holding(tmp_path: Path, **settings: Any) -> LocalLauncher:
    """``launcher_of`` programs that run while ``tmp_path/hold`` exists."""
    return launcher_of(tmp_path, HOLD, **settings)


def ended(launcher: LocalLauncher, launched: Launched, timeout: float = 30) -> str:
    deadline = time.time() + timeout
    while (state := launcher.observe(launched).state) == "Running" and time.time() < deadline:
        time.sleep(0.02)
    return state
