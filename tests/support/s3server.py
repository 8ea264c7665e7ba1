"""moto's standalone S3 server on loopback: a real S3 API (HTTP, signatures, multipart,
listings) for the s3:// tests. It runs from its own venv made by scripts/setup
(``DUCKLAKE_MOTO_SERVER``), because botocore pins a python-dateutil the kubernetes client
cannot use. If it cannot start, the tests that need it error (nothing is skipped)."""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class S3Server:
    process: subprocess.Popen
    endpoint: str  # where the tests reach it
    log: str  # the server's output
    served_at: str = ""  # where it listens (a test node's address), if not at ``endpoint``

    @property
    def env(self) -> dict[str, str]:
        return {
            "AWS_ACCESS_KEY_ID": "test-key",
            "AWS_SECRET_ACCESS_KEY": "test-secret",
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": self.endpoint,
        }

    @classmethod
    def start(
        cls, listen: str = "127.0.0.1", wrap: Callable[[list[str]], list[str]] | None = None,
        forward: Callable[[int], int] | None = None,
    ) -> S3Server:  # fmt: skip
        """``wrap``: the server's command line made to run elsewhere (a test node's network:
        ``KubeNode.nsenter``), listening on ``listen``; ``forward`` gives the port on this
        machine's loopback that reaches the server's port there (``KubeNode.forward``)."""
        binary = os.environ.get("DUCKLAKE_MOTO_SERVER") or os.path.join(
            ROOT, ".tools", "moto-5.2.5", "bin", "moto_server"
        )
        if not os.path.exists(binary):
            raise RuntimeError(f"moto_server not found at {binary}: run scripts/setup")
        port = _free_port()
        # its log (a line per request) to a file: a pipe nobody reads fills up after a few
        # hundred requests, and then every request thread blocks writing its log line
        log = tempfile.NamedTemporaryFile(prefix="moto-", suffix=".log", delete=False)
        process = subprocess.Popen((wrap or list)([binary, "-H", listen, "-p", str(port)]), stdout=log, stderr=log)
        log.close()
        endpoint = f"http://127.0.0.1:{forward(port) if forward else port}"
        served_at = f"http://{listen}:{port}" if forward else ""
        deadline = time.time() + 30
        while True:
            try:
                urllib.request.urlopen(endpoint + "/moto-api/", timeout=1)
                return cls(process, endpoint, log.name, served_at)
            except OSError:
                if process.poll() is not None or time.time() > deadline:
                    process.kill()
                    with open(log.name, errors="replace") as fh:
                        raise RuntimeError(f"moto_server did not start: {fh.read()[-4000:]}") from None
                time.sleep(0.1)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # a loaded machine: werkzeug may not get to its signal handler
            self.process.kill()
            self.process.wait()
        os.unlink(self.log)
