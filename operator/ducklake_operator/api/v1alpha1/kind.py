"""A kind of the API: its names, its spec and status declarations and its printer columns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .fields import Obj
from .names import READY

Column = Mapping[str, str]
READY_COLUMN: Column = {"name": READY, "type": "string", "jsonPath": f'.status.conditions[?(@.type=="{READY}")].status'}
AGE: Column = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


@dataclass(frozen=True)
class Kind:
    name: str  # DuckLakeCatalog
    plural: str  # as the API server serves it
    short_names: tuple[str, ...]
    description: str
    spec: Obj  # read into the kind's spec dataclass (its ``ref`` given by the loader)
    status: Obj  # written by the operator; declared for the CRD only
    columns: tuple[Column, ...]  # kubectl get's printer columns

    def printer_columns(self) -> list[dict[str, Any]]:
        return [dict(c) for c in self.columns]
