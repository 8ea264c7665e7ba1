"""PySpark maintenance programs (compaction, delete rewrite, inlined-data flush, expiry,
cleanup, orphans). Not implemented yet; see the Spark jobs issue."""
