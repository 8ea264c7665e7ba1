"""Which files to rewrite without their deleted rows (pure): DuckDB 1.5.5's
``ducklake_rewrite_data_files`` rules (docs/ducklake-format.md §5.2).

A live data file is a candidate when its deleted fraction, (rows in its live delete file +
its inlined file deletions) / record_count, is at least the threshold and above zero; size
does not matter. Candidates are grouped by (schema version in force when the file was
written, partition spec, partition values), one output file per group.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ..model.maintenance_params import DELETE_THRESHOLD
from ..model.state import DataFile, TableState
from .compaction import schema_version_lookup


@dataclass(frozen=True)
class RewriteGroup:
    index: int
    schema_version: int
    partition_id: int | None
    partition_values: tuple[tuple[int, str | None], ...]
    files: tuple[int, ...]  # data file ids
    delete_files: tuple[int | None, ...]  # each file's live delete file id at the base snapshot
    input_rows: int
    deleted_rows: int
    input_bytes: int


@dataclass(frozen=True)
class DeleteRewritePlan:
    table_id: int
    base_snapshot: int
    delete_threshold: float
    groups: tuple[RewriteGroup, ...]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def input_files(self) -> int:
        return sum(len(g.files) for g in self.groups)


def plan_delete_rewrite(
    table: TableState,
    base_snapshot: int,
    schema_versions: list[tuple[int, int]],
    threshold: float = DELETE_THRESHOLD.fallback,
    *,
    inlined_deletions: Mapping[int, int] | None = None,
) -> DeleteRewritePlan:
    """``inlined_deletions``: data file id -> number of its inlined file deletions."""
    threshold = DELETE_THRESHOLD.parse(threshold)  # ValueError outside its bounds
    inlined = inlined_deletions or {}
    delete_file = {d.data_file_id: d for d in table.delete_files if d.end_snapshot is None}
    version_at = schema_version_lookup(schema_versions)
    buckets: dict[tuple[Any, ...], list[tuple[DataFile, int]]] = defaultdict(list)
    for f in table.data_files:
        if (
            f.end_snapshot is not None
            or f.record_count == 0
            or f.mapping_id is not None
            or f.encryption_key is not None
        ):
            continue
        deleted = (delete_file[f.data_file_id].delete_count if f.data_file_id in delete_file else 0) + inlined.get(
            f.data_file_id, 0
        )
        if deleted > 0 and deleted / f.record_count >= threshold:
            buckets[(version_at(f.begin_snapshot), f.partition_id, f.partition_values)].append((f, deleted))
    groups: list[RewriteGroup] = []
    for key in sorted(buckets, key=repr):
        members = sorted(buckets[key], key=lambda m: m[0].data_file_id)
        schema_version, partition_id, values = key
        groups.append(
            RewriteGroup(
                index=len(groups),
                schema_version=schema_version,
                partition_id=partition_id,
                partition_values=values,
                files=tuple(f.data_file_id for f, _ in members),
                delete_files=tuple(
                    delete_file[f.data_file_id].delete_file_id if f.data_file_id in delete_file else None
                    for f, _ in members
                ),
                input_rows=sum(f.record_count for f, _ in members),
                deleted_rows=sum(d for _, d in members),
                input_bytes=sum(f.file_size_bytes for f, _ in members),
            )
        )
    return DeleteRewritePlan(table.table_id, base_snapshot, threshold, tuple(groups))
