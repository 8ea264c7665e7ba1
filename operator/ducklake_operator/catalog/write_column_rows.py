"""The ``ducklake_column`` rows of a column and its nested fields, as DuckDB 1.5.5 writes
them (docs/ducklake-format.md §3), after checking the field names and types."""

from __future__ import annotations

from typing import Any

from ..errors import SpecError
from ..model.names import check_identifier, fold
from ..model.types import DuckLakeType, Field, ListOf, MapOf, Struct, is_nested, member_fields


def validate_fields(fields: tuple[Field, ...], where: str) -> None:
    """Names valid and unique (case-insensitively) at every level of the tree."""
    problems: list[str] = []

    def visit(fs: tuple[Field, ...], path: str) -> None:
        seen: dict[str, str] = {}
        if not fs:
            problems.append(
                f"{path or where}: needs at least one column"
                if not path
                else f"{path}: a struct needs at least one field"
            )
        for f in fs:
            label = f"{path}.{f.name}" if path else str(f.name)
            try:
                check_identifier(f.name, "column")
            except SpecError as exc:
                problems.extend(exc.problems)
                continue
            if fold(f.name) in seen:
                problems.append(
                    f"{label}: duplicate column name (same as {seen[fold(f.name)]!r}; names are case-insensitive)"
                )
            seen[fold(f.name)] = f.name
            if f.default is not None and is_nested(f.type):
                problems.append(f"{label}: defaults on {f.type.name} columns are not supported by DuckLake")
            for sub, sub_path in _nested_structs(f.type, label):
                visit(sub.fields, sub_path)

    visit(fields, "")
    if problems:
        raise SpecError(problems, source=where)


def _nested_structs(t: DuckLakeType, path: str) -> list[tuple[Struct, str]]:
    if isinstance(t, Struct):
        return [(t, path)]
    if isinstance(t, ListOf):
        return _nested_structs(t.element, f"{path}.element")
    if isinstance(t, MapOf):
        return _nested_structs(t.key, f"{path}.key") + _nested_structs(t.value, f"{path}.value")
    return []


def type_names(t: DuckLakeType) -> list[str]:
    out = [t.name]
    for sub in member_fields(t):
        out += type_names(sub.type)
    return out


def column_rows(
    f: Field,
    *,
    table_id: int,
    snapshot_id: int,
    first_id: int,
    parent_id: int | None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """``ducklake_column`` rows (depth-first ids from ``first_id``) and column-tag rows for a
    new column or field; returns them with the next free id.

    An expression default has no ``initial_default`` (DuckDB only accepts one at CREATE
    TABLE; the planner refuses it for added columns).
    """
    columns: list[dict[str, Any]] = []
    tags: list[dict[str, Any]] = []
    next_id = first_id

    def add(c: Field, parent: int | None) -> None:
        nonlocal next_id
        cid = next_id
        next_id += 1
        t, default = c.type, c.default
        if is_nested(t):
            initial, value, kind = None, "NULL", ""
        elif default is None:
            initial, value, kind = None, "NULL", "literal"
        else:
            initial, value = default.initial_default, default.value
            kind = "expression" if default.is_expression else "literal"
        columns.append(
            dict(
                column_id=cid,
                begin_snapshot=snapshot_id,
                end_snapshot=None,
                table_id=table_id,
                column_order=cid,
                column_name=c.name,
                column_type=t.name,
                initial_default=initial,
                default_value=value,
                nulls_allowed=c.nullable,
                parent_column=parent,
                default_value_type=kind,
                default_value_dialect="duckdb",
            )
        )
        for key, tag_value in ((("comment", c.comment),) if c.comment is not None else ()) + c.tags:
            tags.append(
                dict(
                    table_id=table_id,
                    column_id=cid,
                    begin_snapshot=snapshot_id,
                    end_snapshot=None,
                    key=key,
                    value=tag_value,
                )
            )
        for sub in member_fields(t):
            add(sub, cid)

    add(f, parent_id)
    return columns, tags, next_id
