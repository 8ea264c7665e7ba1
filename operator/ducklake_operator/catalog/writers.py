"""One writer per change kind, registered here, explicitly, on ``write_change`` (a
``singledispatch`` on the change's class): the schema and table writers, the column writers,
the file writers (maintenance jobs), the append (ingest) and the retype writers. ``commit``
calls ``write_change`` for each change of a commit.
"""

from __future__ import annotations

from functools import singledispatch

from . import write_append, write_columns, write_files, write_retype, write_tables
from .write_context import CommitContext


@singledispatch
def write_change(change: object, ctx: CommitContext) -> None:
    raise TypeError(f"no writer for {type(change).__name__}")


for writer in (*write_tables.WRITERS, *write_columns.WRITERS, *write_files.WRITERS, *write_append.WRITERS,
               *write_retype.WRITERS):  # fmt: skip
    write_change.register(writer)
