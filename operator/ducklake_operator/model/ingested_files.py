"""What an ingest remembers of the files it took in (pure): each source file's path, size and
modification time, so a later ingest of the same table can refuse the same file (the same
path, size and time; a file written again is a new file). Kept in the ingest ledger
(``catalog.ingested``), and listed in the ingest's snapshot's ``commit_extra_info`` (JSON,
beside a launched run's job and report, ``job_marker``) for DuckDB's ``snapshots()``: that
copy goes when the snapshot expires, the ledger's stays.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

INGEST_KEY = "ingest"


@dataclass(frozen=True)
class SourceFile:
    path: str  # full path or URI, as listed
    size: int
    mtime: float  # seconds since the epoch

    def to_json(self) -> list[Any]:
        return [self.path, self.size, self.mtime]


def ingest_extra_info(table_id: int, files: Iterable[SourceFile], base: str | None = None) -> str:
    """The ``commit_extra_info`` of an ingest's snapshot; ``base``: the run's own (JSON)."""
    info: dict[str, Any] = json.loads(base) if base else {}
    info[INGEST_KEY] = {"tableId": table_id, "files": [f.to_json() for f in files]}
    return json.dumps(info, sort_keys=True, default=str)


def ingested(extra_info: str | None, table_id: int) -> set[SourceFile]:
    """The files a snapshot's ``commit_extra_info`` says were ingested into the table (none
    when it is anything else)."""
    if not extra_info or INGEST_KEY not in extra_info:
        return set()
    try:
        info = json.loads(extra_info)
    except ValueError:
        return set()
    entry = info.get(INGEST_KEY) if isinstance(info, dict) else None
    if not isinstance(entry, dict) or entry.get("tableId") != table_id:
        return set()
    out = set()
    for f in entry.get("files") or []:
        if isinstance(f, list) and len(f) == 3:
            out.add(SourceFile(str(f[0]), int(f[1]), float(f[2])))
    return out
