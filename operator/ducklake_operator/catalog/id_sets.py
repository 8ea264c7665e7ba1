"""``column IN ids`` for many ids, as one bound value where the database allows it.

A job's commit names every input file (100,000 for a compaction of as many small files):
PostgreSQL gets ``column = ANY(%(ids)s)`` with one array parameter, compiled and sent in
half the time of an ``IN`` list of as many parameters; SQLite, which has no arrays, gets the
``IN`` list (within its bound-variable limit for the lists the jobs send, read in-process)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.compiler import compiles


class InIds(sa.ColumnElement[bool]):
    """``column`` is one of ``ids`` (integers)."""

    inherit_cache = False  # the ids are part of the statement, not a cache key
    _is_implicitly_boolean = True  # a condition as it is (SQLite: no "= 1" after it)
    type = sa.Boolean()

    def __init__(self, column: sa.ColumnElement[Any], ids: Iterable[int]) -> None:
        self.column = column
        self.ids = list(ids)


@compiles(InIds)
def _in_list(element: InIds, compiler: Any, **kw: Any) -> str:
    return str(compiler.process(element.column.in_(element.ids), **kw))


@compiles(InIds, "postgresql")
def _any_array(element: InIds, compiler: Any, **kw: Any) -> str:
    ids = sa.bindparam(None, element.ids, type_=postgresql.ARRAY(sa.BigInteger))
    return str(compiler.process(element.column == sa.func.any(ids), **kw))


def in_ids(column: sa.ColumnElement[Any], ids: Iterable[int]) -> sa.ColumnElement[bool]:
    return InIds(column, ids)
