"""DuckLakeSchemas and DuckLakeTables: kopf handlers, the reconciler, the runs of heavy changes."""
