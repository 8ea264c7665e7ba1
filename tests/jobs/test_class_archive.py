"""A local Spark session's JVM archives the classes it loaded when it exits, once per java and
Spark (``class_archive``), and later sessions start from that archive; one that cannot be
mapped is left alone. Real JVMs, each in a process of its own (the test run's shared session
has its own archive), with a cache directory of the test's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

# a session's JVM: its SharedArchiveFile option (HotSpot's own view of it), and a task's result
CHILD = """
import json
from ducklake_jobs.session import spark_context
context = spark_context("local[1]")
jvm = context._jvm
bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
    jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
print(json.dumps({"archive": bean.getVMOption("SharedArchiveFile").getValue(),
                  "result": context.parallelize([1, 2], 2).map(lambda x: x * 10).collect()}))
"""


def session_in_a_process(cache: Path) -> dict[str, Any]:
    env = {**os.environ, "DUCKLAKE_CACHE_DIR": str(cache), "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_the_first_session_archives_its_classes_and_the_next_ones_map_them(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = session_in_a_process(cache)
    archives = sorted(cache.iterdir())
    assert first == {"archive": "", "result": [10, 20]}  # dumped at its exit, not mapped
    assert len(archives) == 1 and archives[0].suffix == ".jsa" and archives[0].stat().st_size > 0, archives

    second = session_in_a_process(cache)
    assert second == {"archive": str(archives[0]), "result": [10, 20]}
    assert sorted(cache.iterdir()) == archives  # nothing dumped again

    archives[0].chmod(0o600)
    archives[0].write_bytes(b"not an archive")  # a corrupt archive: the JVM starts without it
    assert session_in_a_process(cache)["result"] == [10, 20]
