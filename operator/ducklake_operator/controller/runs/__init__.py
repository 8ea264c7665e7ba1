"""DuckLakeJob runs: kopf handlers, the state machine and its pieces, the locks."""
