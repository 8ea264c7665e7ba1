"""The operator's kopf wiring: importing this module registers every handler, the
operator-wide startup first (``lifecycle``; ``crd_check`` compares the cluster's CRDs), then
one module per kind: catalogs, schemas and tables, runs, policies. ``main`` loads it; no other module imports a handler module.
"""

from __future__ import annotations

from . import crd_check, kopf_patches, lifecycle, login  # noqa: F401  (they register handlers)
from .catalogs import handlers as catalog_handlers  # noqa: F401
from .policies import handlers as policy_handlers  # noqa: F401
from .runs import handlers as run_handlers  # noqa: F401
from .tables import handlers as table_handlers  # noqa: F401

__all__ = ["catalog_handlers", "crd_check", "kopf_patches", "policy_handlers", "run_handlers", "table_handlers"]
