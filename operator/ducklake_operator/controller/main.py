"""``ducklake-operator``: run the kopf controller.

One active replica: kopf peering (the KopfPeering / ClusterKopfPeering resources the chart
installs) makes a second replica pause while the first is alive. Liveness is kopf's own
endpoint; Prometheus metrics are served on a port of their own.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ducklake-operator")
    parser.add_argument(
        "--namespace",
        action="append",
        default=[],
        help="watch only these namespaces (repeatable); default: all (cluster-wide)",
    )
    parser.add_argument("--liveness", default=os.environ.get("DUCKLAKE_LIVENESS", "http://0.0.0.0:8080/healthz"))
    parser.add_argument("--metrics-port", type=int, default=int(os.environ.get("DUCKLAKE_METRICS_PORT", "9090")))
    parser.add_argument("--log-level", default=os.environ.get("DUCKLAKE_LOG_LEVEL", "INFO"))
    parser.add_argument("--standalone", action="store_true", help="no peering (development only)")
    args = parser.parse_args(argv)

    _limit_malloc_arenas()
    try:
        import kopf
        from prometheus_client import start_http_server
    except ImportError as exc:
        print(f"error: the controller needs {exc.name}: pip install 'ducklake-operator[controller]'", file=sys.stderr)
        return 1

    from .wiring import kopf_patches  # importing the wiring registers every handler

    kopf_patches.install()  # restarts with many objects: see the module

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if frames := os.environ.get("DUCKLAKE_TRACEMALLOC"):
        _memory_report_on_signal(int(frames) if frames.isdigit() else 8)
    if args.metrics_port:
        start_http_server(args.metrics_port)
    kopf.run(
        clusterwide=not args.namespace,
        namespaces=args.namespace,
        liveness_endpoint=args.liveness,
        standalone=args.standalone,
        peering_name=None if args.standalone else os.environ.get("DUCKLAKE_PEERING", "ducklake-operator"),
    )
    return 0


def _limit_malloc_arenas(arenas: int = 2) -> None:
    """glibc gives each thread that allocates its own malloc arena; with a worker pool and
    watch threads that is ~60 MB of mostly empty arenas. Two are plenty for a process that
    waits on I/O (MALLOC_ARENA_MAX, set before any thread starts; a no-op off glibc)."""
    import ctypes
    import ctypes.util

    if os.environ.get("MALLOC_ARENA_MAX"):
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt(-8, arenas)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass


def _memory_report_on_signal(frames: int) -> None:
    """DUCKLAKE_TRACEMALLOC=<frames>: trace allocations (each with that many frames; fewer
    slow the operator less); SIGUSR2 logs the 25 largest sites."""
    import signal
    import tracemalloc

    tracemalloc.start(frames)

    def report(*_: object) -> None:
        stats = tracemalloc.take_snapshot().statistics("traceback")[:25]
        lines = [f"{s.size / 1e6:8.2f} MB {s.count:8d} blocks\n    " + "\n    ".join(s.traceback.format()[-6:])
                 for s in stats]  # fmt: skip
        current, peak = tracemalloc.get_traced_memory()
        logging.getLogger(__name__).warning(
            "largest allocations (traced now %.1f MB, at most %.1f MB):\n%s",
            current / 1e6,
            peak / 1e6,
            "\n".join(lines),
        )

    signal.signal(signal.SIGUSR2, report)


if __name__ == "__main__":
    sys.exit(main())
