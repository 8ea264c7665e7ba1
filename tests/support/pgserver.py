"""A throwaway PostgreSQL 15 server for the test session (real server, not a mock).

The server refuses to run as root, so when we are root it runs as the ``postgres`` user
through ``runuser``. Data lives in a temporary directory; the port is a free loopback
port; ``stop()`` shuts it down and removes the directory.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not candidates:
        raise RuntimeError(f"PostgreSQL binary {name!r} not found; install postgresql (15)")
    return candidates[-1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class PgServer:
    directory: str
    port: int
    user: str = "postgres"
    host: str = "127.0.0.1"

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = list(args)
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, check=True, capture_output=True, text=True)

    @classmethod
    def start(cls) -> PgServer:
        directory = tempfile.mkdtemp(prefix="ducklake-pg-")
        os.chmod(directory, 0o755)
        if os.geteuid() == 0:
            shutil.chown(directory, "postgres", "postgres")
        server = cls(directory=directory, port=free_port())
        data = os.path.join(directory, "data")
        server._run(_binary("initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        server._run(
            _binary("pg_ctl"),
            "-D",
            data,
            "-w",
            "-l",
            os.path.join(directory, "log"),
            "-o",
            f"-p {server.port} -k {directory} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c max_connections=200 -c synchronous_commit=off",
            "start",
        )
        return server

    def stop(self) -> None:
        try:
            self._run(_binary("pg_ctl"), "-D", os.path.join(self.directory, "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    def create_database(self, name: str) -> None:
        import psycopg2

        conn = psycopg2.connect(host=self.host, port=self.port, user=self.user, dbname="postgres")
        conn.autocommit = True
        try:
            conn.cursor().execute(f'CREATE DATABASE "{name}"')
        finally:
            conn.close()

    def wait_ready(self, timeout: float = 10) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                socket.create_connection((self.host, self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("PostgreSQL did not start")
