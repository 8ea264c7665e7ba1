"""Count the statements a catalog's engine sends to its database, by phase of a job."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine.interfaces import ExecuteStyle

from ducklake_operator.catalog import Catalog


class CatalogStatements:
    """Statements sent by ``catalog``'s engine since attached, by the phase they were sent
    in (``during``). An executemany counts as one statement per parameter set (psycopg2
    sends them one by one), unless SQLAlchemy batched it into multi-row INSERTs (then each
    batch is one)."""

    def __init__(self, catalog: Catalog) -> None:
        self.by_phase: Counter[str] = Counter()
        self.texts: list[tuple[str, str]] = []  # (phase, statement)
        self.phase = "other"
        sa.event.listen(catalog.engine, "before_cursor_execute", self._count)

    def _count(self, _conn: Any, _cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        batched = context is not None and context.execute_style is ExecuteStyle.INSERTMANYVALUES
        self.by_phase[self.phase] += len(parameters) if many and not batched else 1
        self.texts.append((self.phase, statement))

    @contextmanager
    def during(self, phase: str) -> Iterator[None]:
        before, self.phase = self.phase, phase
        try:
            yield
        finally:
            self.phase = before

    @property
    def total(self) -> int:
        return sum(self.by_phase.values())
