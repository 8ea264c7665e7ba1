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
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class S3Server:
    process: subprocess.Popen
    endpoint: str
    log: str  # the server's output

    @property
    def env(self) -> dict[str, str]:
        return {
            "AWS_ACCESS_KEY_ID": "test-key",
            "AWS_SECRET_ACCESS_KEY": "test-secret",
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": self.endpoint,
        }

    @classmethod
    def start(cls) -> S3Server:
        binary = os.environ.get("DUCKLAKE_MOTO_SERVER") or os.path.join(
            ROOT, ".tools", "moto-5.2.5", "bin", "moto_server"
        )
        if not os.path.exists(binary):
            raise RuntimeError(f"moto_server not found at {binary}: run scripts/setup")
        port = _free_port()
        # its log (a line per request) to a file: a pipe nobody reads fills up after a few
        # hundred requests, and then every request thread blocks writing its log line
        log = tempfile.NamedTemporaryFile(prefix="moto-", suffix=".log", delete=False)
        process = subprocess.Popen([binary, "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=log)
        log.close()
        endpoint = f"http://127.0.0.1:{port}"
        deadline = time.time() + 30
        while True:
            try:
                urllib.request.urlopen(endpoint + "/moto-api/", timeout=1)
                return cls(process, endpoint, log.name)
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
