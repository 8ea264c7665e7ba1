"""A table of many tiny Parquet files, made quickly: pyarrow writes each file (with DuckDB's
field ids), the library registers them in a few ``AppendFiles`` commits of many files each, as
the ingest job commits its files. DuckDB 1.5.5 reads the result (its rows are
``id = 0 .. files * rows_per_file - 1`` in row-id order, ``v = 'v' || id``)."""

from __future__ import annotations

import io
import os
import struct

import pyarrow as pa
import pyarrow.parquet as pq

from ducklake_jobs.lake_paths import table_paths
from ducklake_operator.catalog import Catalog
from ducklake_operator.model.changes import CreateTable
from ducklake_operator.model.file_changes import AppendFiles, FileColumnStats, NewDataFile
from ducklake_operator.model.types import Field, parse_type

COLUMNS = (Field("id", parse_type("int64")), Field("v", parse_type("varchar")))
FILES_PER_COMMIT = 100_000  # the first commit of a table sets its statistics in one query per column


def create_many_files_table(
    catalog: Catalog, files: int, *, rows_per_file: int = 3, schema: str = "main", name: str = "t"
) -> None:
    """``schema.name`` with ``files`` data files of ``rows_per_file`` rows each, each its own
    row-id range, committed ``FILES_PER_COMMIT`` at a time."""
    catalog.commit([CreateTable(schema, name, COLUMNS)])
    state = catalog.state()
    table = state.table(schema, name)
    assert table is not None
    ids = {c.name: c.column_id for c in table.columns}
    arrow_schema = pa.schema(
        [
            pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": str(ids["id"]).encode()}),
            pa.field("v", pa.string(), metadata={b"PARQUET:field_id": str(ids["v"]).encode()}),
        ]
    )
    directory = table_paths(state, table).directory
    os.makedirs(directory, exist_ok=True)
    layout = tuple((c.column_id, None, c.name, c.type_name) for c in table.columns)
    for start in range(0, files, FILES_PER_COMMIT):
        outputs = [
            _write_file(directory, arrow_schema, ids, i, rows_per_file)
            for i in range(start, min(files, start + FILES_PER_COMMIT))
        ]
        base = catalog.snapshot().snapshot_id
        catalog.commit([AppendFiles(table.table_id, f"{schema}.{name}", base, tuple(outputs), layout, None)])


def _write_file(directory: str, schema: pa.Schema, ids: dict[str, int], i: int, rows: int) -> NewDataFile:
    values = list(range(i * rows, (i + 1) * rows))
    texts = [f"v{x}" for x in values]
    buffer = io.BytesIO()
    collected: list[pq.FileMetaData] = []
    pq.write_table(pa.table([values, texts], schema=schema), buffer, metadata_collector=collected)
    data = buffer.getvalue()
    path = f"many-{i:07d}.parquet"
    with open(directory + path, "wb") as out:
        out.write(data)
    group = collected[0].row_group(0)
    return NewDataFile(
        path=path,
        record_count=rows,
        file_size_bytes=len(data),
        footer_size=struct.unpack("<I", data[-8:-4])[0],
        begin_snapshot=None,
        row_id_start=None,  # given at the commit, from the table's next row id
        partial_max=None,
        partition_id=None,
        partition_values=(),
        column_stats=(
            FileColumnStats(
                ids["id"], group.column(0).total_compressed_size, rows, 0, str(values[0]), str(values[-1]), None
            ),
            FileColumnStats(ids["v"], group.column(1).total_compressed_size, rows, 0, min(texts), max(texts), None),
        ),
    )
