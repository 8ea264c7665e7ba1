"""The DuckLake catalog library: the only code that speaks SQL to the metadata database."""

from .catalog import Catalog
from .commit import CommitResult
from .connect import CatalogLocation

__all__ = ["Catalog", "CatalogLocation", "CommitResult"]
