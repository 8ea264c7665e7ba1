"""Pass 2 of an ingest regroups the sources: runs of about the table's target file size, but
no fewer runs than cores while each holds ``SHARE_BYTES`` of input, whatever pass 1's groups."""

from __future__ import annotations

import os

import pytest

import ducklake_jobs.ingest as job
from ducklake_jobs.ingest_sources import Skipped, Source, TypedRead
from ducklake_jobs.ingest_tasks import Observation
from ducklake_operator.evolution.observed import Fields
from ducklake_operator.model.ingested_files import SourceFile

MB = 1024 * 1024


def read_alone(sizes_mb: list[int]) -> tuple[list[tuple[Source, ...]], list[Observation]]:
    """Pass 1's groups: a file each, with what it read of it (its rows: its index)."""
    groups: list[tuple[Source, ...]] = [
        (Source(SourceFile(f"/in/{k}.parquet", mb * MB, 0), "parquet"),) for k, mb in enumerate(sizes_mb)
    ]
    fields: Fields = {}
    observations = [Observation(fields, k, Skipped(), (None,), (TypedRead(k),)) for k in range(len(sizes_mb))]
    return groups, observations


@pytest.mark.parametrize(
    ("sizes_mb", "target_mb", "runs"),
    [
        ([50] * 6, 512, 2),  # 300 MB: a run per core, not one of 300 MB
        ([50] * 6, 100, 4),  # runs of about the target, a whole number of waves (3 -> 4)
        ([10] * 6, 512, 1),  # 60 MB: one run (each core's share would be under SHARE_BYTES)
        ([200] * 10, 512, 4),  # 2 GB: about the target each
        ([50] * 6, 0, 6),  # a target of less than a file: a run per file
    ],
)
def test_runs(monkeypatch: pytest.MonkeyPatch, sizes_mb: list[int], target_mb: int, runs: int) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    groups, observations = read_alone(sizes_mb)
    written = job._write_groups(groups, observations, target_mb * MB or 1)
    counts = [len(w.sources) for w in written]
    assert len(counts) == runs and max(counts) - min(counts) <= 1, counts  # files of one size: runs of about one
    # each source keeps what pass 1 read of it, in order
    assert [s.file.path for w in written for s in w.sources] == [g[0].file.path for g in groups]
    assert [t.rows for w in written for t in w.typed if t is not None] == list(range(len(sizes_mb)))
    assert all(len(w.json_files) == len(w.sources) for w in written)
