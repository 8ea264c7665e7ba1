"""Read a data file in a table layout other than the one it was written with.

A file group of one schema version can hold files written in an older layout: a rewrite
(ours or DuckDB's ``ducklake_rewrite_data_files``) keeps a file's own columns but begins
at the rewrite's snapshot. Merging such files writes the group's layout, as DuckDB's reader
would present them: columns matched by field id (renames followed, nested too), columns the
file lacks filled with their ``initial_default``, dropped ones left out, types cast to the
layout's (promotions). Pure: SQL text from field ids and column states.
"""

from __future__ import annotations

from collections.abc import Sequence

from ducklake_operator.model.state import ColumnState
from ducklake_operator.model.types import to_duckdb_sql

from .parquet_writer import FieldIds, field_ids_from_columns, literal, quote


def same_layout(found: Sequence[FieldIds], target: Sequence[ColumnState]) -> bool:
    """The file's visible columns are the layout's: same names, same field ids, same order."""
    return tuple(found) == field_ids_from_columns(target)


def projection(found: Sequence[FieldIds], target: Sequence[ColumnState], ref: str = "p") -> list[str]:
    """One ``expr AS "name"`` per column of ``target``, reading a scan ``ref`` of a file whose
    visible columns are ``found``."""
    by_id = {f.field_id: f for f in found}
    out = []
    for col in target:
        field = by_id.get(col.column_id)
        expr = _expr(col, field, f"{ref}.{quote(field.name)}" if field else "", 0)
        out.append(f"{expr} AS {quote(col.name)}")
    return out


def _expr(col: ColumnState, field: FieldIds | None, ref: str, depth: int) -> str:
    sql_type = to_duckdb_sql(col.type)
    if field is None:  # written before the column existed
        if col.initial_default is None:
            return f"NULL::{sql_type}"
        return f"CAST({literal(col.initial_default)} AS {sql_type})"
    if not col.children or field.children == field_ids_from_columns(col.children):
        return f"CAST({ref} AS {sql_type})"
    kids = {f.field_id: f for f in field.children}
    if col.type_name == "struct":
        parts = ", ".join(
            f"{quote(c.name)} := "
            + _expr(
                c,
                kids.get(c.column_id),
                f"struct_extract({ref}, {literal(kids[c.column_id].name)})" if c.column_id in kids else "",
                depth + 1,
            )
            for c in col.children
        )
        return f"CASE WHEN {ref} IS NULL THEN NULL ELSE struct_pack({parts}) END"
    var = f"__x{depth}"
    if col.type_name == "list":
        (element,) = col.children
        return f"list_transform({ref}, {var} -> {_expr(element, kids.get(element.column_id), var, depth + 1)})"
    key, value = col.children  # map
    entry = ", ".join(
        f"{name} := " + _expr(c, kids.get(c.column_id), f"struct_extract({var}, '{name}')", depth + 1)
        for name, c in (("key", key), ("value", value))
    )
    return f"map_from_entries(list_transform(map_entries({ref}), {var} -> struct_pack({entry})))"
