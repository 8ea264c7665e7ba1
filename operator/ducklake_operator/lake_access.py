"""Where a DuckLakeCatalog's lake is, as its spec says: the metadata database's location (with
credentials from whoever may read its Secret) and the S3 settings of an ``s3://`` data path.
Shared by the controller, the CLI and the job program (which reads credentials from its
environment)."""

from __future__ import annotations

from collections.abc import Callable

from .api.v1alpha1.catalog import CatalogSpec, PostgresSpec
from .catalog.connect import CatalogLocation
from .storage import S3Config

Credentials = Callable[
    [str, str, str, "str | None"], tuple[str | None, str | None]
]  # (secret, user key, pw key, namespace)


def location_for(spec: CatalogSpec, credentials: Credentials | None = None) -> CatalogLocation:
    backend = spec.backend
    if isinstance(backend, PostgresSpec):
        user = password = None
        if backend.credentials is not None and credentials is not None:
            c = backend.credentials
            user, password = credentials(c.name, c.username_key, c.password_key, spec.ref.namespace)
        return CatalogLocation(
            kind="postgres",
            host=backend.host,
            port=backend.port,
            database=backend.database,
            schema=backend.schema,
            user=user,
            password=password,
            sslmode=backend.ssl_mode,
        )
    return CatalogLocation(kind="sqlite", path=backend.path)


def s3_settings(spec: CatalogSpec, credentials: Credentials | None = None) -> S3Config | None:
    """S3 settings for a catalog whose data path is ``s3://``: ``spec.storage.s3`` over the
    standard AWS environment; keys from its ``credentialsSecretRef`` when ``credentials``
    can read Secrets (the controller), else from the environment (the CLI)."""
    if not spec.data_path.startswith("s3://"):
        return None
    env, s3 = S3Config.from_env(), spec.s3
    if s3 is None:
        return env
    key, secret, token = env.access_key, env.secret_key, env.session_token
    if s3.credentials is not None and credentials is not None:
        c = s3.credentials
        (key, secret), token = credentials(c.name, c.username_key, c.password_key, spec.ref.namespace), None
    return S3Config(
        endpoint=s3.endpoint or env.endpoint,
        region=s3.region or env.region,
        access_key=key,
        secret_key=secret,
        session_token=token,
        url_style=s3.url_style,
    )
