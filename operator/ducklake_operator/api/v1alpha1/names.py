"""The API's names, defined once: its group and version, the kinds, their plurals (as the API
server serves them) and the labels put on what runs create."""

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
# labels on what runs create: the run's catalog and operation
CATALOG_LABEL, OPERATION_LABEL = f"{GROUP}/catalog", f"{GROUP}/operation"
