"""Which files to merge (pure): DuckDB 1.5.5's ``ducklake_merge_adjacent_files`` rules as a
plan of numbered file groups (Iceberg's vocabulary), JSON-serialisable for the Spark driver.

Rules (docs/ducklake-format.md §5.1): live data files smaller than the threshold (the target size unless
given), without a delete file or inlined deletions (unless ``apply_deletes``: then those
files are merged too, their deletes carried over or applied), grouped by (schema version in force
when the file was written, partition spec, partition values); within a group, ordered by
``begin_snapshot, row_id_start, data_file_id`` and taken greedily until the running size
reaches the target; a group needs ``min_input_files`` (DuckDB: 2). Files registered with a
name mapping (no field ids) and encrypted files are left alone. ``max_groups`` caps the
groups per run (DuckDB's ``max_compacted_files``).

Each group also says what its output row must carry: ``begin_snapshot`` of the first
source, ``partial_max`` = max(partial_max or begin_snapshot), and ``row_id_start`` of the
first source when the sources are contiguous in row-id space (else row ids are embedded).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass
from typing import Any

from ..model.maintenance_params import APPLY_DELETES, MIN_INPUT_FILES, TARGET_FILE_SIZE
from ..model.state import DataFile, TableState


@dataclass(frozen=True)
class CompactionOptions:
    """The ``compact`` parameters (``model.maintenance_params``), defaulted as there."""

    target_file_size: int = TARGET_FILE_SIZE.fallback
    small_file_threshold: int | None = None  # files at or above it are left alone; default: target
    min_input_files: int = MIN_INPUT_FILES.default
    max_groups: int | None = None
    apply_deletes: bool = APPLY_DELETES.default  # False: DuckDB's merge, which leaves files with deletes alone


@dataclass(frozen=True)
class FileGroup:
    index: int  # global, in commit order
    schema_version: int
    partition_id: int | None
    partition_values: tuple[tuple[int, str | None], ...]
    files: tuple[int, ...]  # data_file ids, in output order
    input_bytes: int
    input_rows: int
    begin_snapshot: int
    partial_max: int
    row_id_start: int | None  # None: row ids are embedded in the output
    with_deletes: tuple[int, ...] = ()  # inputs with a delete file or inlined deletions (apply_deletes)


@dataclass(frozen=True)
class CompactionPlan:
    table_id: int
    base_snapshot: int
    target_file_size: int
    groups: tuple[FileGroup, ...]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def input_files(self) -> int:
        return sum(len(g.files) for g in self.groups)


def schema_version_lookup(versions: list[tuple[int, int]]) -> Callable[[int], int]:
    """The table's schema version in force at a snapshot, by bisection (a planner asks once
    per file); ``versions`` = (begin_snapshot, schema_version) rows of
    ``ducklake_schema_versions``; -1 before the first."""
    ordered = sorted(versions)
    begins = [b for b, _ in ordered]

    def at(snapshot: int) -> int:
        i = bisect_right(begins, snapshot) - 1
        return ordered[i][1] if i >= 0 else -1

    return at


def schema_version_at(versions: list[tuple[int, int]], snapshot: int) -> int:
    return schema_version_lookup(versions)(snapshot)


def _first_row_id(files: list[DataFile]) -> int | None:
    """The first row id of files whose row ids run on without a gap; None when they do not."""
    spans = sorted(((f.row_id_start, f.record_count) for f in files if f.row_id_start is not None), key=lambda s: s[0])
    if len(spans) < len(files) or not spans:
        return None
    if not all(start + count == following for (start, count), (following, _) in zip(spans, spans[1:], strict=False)):
        return None
    return spans[0][0]


def plan_compaction(
    table: TableState,
    base_snapshot: int,
    schema_versions: list[tuple[int, int]],
    options: CompactionOptions = CompactionOptions(),
    *,
    files_with_inlined_deletes: Collection[int] = (),
) -> CompactionPlan:
    threshold = options.small_file_threshold or options.target_file_size
    deleted = {d.data_file_id for d in table.delete_files} | set(files_with_inlined_deletes)
    version_at = schema_version_lookup(schema_versions)
    buckets: dict[tuple[Any, ...], list[DataFile]] = defaultdict(list)
    for f in table.data_files:
        if (
            f.end_snapshot is not None
            or f.file_size_bytes >= threshold
            or (f.data_file_id in deleted and not options.apply_deletes)
            or f.mapping_id is not None
            or f.encryption_key is not None
        ):  # name-mapped (no field ids) or encrypted
            continue
        key = (version_at(f.begin_snapshot), f.partition_id, f.partition_values)
        buckets[key].append(f)
    groups: list[FileGroup] = []
    for key in sorted(buckets, key=repr):
        files = sorted(
            buckets[key],
            key=lambda f: (f.begin_snapshot, f.row_id_start if f.row_id_start is not None else -1, f.data_file_id),
        )
        current: list[DataFile] = []
        size = 0
        for i, f in enumerate(files):
            current.append(f)
            size += f.file_size_bytes
            if size >= options.target_file_size or i == len(files) - 1:
                if len(current) >= options.min_input_files:
                    groups.append(_group(len(groups), key, current, deleted))
                current, size = [], 0
    if options.max_groups is not None:
        groups = groups[: options.max_groups]
    return CompactionPlan(table.table_id, base_snapshot, options.target_file_size, tuple(groups))


def _group(index: int, key: tuple[Any, ...], files: list[DataFile], deleted: Collection[int]) -> FileGroup:
    schema_version, partition_id, values = key
    return FileGroup(
        index=index,
        schema_version=schema_version,
        partition_id=partition_id,
        partition_values=values,
        files=tuple(f.data_file_id for f in files),
        input_bytes=sum(f.file_size_bytes for f in files),
        input_rows=sum(f.record_count for f in files),
        begin_snapshot=files[0].begin_snapshot,
        partial_max=max(f.partial_max if f.partial_max is not None else f.begin_snapshot for f in files),
        row_id_start=_first_row_id(files),
        with_deletes=tuple(f.data_file_id for f in files if f.data_file_id in deleted),
    )
