"""What a maintenance job reads before it plans, each in one read transaction: one table at
the latest snapshot with its schema versions, inlined file deletions and the oldest
snapshot still kept (compact, rewriteDeletes); a table's layout at older schema versions;
its inlined rows and deletions (flushInlinedData); every partition spec it has had
(repartition)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import TableNotFound
from ..model.state import CatalogState, ColumnState, PartitionSpec, TableState
from .catalog import Catalog
from .files import inlined_file_deletions, oldest_snapshot
from .inlined import InlinedRows, read_inlined
from .read_state import layout_snapshot, load_catalog_state, load_layout_at, load_partition_specs, load_schema_versions


@dataclass(frozen=True)
class TableInputs:
    state: CatalogState  # holding this table only
    table: TableState
    base: int  # the snapshot planned against
    schema_versions: list[tuple[int, int]]  # (begin snapshot, schema version)
    inlined_deletions: dict[int, list[tuple[int, int]]]  # data file id -> [(position, snapshot)]
    oldest_snapshot: int


@dataclass(frozen=True)
class InlinedData:
    batches: list[InlinedRows]  # inlined tables with rows at the base snapshot
    deletions: dict[int, list[tuple[int, int]]]  # live data file id -> [(position, snapshot)] at the base


def read_table_inputs(catalog: Catalog, schema: str, table: str) -> TableInputs:
    with catalog.reading() as conn:
        state = load_catalog_state(conn, table_names=[(schema, table)])
        t = state.table(schema, table)
        if t is None:
            raise TableNotFound(f"table {schema}.{table} does not exist")
        base = state.snapshot.snapshot_id
        return TableInputs(
            state,
            t,
            base,
            load_schema_versions(conn, t.table_id),
            inlined_file_deletions(conn, catalog.location.schema, t.table_id, at_most=base),
            oldest_snapshot(conn),
        )


def read_layouts(catalog: Catalog, inputs: TableInputs, versions: Iterable[int]) -> dict[int, tuple[ColumnState, ...]]:
    """The table's columns in each schema version a file group was planned under: files
    of one version may have been written in an older layout (a rewrite keeps its
    source's columns), and the group is written in the version's."""
    out: dict[int, tuple[ColumnState, ...]] = {}
    with catalog.reading() as conn:
        for version in set(versions):
            at = layout_snapshot(inputs.schema_versions, version)
            out[version] = (
                load_layout_at(conn, inputs.table.table_id, at)[0] if at is not None else inputs.table.columns
            )
    return out


def read_partition_specs(catalog: Catalog, table_id: int) -> dict[int, PartitionSpec]:
    """Every partition spec the table has had, by id (repartition compares each file's with the current one)."""
    with catalog.reading() as conn:
        return load_partition_specs(conn, table_id)


def read_inlined_data(catalog: Catalog, table: TableState, at_most: int) -> InlinedData:
    """Each inlined table's rows at ``at_most`` in the layout (and partitioning) of its schema
    version, and the inlined deletions of live files only: those of an ended file still
    answer time travel to before its end (a rewrite leaves them), and must stay."""
    pg_schema = catalog.location.schema
    with catalog.reading() as conn:
        versions = load_schema_versions(conn, table.table_id)
        batches = []
        for inlined in table.inlined_tables:
            at = layout_snapshot(versions, inlined.schema_version)
            columns, spec = (
                load_layout_at(conn, table.table_id, at) if at is not None else (table.columns, table.partition)
            )
            rows = read_inlined(conn, pg_schema, inlined.name, columns, at_most)
            if rows:
                batches.append(InlinedRows(inlined.name, columns, spec, rows))
        live = {f.data_file_id for f in table.data_files}
        deletions = inlined_file_deletions(conn, pg_schema, table.table_id, at_most=at_most)
    return InlinedData(batches, {k: v for k, v in deletions.items() if k in live})


@dataclass(frozen=True)
class HealthInputs:
    """What the maintenance planners need of a table besides its state, to judge its health
    as a run would plan it: its schema versions and inlined file deletions (counts)."""

    schema_versions: list[tuple[int, int]]
    inlined_deletions: dict[int, int]  # data file id -> inlined deletions


def read_health_inputs(catalog: Catalog, tables: Iterable[TableState]) -> dict[int, HealthInputs]:
    """By table id, in one read transaction (a policy's health triggers over its tables)."""
    pg_schema = catalog.location.schema
    with catalog.reading() as conn:
        return {
            t.table_id: HealthInputs(
                load_schema_versions(conn, t.table_id),
                {k: len(v) for k, v in inlined_file_deletions(conn, pg_schema, t.table_id).items()},
            )
            for t in tables
        }
