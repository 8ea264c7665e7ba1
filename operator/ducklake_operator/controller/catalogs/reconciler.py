"""The DuckLakeCatalog reconciler: plain functions over a spec and the catalog pool, no
kopf. Each returns an ``Outcome``; ``catalogs.handlers`` publishes it. The lake-level use
cases they call (open or create a catalog, destroy a lake) are in ``ducklake_operator.use_cases``.
"""

from __future__ import annotations

from ...api.v1alpha1.catalog import CatalogSpec
from ...api.v1alpha1.names import CATALOG_REACHABLE, READY
from ...errors import CatalogNotFound, DuckLakeError
from ...use_cases import destroy_catalog, s3_settings
from ..boundary import Failure, classify
from ..catalog_pool import CatalogPool
from ..outcome import Outcome, failed
from ..status import condition


def reconcile_catalog(spec: CatalogSpec, pool: CatalogPool) -> Outcome:
    generation = spec.ref.generation
    try:
        catalog, created = pool.catalog(spec, create=True)
        snap, state_version = catalog.health()
    except DuckLakeError as exc:
        reachable = classify(exc).reason != "CatalogUnreachable"
        return failed(
            exc, generation, [condition(CATALOG_REACHABLE, reachable, classify(exc).reason, str(exc), generation)]
        )
    location = catalog.location
    events = [("Normal", "Created", f"initialised a new DuckLake catalog at {location.describe()}")] if created else []
    return Outcome(
        status={
            "formatVersion": state_version,
            "currentSnapshot": snap.snapshot_id,
            "schemaVersion": snap.schema_version,
            "backend": location.kind,
            "dataPath": spec.data_path,
            "observedGeneration": generation,
        },
        conditions=[
            condition(
                READY, True, "Created" if created else "Adopted", f"catalog at {location.describe()}", generation
            ),
            condition(CATALOG_REACHABLE, True, "Connected", "", generation),
        ],
        events=events,
    )


def delete_catalog(
    spec: CatalogSpec, pool: CatalogPool, dependents: list[str], sharing: list[str] | None = None
) -> Outcome:
    """Finalizer. Retain leaves the lake as it is. Delete waits until no DuckLakeSchema or
    DuckLakeTable uses the catalog any more (their own finalizers need it), then deletes
    every file the catalog refers to and drops its metadata tables, unless another
    DuckLakeCatalog resource (``sharing``) declares the same lake: then it is retained."""
    if spec.deletion_policy != "Delete":
        pool.forget(spec)
        return Outcome(
            events=[("Normal", "Retained", "the lake stays: metadata and files untouched (deletionPolicy: Retain)")]
        )
    if sharing:
        pool.forget(spec)
        return Outcome(
            events=[
                (
                    "Warning",
                    "LakeShared",
                    f"not deleting the lake: {', '.join(sorted(sharing))} declare the same "
                    "catalog database; metadata and files are retained",
                )
            ]
        )
    if dependents:
        names = ", ".join(sorted(dependents)[:5]) + (", ..." if len(dependents) > 5 else "")
        return Outcome(
            events=[("Normal", "WaitingForDependents", f"{len(dependents)} resources still use this catalog: {names}")],
            failure=Failure(
                "DependentsRemain",
                f"waiting for {len(dependents)} resources that use this catalog to be deleted first: {names}",
                True,
                waits=True,
            ),
        )
    try:
        catalog, _ = pool.catalog(spec)
    except CatalogNotFound:
        return Outcome(events=[("Normal", "AlreadyGone", "no catalog to delete")])
    except DuckLakeError as exc:
        return failed(exc, spec.ref.generation)
    try:
        result = destroy_catalog(catalog, s3_settings(spec, pool.credentials))
    except (DuckLakeError, OSError) as exc:
        failure = Failure("DeleteFailed", f"deleting the lake failed part-way, will retry: {exc}", True, cap=30)
        return Outcome(events=[("Warning", failure.reason, failure.message)], failure=failure)
    finally:
        pool.forget(spec)
    return Outcome(
        events=[
            (
                "Normal",
                "Deleted",
                f"deleted {result.files_deleted} files and dropped {result.tables_dropped} "
                "metadata tables (deletionPolicy: Delete)",
            )
        ]
    )


# ------------------------------------------------------------------ schemas and tables
