"""The maintenance jobs, one module per operation (compaction, delete rewrite, inlined-data
flush, snapshot expiry, file cleanup, orphan files, repartition, column type rewrite,
ingest): each plans from the catalog, writes its files in-process or on Spark, and commits
one snapshot. ``python -m ducklake_jobs`` is the job program every launcher runs."""
