"""Which files to rewrite into a table's current partition spec (pure), in batches that each
commit as a snapshot of their own.

DuckLake changes partitioning for new data only (docs/ducklake-format.md §6.3): a file keeps
the spec it was written under. A live data file is a candidate when its spec's keys (column
and transform, in key order; none for a file written unpartitioned) differ from the current
spec's. A file written under an earlier spec with the same keys (the table was partitioned
back to it) is laid out as the current spec lays files out and is left alone; so are files
registered with a name mapping (no field ids to carry over) and encrypted files, which are
counted. Inlined rows have no partition (§6.4) and are not candidates: a flush writes them
under the spec of their layout, and a later repartition picks those files up.

Candidates are taken in (begin_snapshot, row_id_start, data_file_id) order into batches
whose input stays within ``max_bytes_per_commit`` (a larger file is a batch alone; no limit:
one batch). Within a batch, files are grouped by the schema version they were written
under: each output keeps its group's layout, as DuckDB's merge does (§5.1).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ..model.partitioning import key_fields
from ..model.state import DataFile, PartitionSpec, TableState
from .compaction import schema_version_lookup

Keys = tuple[tuple[int, str], ...]  # (column id, transform) in key order


@dataclass(frozen=True)
class SourceGroup:
    schema_version: int
    files: tuple[int, ...]  # data file ids
    input_bytes: int
    input_rows: int


@dataclass(frozen=True)
class Batch:
    index: int  # in commit order
    groups: tuple[SourceGroup, ...]

    @property
    def files(self) -> tuple[int, ...]:
        return tuple(f for g in self.groups for f in g.files)

    @property
    def input_bytes(self) -> int:
        return sum(g.input_bytes for g in self.groups)

    @property
    def input_rows(self) -> int:
        return sum(g.input_rows for g in self.groups)


@dataclass(frozen=True)
class RepartitionPlan:
    table_id: int
    base_snapshot: int
    spec_id: int | None  # the current spec's partition_id; None: the table never had one
    keys: Keys  # the current spec's keys; (): unpartitioned
    batches: tuple[Batch, ...]
    left_alone: int  # candidates not rewritten: name-mapped or encrypted files

    @property
    def input_files(self) -> int:
        return sum(len(b.files) for b in self.batches)

    @property
    def input_bytes(self) -> int:
        return sum(b.input_bytes for b in self.batches)

    @property
    def input_rows(self) -> int:
        return sum(b.input_rows for b in self.batches)

    def to_json(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "batches": [{"index": b.index, "groups": [asdict(g) for g in b.groups]} for b in self.batches],
        }


def spec_keys(spec: PartitionSpec | None) -> Keys:
    return tuple((f.column_id, f.transform) for f in key_fields(spec))


def plan_repartition(
    table: TableState,
    base_snapshot: int,
    schema_versions: list[tuple[int, int]],
    specs: Mapping[int, PartitionSpec],
    max_bytes_per_commit: int | None = None,
) -> RepartitionPlan:
    """``specs``: every partition spec the table has had, by id (``catalog.read_state.load_partition_specs``)."""
    current = spec_keys(table.partition)

    def written_under(f: DataFile) -> Keys | None:  # None: a spec the catalog does not know, so not the current one
        if f.partition_id is None:
            return ()
        return spec_keys(specs[f.partition_id]) if f.partition_id in specs else None

    candidates = [f for f in table.data_files if f.end_snapshot is None and written_under(f) != current]
    movable = [f for f in candidates if f.mapping_id is None and f.encryption_key is None]
    movable.sort(key=lambda f: (f.begin_snapshot, f.row_id_start if f.row_id_start is not None else -1, f.data_file_id))
    versions = sorted(schema_versions)
    batches: list[list[DataFile]] = []
    size = 0
    for f in movable:
        if not batches or (max_bytes_per_commit is not None and size + f.file_size_bytes > max_bytes_per_commit):
            batches.append([])
            size = 0
        batches[-1].append(f)
        size += f.file_size_bytes
    return RepartitionPlan(
        table.table_id,
        base_snapshot,
        table.partition.partition_id if table.partition else None,
        current,
        tuple(_batch(i, files, versions) for i, files in enumerate(batches)),
        len(candidates) - len(movable),
    )


def _batch(index: int, files: list[DataFile], versions: list[tuple[int, int]]) -> Batch:
    by_version: dict[int, list[DataFile]] = defaultdict(list)
    version_at = schema_version_lookup(versions)
    for f in files:
        by_version[version_at(f.begin_snapshot)].append(f)
    return Batch(
        index,
        tuple(
            SourceGroup(
                version,
                tuple(f.data_file_id for f in members),
                sum(f.file_size_bytes for f in members),
                sum(f.record_count for f in members),
            )
            for version, members in sorted(by_version.items())
        ),
    )
