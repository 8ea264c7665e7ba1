"""The widest-type table (docs/ingest-schema-evolution.md §4.2), as the ingest tests read it."""

from __future__ import annotations

# The widest-type table, read by hand: for a column of the row's type, the columns a
# value of each other type adds (by suffix); none: it fits the column (converted into it).
# Where the table contradicts itself (long is "incompatible with" date and timestamp, which
# are "narrower than" long), the "narrower than" column and the footnote decide.
WIDEST_TABLE: dict[str, dict[str, tuple[str, ...]]] = {
    "boolean": {
        "long": ("long",),
        "double": ("double",),
        "date": ("string", "date"),
        "timestamp": ("string", "timestamp"),
        "string": ("string",),
    },
    "long": {"boolean": (), "double": ("double",), "date": (), "timestamp": (), "string": ("string",)},
    "double": {"boolean": (), "long": (), "date": (), "timestamp": (), "string": ("string",)},
    "date": {
        "boolean": ("string", "boolean"),
        "long": ("long",),
        "double": ("double",),
        "timestamp": ("timestamp",),
        "string": ("string",),
    },
    "timestamp": {
        "boolean": ("string", "boolean"),
        "long": ("long",),  # §3.2: started_long, and started still takes the longs
        "double": ("double",),
        "date": (),
        "string": ("string",),
    },
    "string": {"boolean": (), "long": (), "double": (), "date": (), "timestamp": ()},
}
# the base kinds' names as DuckLake's types, and as DuckDB spells them
DUCKLAKE = {
    "boolean": "boolean",
    "long": "int64",
    "double": "float64",
    "date": "date",
    "timestamp": "timestamp",
    "string": "varchar",
}
DUCKDB = {"boolean": "BOOLEAN", "long": "BIGINT", "double": "DOUBLE", "date": "DATE", "timestamp": "TIMESTAMP"}
DUCKDB["string"] = "VARCHAR"
