"""The API's names, defined once: its group and version, the kinds, their plurals (as the API
server serves them), the conditions and reasons the status carries, and the labels and annotations
put on what the operator creates."""

from __future__ import annotations

GROUP = "ducklake.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
CATALOG_KIND, SCHEMA_KIND, TABLE_KIND = "DuckLakeCatalog", "DuckLakeSchema", "DuckLakeTable"
POLICY_KIND, JOB_KIND = "DuckLakeMaintenancePolicy", "DuckLakeJob"
CATALOGS, SCHEMAS, TABLES = "ducklakecatalogs", "ducklakeschemas", "ducklaketables"
POLICIES, JOBS = "ducklakemaintenancepolicies", "ducklakejobs"
# the conditions the kinds' status carries (status.conditions[].type)
READY, PROGRESSING, BLOCKED, DRIFTED, CATALOG_REACHABLE = (
    "Ready",
    "Progressing",
    "Blocked",
    "Drifted",
    "CatalogReachable",
)
CONDITION_TYPES = (READY, PROGRESSING, BLOCKED, DRIFTED, CATALOG_REACHABLE)
# a DuckLakeJob's own conditions (its state is status.state, job.STATES)
COMPLETE, FAILED_CONDITION = "Complete", "Failed"
# condition reasons more than one reconciler gives
INVALID_SPEC, IN_SYNC, UP_TO_DATE = "InvalidSpec", "InSync", "UpToDate"
# labels on what runs create: the run's catalog and operation; the table, policy, run and attempt
CATALOG_LABEL, OPERATION_LABEL = f"{GROUP}/catalog", f"{GROUP}/operation"
TABLE_LABEL, POLICY_LABEL = f"{GROUP}/table", f"{GROUP}/policy"
JOB_LABEL, ATTEMPT_LABEL = f"{GROUP}/job", f"{GROUP}/attempt"
# annotations: why a policy created a run and for which scheduled time; what a run's lease locks
REASON_ANNOTATION, SCHEDULE_TIME_ANNOTATION = f"{GROUP}/reason", f"{GROUP}/schedule-time"
# on a run lock (a Lease): the DuckLakeJob holding it and what it locks
JOB_ANNOTATION, LOCK_ANNOTATION = JOB_LABEL, f"{GROUP}/lock"
