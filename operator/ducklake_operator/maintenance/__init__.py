"""Pure maintenance planning: which snapshots, which files (no I/O)."""
