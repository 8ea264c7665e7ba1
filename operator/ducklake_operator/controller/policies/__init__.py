"""DuckLakeMaintenancePolicies: kopf handlers and the reconciler's reads (the planner is ``maintenance``)."""
