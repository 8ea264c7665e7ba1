"""A TCP proxy in front of the real PostgreSQL server that loses a commit's COMMIT.

Armed with a mode, it watches each client connection for the transaction that inserts a
DuckLake snapshot row (or sends another marker) and, at its ``COMMIT`` (a simple-protocol
``Q`` message, as psycopg2 sends it):

* ``before``: closes both sides without forwarding it (the server aborts);
* ``after``: forwards it, then closes both sides before the reply (the server commits; the
  client cannot know);
* ``partition``: closes the client side only and keeps the server side open without
  forwarding anything (a network partition: the server process waits in the transaction).

Only the first such COMMIT after arming is lost; everything else passes through.
"""

from __future__ import annotations

import socket
import threading
from typing import Literal

Mode = Literal["before", "after", "partition"]
COMMIT = b"Q\x00\x00\x00\x0bCOMMIT\x00"
SNAPSHOT_INSERT = b"ducklake_snapshot (snapshot_id"  # the INSERT of a snapshot row (any schema prefix)
ROLLBACK = b"Q\x00\x00\x00\rROLLBACK\x00"


class PgFaultProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.mode: Mode | None = None
        self.marker = SNAPSHOT_INSERT
        self.fired = threading.Event()
        self._lock = threading.Lock()
        self._held: list[socket.socket] = []  # server sides kept open by "partition"
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, mode: Mode, marker: bytes = SNAPSHOT_INSERT) -> None:
        self.fired.clear()
        self.marker = marker
        self.mode = mode

    def close(self) -> None:
        self.listener.close()
        for s in self._held:
            s.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()

    def _take(self) -> Mode | None:
        with self._lock:
            mode, self.mode = self.mode, None
            return mode

    def _pump(self, src: socket.socket, dst: socket.socket, from_client: bool) -> None:
        in_snapshot_commit = False
        tail = b""
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if from_client and self.mode is not None:
                    seen = tail + data
                    in_snapshot_commit = (in_snapshot_commit or self.marker in seen) and ROLLBACK not in data
                    if in_snapshot_commit and COMMIT in seen:
                        mode = self._take()
                        if mode is not None:
                            self._lose(mode, data, src, dst)
                            return
                    tail = seen[-64:]
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                if s not in self._held:
                    try:
                        s.close()
                    except OSError:
                        pass

    def _lose(self, mode: Mode, data: bytes, client: socket.socket, server: socket.socket) -> None:
        self.fired.set()
        at = max(data.find(COMMIT), 0)  # 0 when it began in the previous read
        if at > 0:
            server.sendall(data[:at])  # what came before the COMMIT in the same read
        self._close(client)  # first, so that no reply can reach the client
        if mode == "after":
            server.sendall(data[at:])
        if mode == "partition":
            self._held.append(server)
        else:
            self._close(server)

    @staticmethod
    def _close(s: socket.socket) -> None:
        try:  # the other direction's pump may have closed it already
            s.shutdown(socket.SHUT_RDWR)
            s.close()
        except OSError:
            pass
