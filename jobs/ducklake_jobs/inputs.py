"""What a file-rewriting job reads before it plans: one table at the latest snapshot, with
its schema versions, inlined file deletions and the oldest snapshot still kept."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ducklake_operator.catalog import Catalog
from ducklake_operator.catalog.files import inlined_file_deletions, oldest_snapshot
from ducklake_operator.catalog.read import layout_snapshot, load_layout_at, load_schema_versions
from ducklake_operator.errors import DuckLakeError, TableNotFound
from ducklake_operator.model.state import CatalogState, ColumnState, TableState


@dataclass(frozen=True)
class TableInputs:
    state: CatalogState
    table: TableState
    base: int  # the snapshot planned against
    schema_versions: list[tuple[int, int]]
    inlined_deletions: dict[int, list[tuple[int, int]]]  # data file id -> [(position, snapshot)]
    oldest_snapshot: int

    def layouts(self, catalog: Catalog, schema_versions: Iterable[int]) -> dict[int, tuple[ColumnState, ...]]:
        """The table's columns in each schema version a file group was planned under: files
        of one version may have been written in an older layout (a rewrite keeps its
        source's columns), and the group is written in the version's."""
        out: dict[int, tuple[ColumnState, ...]] = {}
        with catalog.engine.connect() as conn:
            for version in set(schema_versions):
                at = layout_snapshot(self.schema_versions, version)
                out[version] = (
                    load_layout_at(conn, self.table.table_id, at)[0] if at is not None else self.table.columns
                )
        return out


def refuse_encrypted(state: CatalogState) -> None:
    """The jobs write plain Parquet; an encrypted lake needs every file encrypted."""
    if str(state.options.get("encrypted", "")).lower() == "true":
        raise DuckLakeError(
            "this lake is encrypted; the maintenance jobs do not write encrypted files yet "
            "(run DuckDB's ducklake_* maintenance functions instead)"
        )


def read_inputs(catalog: Catalog, schema: str, table: str) -> TableInputs:
    state = catalog.state(table_names=[(schema, table)])
    refuse_encrypted(state)
    t = state.table(schema, table)
    if t is None:
        raise TableNotFound(f"table {schema}.{table} does not exist")
    base = state.snapshot.snapshot_id
    with catalog.engine.connect() as conn:
        return TableInputs(
            state,
            t,
            base,
            load_schema_versions(conn, t.table_id),
            inlined_file_deletions(conn, catalog.location.schema, t.table_id, at_most=base),
            oldest_snapshot(conn),
        )
