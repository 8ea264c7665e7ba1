"""DuckLakeSchema: a schema in a catalog."""

from __future__ import annotations

from dataclasses import dataclass

from .common import CATALOG_REF, DELETION, DELETION_POLICY, ObjectRef, comment, identifier, tags
from .fields import Int, obj
from .kind import AGE, READY_COLUMN, Kind
from .names import SCHEMA_KIND, SCHEMAS
from .status import plan_status, status


@dataclass(frozen=True)
class SchemaSpec:
    ref: ObjectRef
    catalog: str
    name: str
    tags: tuple[tuple[str, str], ...] = ()  # 'comment' included
    deletion_policy: str = DELETION_POLICY.default


SPEC = obj(
    "Desired state of a schema in a DuckLake catalog.",
    {
        "catalogRef": CATALOG_REF,
        "name": identifier("schema", "Schema name in the catalog."),
        "comment": comment("Schema comment."),
        "tags": tags("Schema tags."),
        "deletionPolicy": DELETION,
    },
    required=("catalogRef", "name"),
    order=("name", "catalogRef", "comment", "tags", "deletionPolicy"),
    to=SchemaSpec,
)
STATUS = status(
    {
        "schemaId": Int(desc="schema_id in the catalog."),
        "snapshot": Int(desc="The snapshot that created the schema."),
        **plan_status(),
    }
)
SCHEMA = Kind(
    SCHEMA_KIND,
    SCHEMAS,
    ("dls",),
    "A schema in a DuckLake catalog.",
    SPEC,
    STATUS,
    (
        {"name": "Catalog", "type": "string", "jsonPath": ".spec.catalogRef.name"},
        {"name": "Schema", "type": "string", "jsonPath": ".spec.name"},
        READY_COLUMN,
        AGE,
    ),
)
