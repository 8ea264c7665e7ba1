"""The operator's kopf wiring: importing this module registers every handler, the
operator-wide startup first (``lifecycle``), then one module per kind: catalogs, schemas and
tables, runs, policies. ``main`` loads it; no other module imports a handler module.
"""

from __future__ import annotations

from . import kopf_patches, lifecycle, login  # noqa: F401  (lifecycle and login register handlers)
from .catalogs import handlers as catalog_handlers  # noqa: F401
from .policies import handlers as policy_handlers  # noqa: F401
from .runs import handlers as run_handlers  # noqa: F401
from .tables import handlers as table_handlers  # noqa: F401

__all__ = ["catalog_handlers", "kopf_patches", "policy_handlers", "run_handlers", "table_handlers"]
