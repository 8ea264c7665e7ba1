"""Light-weight type promotion: the DuckLake specification's lossless table, nothing more.

DuckDB 1.5.5 accepts more (``TypePromotionIsAllowed``: any implicit widening cast),
including lossy ones such as int64 -> float64 or decimal(18,4) -> decimal(38,2)
(docs/ducklake-format.md §3.8). Under ``typeChanges: promote`` those are refused; other
type changes need a rewrite of the data (``typeChanges: rewrite``, a heavy-weight change).
"""

from __future__ import annotations

from .types import DuckLakeType, Primitive

# source -> targets it may be promoted to in place (ducklake-schema-evolution, "Type Promotion")
LOSSLESS: dict[str, frozenset[str]] = {
    "int8": frozenset({"int16", "int32", "int64"}),
    "int16": frozenset({"int32", "int64"}),
    "int32": frozenset({"int64"}),
    "uint8": frozenset({"uint16", "uint32", "uint64"}),
    "uint16": frozenset({"uint32", "uint64"}),
    "uint32": frozenset({"uint64"}),
    "float32": frozenset({"float64"}),
}


def promotion_problem(old: DuckLakeType, new: DuckLakeType) -> str | None:
    """None if ``old`` -> ``new`` is a lossless in-place promotion, else why not."""
    if old == new:
        return None
    if isinstance(old, Primitive) and isinstance(new, Primitive) and new.name in LOSSLESS.get(old.name, ()):
        return None
    allowed = sorted(LOSSLESS.get(old.name, ()))
    if allowed:
        return f"{old} → {new} is not a lossless promotion ({old} can only become {', '.join(allowed)})"
    return f"{old} → {new} is not a lossless promotion ({old} cannot be promoted in place)"
