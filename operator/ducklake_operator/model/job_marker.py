"""How a DuckLakeJob's run marks what it writes (pure), so the catalog, not the run's pod,
answers "did it land?" after a lost pod, an operator restart or a timeout:

* its snapshot's ``commit_extra_info`` is JSON naming the job (uid, namespace, name,
  attempt) with the run's report;
* the files it writes carry a marker derived from the job's uid in their names
  (``ducklake-<uuid7>-j<12 hex>[-delete].parquet``), so those no catalog row refers to
  are known to be its leftovers and nobody else's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The job program's exit codes, as the controller reads them: 0 succeeded (committed, nothing
# to do, a dry run); 1 failed, nothing committed (its files deleted); 3 the commit's outcome
# is unknown (its files kept)
EXIT_SUCCEEDED, EXIT_FAILED, EXIT_UNKNOWN = 0, 1, 3
JOB_KEY = "ducklakeJob"
REPORT_KEY = "report"
# A run that commits several snapshots (repartition's batches, a catalog-wide flush's tables)
# marks each but its last with "final": false in the report; a run has landed once a commit
# without that mark is there, and a rerun of one that landed only in part does the rest.
FINAL_KEY = "final"


@dataclass(frozen=True)
class JobIdentity:
    """The DuckLakeJob a run belongs to."""

    uid: str
    name: str
    namespace: str | None = None
    attempt: int = 1

    def to_json(self) -> dict[str, Any]:
        return {"uid": self.uid, "namespace": self.namespace, "name": self.name, "attempt": self.attempt}

    @property
    def file_marker(self) -> str:
        return file_marker(self.uid)


def file_marker(uid: str) -> str:
    """``j`` + 12 hex digits of the uid's SHA-256: short, and the same for every attempt of
    the job (48 bits: two jobs of one table sharing it is not a concern)."""
    return "j" + hashlib.sha256(uid.encode()).hexdigest()[:12]


def session_name(uid: str) -> str:
    """The PostgreSQL ``application_name`` of a job's catalog sessions (at most 63 bytes)."""
    return f"ducklake-job {uid}"[:63]


def is_marked(path: str, marker: str) -> bool:
    """Whether the file at ``path`` was named by a run with ``marker`` (data or delete file)."""
    name = path.rsplit("/", 1)[-1]
    return name.startswith("ducklake-") and name.endswith((f"-{marker}.parquet", f"-{marker}-delete.parquet"))


def commit_extra_info(job: JobIdentity, report: Mapping[str, Any]) -> str:
    """The ``commit_extra_info`` of a run's snapshot."""
    return json.dumps({JOB_KEY: job.to_json(), REPORT_KEY: dict(report)}, sort_keys=True, default=str)


def ends_run(report: Mapping[str, Any]) -> bool:
    """Whether a commit with this report is a run's last (every commit of a one-commit run is)."""
    return report.get(FINAL_KEY) is not False


def job_commit_report(extra_info: str | None, uid: str) -> dict[str, Any] | None:
    """The report a snapshot's ``commit_extra_info`` carries when it is the commit of the job
    with ``uid``; None when it is anything else (other text, another job, not JSON)."""
    if not extra_info or uid not in extra_info:
        return None
    try:
        info = json.loads(extra_info)
    except ValueError:
        return None
    job = info.get(JOB_KEY) if isinstance(info, dict) else None
    if not isinstance(job, dict) or job.get("uid") != uid:
        return None
    report = info.get(REPORT_KEY)
    return dict(report) if isinstance(report, dict) else {}
