"""The DuckLake catalog library: the only code that speaks SQL to the metadata database.

Its names are imported when first asked for (PEP 562): a Spark task that needs only a pure
module of the package (``paths``) then does not import SQLAlchemy and the writers, 0.3 s of
every Python worker's start."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .catalog import Catalog
    from .commit import CommitResult
    from .connect import CatalogLocation

__all__ = ["Catalog", "CatalogLocation", "CommitResult"]
_HOMES = {"Catalog": ".catalog", "CommitResult": ".commit", "CatalogLocation": ".connect"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)
