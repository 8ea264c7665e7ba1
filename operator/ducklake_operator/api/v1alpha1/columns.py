"""A table's columns: a tree of fields (struct fields, list elements, map keys and values),
read with DuckLake's types and DuckDB's rules on names, defaults and renames."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import SpecError
from ...model.defaults import encode_default
from ...model.names import fold
from ...model.types import ALIASES, PRIMITIVES, DuckLakeType, Field, ListOf, MapOf, Struct, parse_type
from ..problems import Problems
from .common import comment, identifier, read_tags, renamed_from
from .fields import Anything, Arr, Bool, Obj, Str, StrMap, obj

TYPE_DOC = (
    "DuckLake type: " + ", ".join(PRIMITIVES) + ", decimal(P,S), or struct/list/map with fields/element/key+value. "
    "DuckDB spellings are accepted and normalised ("
    + ", ".join(sorted(a for a in ALIASES if " " not in a)[:12])
    + ", ...)."
)
# DuckDB 1.5.5 fails every query on a table (and SHOW TABLES on its catalog) when a column
# carries a tag other than its comment: "Only comment tags are supported for columns currently"
COLUMN_TAGS_REFUSED = (
    "DuckDB 1.5.5 cannot read a table whose columns carry tags (every query on it fails: 'Only comment tags "
    "are supported for columns currently'); say it in the column's comment, or tag the table"
)
FIELDS_DOC = "For type struct: its fields, same shape as columns."


def column(depth: int) -> Obj:
    """A column or struct field; nested ``fields`` are spelled out a few levels deep (CRD
    schemas cannot recurse), deeper levels are validated by the operator."""
    return obj(
        "A column: name, type and options.",
        {
            "name": identifier("column", "Column name (case-insensitive in DuckDB; quotes and semicolons are fine)."),
            "type": Str(desc=TYPE_DOC, min_length=1),
            "nullable": Bool(
                desc="Whether NULL is allowed. Setting false on an existing column is a destructive change.",
                default=True,
            ),
            "default": Anything(
                desc="Default for new rows and for rows written before the column existed: a constant, or "
                "{expression: <DuckDB SQL>} (only when the column is created with its table)."
            ),
            "comment": comment("Column comment (DuckDB COMMENT ON COLUMN)."),
            "tags": StrMap(
                desc="Column tags: must be empty. DuckDB 1.5.5 cannot read a table whose columns carry tags other "
                "than the comment (use comment, or the table's tags).",
                extra={"maxProperties": 0},
            ),
            "renamedFrom": renamed_from(
                "Earlier names of this column: declares a rename, keeping the column id and its data."
            ),
            "element": Anything(
                desc="For type list: the element type (a type name, or a mapping with type and fields)."
            ),
            "key": Anything(desc="For type map: the key type."),
            "value": Anything(desc="For type map: the value type (a type name, or a mapping with type and fields)."),
            "fields": Arr(desc=FIELDS_DOC, items=column(depth - 1) if depth > 0 else Anything(desc="A field.")),
        },
        required=("name", "type"),
        allowed=(
            "name",
            "type",
            "nullable",
            "default",
            "comment",
            "tags",
            "renamedFrom",
            "fields",
            "element",
            "key",
            "value",
        ),  # fmt: skip
    )


COLUMN = column(0)  # how the loader reads one, at any depth


def read_columns(p: Problems, o: Any, key: str, path: str) -> tuple[Field, ...]:
    """``spec.columns``: at least one."""
    raw = p.get(o, key, path, list, required=True, default=[])
    if not raw and key in o:
        p.add(f"{path}.{key}", "a table needs at least one column")
    return _fields(raw, f"{path}.{key}", p)


def _fields(raw: list[Any], path: str, p: Problems) -> tuple[Field, ...]:
    out: list[Field] = []
    seen: dict[str, str] = {}
    claimed: dict[str, str] = {}
    for i, item in enumerate(raw):
        item_path = f"{path}[{i}]"
        if not isinstance(item, Mapping):
            p.add(item_path, "must be a mapping with name and type")
            continue
        f = _field(item, item_path, p)
        if f is None:
            continue
        if fold(f.name) in seen:
            p.add(
                f"{item_path}.name",
                f"duplicate column name {f.name!r} (also {seen[fold(f.name)]}; names are case-insensitive)",
            )
        seen[fold(f.name)] = item_path
        for old in f.renamed_from:
            if fold(old) == fold(f.name):
                p.add(f"{item_path}.renamedFrom", f"{old!r} is the column's own name")
            elif fold(old) in claimed:
                p.add(f"{item_path}.renamedFrom", f"{old!r} is also claimed by {claimed[fold(old)]}")
            claimed[fold(old)] = item_path
        out.append(f)
    for old, claimer in claimed.items():
        if old in seen and seen[old] != claimer:
            p.add(
                f"{claimer}.renamedFrom",
                f"{old!r} is still declared as a column ({seen[old]}); a renamed column must not stay",
            )
    return tuple(out)


def _field(item: Mapping[str, Any], path: str, p: Problems) -> Field | None:
    p.keys(item, path, COLUMN.allowed or ())
    props = COLUMN.props
    name = props["name"].read(p, item, "name", path)
    type_ = _type(item, path, p)
    if type_ is None or not name:
        return None
    default = None
    if item.get("default") is not None:
        try:
            default = encode_default(item["default"], type_, at_create=True, where=f"{path}.default")
        except SpecError as exc:
            p.items.extend(exc.problems)
    comment = p.get(item, "comment", path, str)
    return Field(
        name=name,
        type=type_,
        nullable=props["nullable"].read(p, item, "nullable", path),
        default=default,
        comment=comment,
        tags=_column_tags(item, path, p),
        renamed_from=props["renamedFrom"].read(p, item, "renamedFrom", path),
    )


def _column_tags(item: Mapping[str, Any], path: str, p: Problems) -> tuple[tuple[str, str], ...]:
    """A column's tags: none (the field stays in the API for the day DuckDB reads them)."""
    if read_tags(p, item, "tags", path, with_comment=False):
        p.add(f"{path}.tags", COLUMN_TAGS_REFUSED)
    return ()


def _type(item: Mapping[str, Any], path: str, p: Problems) -> DuckLakeType | None:
    raw = item.get("type")
    if raw is None:
        p.add(f"{path}.type", "is required")
        return None
    if not isinstance(raw, str):
        p.add(f"{path}.type", f"must be a type name, got {raw!r}")
        return None
    lower = raw.strip().lower()
    if lower == "struct" and "fields" in item:
        fields = _fields(p.get(item, "fields", path, list, required=True, default=[]), f"{path}.fields", p)
        if not fields:
            p.add(f"{path}.fields", "a struct needs at least one field")
            return None
        return Struct(fields)
    if lower == "list" and "element" in item:
        element = _element(item["element"], f"{path}.element", p)
        return ListOf(element) if element is not None else None
    if lower == "map" and ("key" in item or "value" in item):
        key, value = _element(item.get("key"), f"{path}.key", p), _element(item.get("value"), f"{path}.value", p)
        return MapOf(key, value) if key is not None and value is not None else None
    if lower in ("struct", "list", "map"):
        needs = {"struct": "fields", "list": "element", "map": "key and value"}[lower]
        p.add(f"{path}.type", f"{lower} needs {needs}")
        return None
    for extra in ("fields", "element", "key", "value"):
        if extra in item:
            p.add(f"{path}.{extra}", f"only for struct, list or map types, not {raw}")
    try:
        return parse_type(raw)
    except SpecError as exc:
        p.add(f"{path}.type", exc.problems[0])
        return None


def _element(raw: Any, path: str, p: Problems) -> DuckLakeType | None:
    if raw is None:
        p.add(path, "is required")
        return None
    if isinstance(raw, str):
        return _type({"type": raw}, path, p)
    if isinstance(raw, Mapping):
        p.keys(raw, path, ("type", "fields", "element", "key", "value"))
        return _type(raw, path, p)
    p.add(path, f"must be a type name or a mapping, got {raw!r}")
    return None
