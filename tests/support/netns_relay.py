"""TCP relays between the machine's network namespace and the test node's.

The test node (``support.kube_node``) lives in a network namespace of its own, with no
route out, so that nothing it does reaches the machine's network. What must cross runs
through this program, which holds sockets in both namespaces (``setns`` is per thread: a
socket belongs to the namespace its thread was in when it was made):

* ``--forward ns:IP:PORT=host:IP:PORT``: pods reach a server of the machine (the API
  server, on 127.0.0.1) at an address of the node's network;
* ``--forward host:IP:PORT=ns:IP:PORT``: the tests reach a server inside the node's
  network (port 0 on the host side: a free one, reported);
* ``--connect-proxy PATH``: an HTTP CONNECT proxy on a unix socket whose connections are
  made inside the node's namespace: the API server's egress to the cluster (kubelet logs
  and exec, webhooks, service proxies), as konnectivity's proxy server does it.

Prints one JSON line (``{"forwards": [[listen, connect], ...]}`` with the ports bound) once
listening; serves until SIGTERM. Run as ``python netns_relay.py --netns /proc/PID/ns/net ...``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import socket
import threading
from collections.abc import Callable
from typing import Any

CLONE_NEWNET = 0x40000000
BUFFER = 1 << 20
_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


class Namespaces:
    def __init__(self, node_netns: str) -> None:
        self.host = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        self.node = os.open(node_netns, os.O_RDONLY)

    def socket(self, where: str, family: int = socket.AF_INET) -> socket.socket:
        """A new socket of ``where`` ('host' or 'ns'), made from this thread."""
        if where == "host":
            return socket.socket(family, socket.SOCK_STREAM)
        _setns(self.node)
        try:
            return socket.socket(family, socket.SOCK_STREAM)
        finally:
            _setns(self.host)


def _endpoint(text: str) -> tuple[str, str, int]:
    where, host, port = text.split(":")
    if where not in ("host", "ns"):
        raise ValueError(f"{text}: the side is host or ns")
    return where, host, int(port)


def _pump(src: socket.socket, dst: socket.socket, done: Callable[[], None]) -> None:
    buf = bytearray(BUFFER)
    view = memoryview(buf)
    try:
        while True:
            n = src.recv_into(buf)
            if not n:
                break
            dst.sendall(view[:n])
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        done()


def _splice(a: socket.socket, b: socket.socket) -> None:
    """Copy both ways until both sides have finished; then close both."""
    left = [2]
    lock = threading.Lock()

    def done() -> None:
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            a.close()
            b.close()

    threading.Thread(target=_pump, args=(a, b, done), daemon=True).start()
    threading.Thread(target=_pump, args=(b, a, done), daemon=True).start()


def _serve(listener: socket.socket, handle: Callable[[socket.socket], None]) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_handle_safely, args=(handle, conn), daemon=True).start()


def _handle_safely(handle: Callable[[socket.socket], None], conn: socket.socket) -> None:
    try:
        handle(conn)
    except OSError:
        conn.close()


def forward(ns: Namespaces, listen: str, connect: str) -> tuple[socket.socket, list[Any]]:
    lwhere, lhost, lport = _endpoint(listen)
    cwhere, chost, cport = _endpoint(connect)
    listener = ns.socket(lwhere)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((lhost, lport))
    listener.listen(128)

    def handle(conn: socket.socket) -> None:
        out = ns.socket(cwhere)
        try:
            out.connect((chost, cport))
        except OSError:
            out.close()
            conn.close()
            return
        _splice(conn, out)

    threading.Thread(target=_serve, args=(listener, handle), daemon=True).start()
    bound = f"{lwhere}:{lhost}:{listener.getsockname()[1]}"
    return listener, [bound, connect]


def connect_proxy(ns: Namespaces, path: str) -> socket.socket:
    """HTTP CONNECT on a unix socket; the target is dialled inside the node's namespace."""
    if os.path.exists(path):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(128)

    def handle(conn: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(4096)
            if not chunk or len(head) > 65536:
                conn.close()
                return
            head += chunk
        request, _, rest = head.partition(b"\r\n\r\n")
        parts = request.split(b"\r\n", 1)[0].split()
        if len(parts) < 2 or parts[0] != b"CONNECT":
            conn.sendall(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            conn.close()
            return
        host, _, port = parts[1].decode().rpartition(":")
        out = ns.socket("ns")
        try:
            out.connect((host.strip("[]"), int(port)))
        except (OSError, ValueError) as exc:
            out.close()
            conn.sendall(f"HTTP/1.1 502 Bad Gateway\r\n\r\n{exc}".encode())
            conn.close()
            return
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        if rest:
            out.sendall(rest)
        _splice(conn, out)

    threading.Thread(target=_serve, args=(listener, handle), daemon=True).start()
    return listener


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--netns", required=True, help="the node's network namespace, e.g. /proc/PID/ns/net")
    parser.add_argument("--forward", action="append", default=[], help="LISTEN=CONNECT, each side:IP:PORT")
    parser.add_argument("--connect-proxy", help="unix socket path for an HTTP CONNECT proxy into the node")
    args = parser.parse_args()
    ns = Namespaces(args.netns)
    forwards = []
    for spec in args.forward:
        listen, _, connect = spec.partition("=")
        forwards.append(forward(ns, listen, connect)[1])
    if args.connect_proxy:
        connect_proxy(ns, args.connect_proxy)
    print(json.dumps({"forwards": forwards}), flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()


if __name__ == "__main__":
    main()
