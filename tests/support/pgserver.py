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
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg2.extensions

Wrap = Callable[[list[str]], list[str]]


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

    def _run(self, *args: str, wrap: Wrap | None = None) -> subprocess.CompletedProcess[str]:
        cmd = list(args)
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run((wrap or list)(cmd), check=True, capture_output=True, text=True)

    @classmethod
    def start(cls, listen: str = "127.0.0.1", port: int | None = None, wrap: Wrap | None = None) -> PgServer:
        """``wrap``: the server's command line made to run elsewhere (a test node's network:
        ``KubeNode.nsenter``), listening on ``listen``; the tests then connect through its
        unix socket (``host`` is its directory)."""
        directory = tempfile.mkdtemp(prefix="ducklake-pg-")
        os.chmod(directory, 0o755)
        if os.geteuid() == 0:
            shutil.chown(directory, "postgres", "postgres")
        server = cls(directory=directory, port=port or free_port(), host=directory if wrap else listen)
        data = os.path.join(directory, "data")
        server._run(_binary("initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        if wrap is not None:  # elsewhere, every TCP client gives its password; the tests' socket is trusted
            with open(os.path.join(data, "pg_hba.conf"), "r+") as fh:
                rules = fh.read()
                fh.seek(0)
                fh.write(f"host all all all scram-sha-256\n{rules}")
        server._run(
            _binary("pg_ctl"),
            "-D",
            data,
            "-w",
            "-l",
            os.path.join(directory, "log"),
            "-o",
            f"-p {server.port} -k {directory} -c listen_addresses={listen} -c fsync=off "
            "-c max_connections=200 -c synchronous_commit=off",
            "start",
            wrap=wrap,
        )
        return server

    def stop(self) -> None:
        try:
            self._run(_binary("pg_ctl"), "-D", os.path.join(self.directory, "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    def create_database(self, name: str, owner: str | None = None, icu_locale: str | None = None) -> None:
        """``icu_locale``: the database's collation (e.g. ``tr-TR``), from ICU."""
        options = f' OWNER "{owner}"' if owner else ""
        if icu_locale:
            options += f" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE '{icu_locale}' LOCALE 'C.UTF-8'"
        conn = self._superuser()
        try:
            conn.cursor().execute(f'CREATE DATABASE "{name}"{options}')
        finally:
            conn.close()

    def _superuser(self) -> psycopg2.extensions.connection:
        import psycopg2

        conn = psycopg2.connect(host=self.host, port=self.port, user=self.user, dbname="postgres")
        conn.autocommit = True
        return conn

    def create_password_role(self, role: str, password: str) -> None:
        """A login role that must give its password (scram-sha-256).

        The server trusts every local connection (``initdb -A trust``), so a ``host`` line for
        this role alone goes first in pg_hba.conf (the first matching line wins); every other
        role is still trusted."""
        conn = self._superuser()
        try:
            cur = conn.cursor()
            cur.execute(f'CREATE ROLE "{role}" LOGIN PASSWORD %s', (password,))
            if self.host.startswith("/"):
                return  # a server elsewhere: TCP needs passwords already, and the socket is trusted
            hba = os.path.join(self.directory, "data", "pg_hba.conf")
            with open(hba, "r+") as fh:  # rewritten in place: the file keeps its owner
                rules = fh.read()
                fh.seek(0)
                fh.write(f"host all {role} {self.host}/32 scram-sha-256\n{rules}")
            cur.execute("SELECT pg_reload_conf()")
        finally:
            conn.close()
        self._wait_until_password_needed(role)

    def _wait_until_password_needed(self, role: str, timeout: float = 10) -> None:
        """The server rereads pg_hba.conf after the reload signal, not at once."""
        import psycopg2

        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                psycopg2.connect(host=self.host, port=self.port, user=role, dbname="postgres").close()
            except psycopg2.OperationalError as exc:
                if "password" in str(exc):
                    return
                raise
            time.sleep(0.05)
        raise RuntimeError(f"PostgreSQL still trusts {role} after reloading pg_hba.conf")

    def wait_ready(self, timeout: float = 10) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                socket.create_connection((self.host, self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("PostgreSQL did not start")
