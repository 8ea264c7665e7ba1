"""DuckLakeCatalog: where a catalog's metadata and data live."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..problems import Problems
from .common import DELETION_POLICY, ObjectRef, SecretRef, deletion, local_path, options, secret_ref
from .fields import Choice, Int, Str, obj
from .kind import AGE, READY_COLUMN, Kind
from .names import CATALOG_KIND, CATALOGS
from .status import status

SSL_MODE = Choice(("disable", "allow", "prefer", "require", "verify-ca", "verify-full"))
URL_STYLE = Choice(("path", "vhost"))


@dataclass(frozen=True)
class PostgresSpec:
    host: str
    database: str
    port: int = 5432
    schema: str | None = None
    ssl_mode: str | None = None
    credentials: SecretRef | None = None


@dataclass(frozen=True)
class SqliteSpec:
    path: str


@dataclass(frozen=True)
class S3Spec:
    endpoint: str | None = None
    region: str | None = None
    url_style: str | None = None
    credentials: SecretRef | None = None


@dataclass(frozen=True)
class CatalogSpec:
    ref: ObjectRef
    backend: PostgresSpec | SqliteSpec
    data_path: str
    options: tuple[tuple[str, str], ...] = ()  # catalog keys, normalised values
    s3: S3Spec | None = None
    deletion_policy: str = DELETION_POLICY.default


def _sqlite_path(p: Problems, o: Any, key: str, path: str) -> str:
    return local_path(p.get(o, key, path, str, required=True, default=""), p.base_dir)


def _data_path(p: Problems, o: Any, key: str, path: str) -> str:
    data_path: str = p.get(o, key, path, str, required=True, default="")
    if data_path and not data_path.endswith("/"):
        p.add(f"{path}.{key}", f"{data_path!r} must end with '/'")
    if data_path and "://" not in data_path:
        data_path = local_path(data_path, p.base_dir)
        data_path = data_path if data_path.endswith("/") else data_path + "/"
    return data_path


POSTGRES = obj(
    "A PostgreSQL database (for several writers).",
    {
        "host": Str(desc="Host name.", min_length=1),
        "port": Int(desc="Port.", minimum=1, maximum=65535, default=5432),
        "database": Str(desc="Database name.", min_length=1),
        "schema": Str(desc="Schema holding the ducklake_* tables (DuckDB's METADATA_SCHEMA); default public."),
        "sslMode": Str(desc="libpq sslmode.", choice=SSL_MODE),
        "credentialsSecretRef": secret_ref("database user and password"),
    },
    required=("host", "database"),
    order=("host", "database", "port", "schema", "sslMode", "credentialsSecretRef"),
    to=PostgresSpec,
    absent="none",
)
SQLITE = obj(
    "A SQLite file (single node; the embedded default).",
    {"path": Str(desc="Path of the SQLite file (a PVC path in a cluster).", min_length=1, reader=_sqlite_path)},
    required=("path",),
    to=SqliteSpec,
    absent="none",
)
BACKENDS = {"postgres": POSTGRES, "sqlite": SQLITE}


def _backend(p: Problems, o: Any, key: str, path: str) -> PostgresSpec | SqliteSpec:
    """The one backend ``spec.metadata`` names."""
    meta = p.get(o, key, path, dict, required=True, default={})
    at = f"{path}.{key}"
    backends = [k for k in BACKENDS if k in meta]
    p.keys(meta, at, tuple(BACKENDS))
    if len(backends) != 1:
        p.add(at, "needs exactly one of postgres or sqlite")
        return SqliteSpec("catalog.sqlite")
    (name,) = backends
    backend: PostgresSpec | SqliteSpec = BACKENDS[name].read_value(
        p, p.get(meta, name, at, dict, default={}), f"{at}.{name}"
    )
    return backend


SPEC = obj(
    "Desired state of a DuckLake catalog.",
    {
        "metadata": obj(
            "Where the catalog's metadata lives: exactly one of postgres or sqlite.",
            BACKENDS,
            rules=(
                ("has(self.postgres) != has(self.sqlite)", "spec.metadata needs exactly one of postgres or sqlite"),
            ),
            reader=_backend,
            attr="backend",
        ),
        "dataPath": Str(
            desc="Where Parquet files live: s3://bucket/prefix/ or a local/PVC path. Must end with '/'.",
            pattern=r".*/$",
            min_length=2,
            reader=_data_path,
        ),
        "storage": obj(
            "Object store settings.",
            {
                "s3": obj(
                    "S3 or S3-compatible storage.",
                    {
                        "endpoint": Str(desc="Endpoint URL (for S3-compatible stores)."),
                        "region": Str(desc="Region."),
                        "urlStyle": Str(desc="path or vhost.", choice=URL_STYLE),
                        "credentialsSecretRef": secret_ref("access key id (usernameKey) and secret (passwordKey)"),
                    },
                    to=S3Spec,
                    absent="missing",
                )
            },
            to=lambda s3: s3,
            attr="s3",
        ),
        "options": options("global"),
        "deletionPolicy": deletion(
            "Retain (default): deleting the resource leaves the lake untouched. Delete: once no "
            "DuckLakeSchema or DuckLakeTable uses the catalog, every file it refers to is deleted and "
            "its metadata tables are dropped (files no row refers to are left: run deleteOrphanFiles "
            "first)."
        ),
    },
    required=("metadata", "dataPath"),
    to=CatalogSpec,
)
STATUS = status(
    {
        "formatVersion": Str(desc="ducklake_metadata.version of the catalog."),
        "currentSnapshot": Int(desc="Latest snapshot id."),
        "schemaVersion": Int(desc="Latest schema_version."),
        "backend": Str(desc="postgres or sqlite."),
        "dataPath": Str(desc="The catalog's data path."),
    }
)
CATALOG = Kind(
    CATALOG_KIND,
    CATALOGS,
    ("dlc", "dlcat"),
    "A DuckLake catalog: metadata database and data path.",
    SPEC,
    STATUS,
    (
        {"name": "Snapshot", "type": "integer", "jsonPath": ".status.currentSnapshot"},
        {"name": "Format", "type": "string", "jsonPath": ".status.formatVersion"},
        READY_COLUMN,
        AGE,
    ),
)
