"""DuckLakeCatalogs: kopf handlers, the reconciler, the drift pass over a catalog's tables."""
