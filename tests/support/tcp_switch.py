"""A TCP forwarder that can be switched off and on: a database outage without stopping the
database. Off closes every open connection and refuses new ones (nothing listens on the
port); on listens on the same port again."""

from __future__ import annotations

import socket
import threading


class TcpSwitch:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self.on()

    def on(self) -> None:
        with self._lock:
            if self._listener is not None:
                return
            listener = socket.socket()
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", self.port))
            listener.listen(64)
            self.port = listener.getsockname()[1]
            self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def off(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._open = self._open, []
        if listener is not None:
            listener.close()
        for s in sockets:
            _close(s)

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # switched off
            try:
                server = socket.create_connection(self.target)
            except OSError:
                _close(client)
                continue
            with self._lock:
                if self._listener is not listener:
                    _close(client)
                    _close(server)
                    return
                self._open += [client, server]
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        _close(src)
        _close(dst)


def _close(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()
