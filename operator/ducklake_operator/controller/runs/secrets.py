"""The credentials a run's program needs, named as (env name, Secret name, key): the
launchers mount them from the Secrets; no value ever enters a run document or a status."""

from __future__ import annotations

from ...api.v1alpha1.catalog import CatalogSpec, PostgresSpec
from ...model.run_env import CATALOG_PASSWORD, CATALOG_USERNAME, S3_KEY_ID, S3_SECRET_KEY


def env_from_secrets(catalog: CatalogSpec) -> list[tuple[str, str, str]]:
    """(env name, Secret name, key) for the credentials a run needs: never values."""
    out = []
    if isinstance(catalog.backend, PostgresSpec) and catalog.backend.credentials is not None:
        c = catalog.backend.credentials
        out += [(CATALOG_USERNAME, c.name, c.username_key), (CATALOG_PASSWORD, c.name, c.password_key)]
    if catalog.s3 is not None and catalog.s3.credentials is not None:
        c = catalog.s3.credentials
        out += [(S3_KEY_ID, c.name, c.username_key), (S3_SECRET_KEY, c.name, c.password_key)]
    return out
