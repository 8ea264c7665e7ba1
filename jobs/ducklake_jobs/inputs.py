"""What a file-rewriting job reads before it plans (through ``catalog.job_inputs``), and the
lakes it refuses."""

from __future__ import annotations

from ducklake_operator.catalog import Catalog
from ducklake_operator.catalog.job_inputs import TableInputs, read_table_inputs
from ducklake_operator.errors import DuckLakeError
from ducklake_operator.model.file_changes import PlannedInputs
from ducklake_operator.model.state import CatalogState, TableState


def refuse_encrypted(state: CatalogState) -> None:
    """The jobs write plain Parquet; an encrypted lake needs every file encrypted."""
    if str(state.options.get("encrypted", "")).lower() == "true":
        raise DuckLakeError(
            "this lake is encrypted; the maintenance jobs do not write encrypted files yet "
            "(run DuckDB's ducklake_* maintenance functions instead)"
        )


def read_inputs(catalog: Catalog, schema: str, table: str) -> TableInputs:
    inputs = read_table_inputs(catalog, schema, table)
    refuse_encrypted(inputs.state)
    return inputs


def planned_inputs(table: TableState, sources: list[int], inlined: dict[int, list[tuple[int, int]]]) -> PlannedInputs:
    """Source files as planned at the base snapshot: with their live delete files and inlined
    deletions, none of which may change before the commit."""
    planned = set(sources)  # many files: a set, not the list, to look them up
    return PlannedInputs(
        tuple(sources),
        tuple(
            (d.data_file_id, d.delete_file_id)
            for d in table.delete_files
            if d.end_snapshot is None and d.data_file_id in planned
        ),
        tuple((k, len(inlined[k])) for k in sources if k in inlined),
    )
