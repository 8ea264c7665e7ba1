"""Entry point of the ``ducklake-operator`` controller (the kopf operator)."""

from __future__ import annotations

import sys


def main() -> int:
    print("ducklake-operator: the Kubernetes controller is not implemented yet; "
          "use the `ducklake` CLI (plan/apply/status) against a catalog meanwhile.", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
