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

    import kopf
    from prometheus_client import start_http_server

    from . import handlers  # noqa: F401  (registers the handlers)

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
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


if __name__ == "__main__":
    sys.exit(main())
