"""Automatic schema evolution for ingestion (``evolution.mode: auto``): what the records'
fields were seen holding (``observed``) against a table's columns -> the columns to add and
where each value goes (pure). The rules (docs/ingest-schema-evolution.md §2-§3, §6):

1. A field met for the first time gets a column of its widest type and largest array
   dimension, under its own name; every other shape seen gets a column named with a type
   suffix (``a_string``, ``a_array2_long``), except ``long`` next to ``double`` (§3.1).
   Records take the name before arrays, arrays before primitives (§2.4); the record
   column of the largest dimension receives every nested field, the others only those seen
   at their dimension.
2. A value that fits a field's existing column (a narrower type, a smaller dimension) goes
   into it, converted; a declared column of a type no base kind is (a decimal,
   ``float32``, ``timestamptz``, ``uuid``, ...) takes the values it holds exactly
   (``value_kinds.holds``), and the field needs no other column when all of them fit (§6.2).
3. A wider or unconvertible value gets a column for the wider type of the two (``string``
   when neither is wider) and one for its own type: existing columns never change (the
   declared columns, the manifest's, always win).
4. Columns added with a type suffix carry the comment ``evolved_from:<field>`` (§2.7's field
   documentation; a DuckLake column tag, the only key DuckDB 1.5.5 reads: any other column tag
   makes it refuse the table); a column of that name without it is a column of its own,
   never reused. The marker is the comment's first line: a manifest's comment for the column
   goes after it (``comment_keeping_marker``, which the schema planner applies).
5. Values go to every column of their field they fit into (§2.8): a long also into a
   timestamp column (§3.2), a record into the field's own record column when it is
   as deep or deeper, and into the suffixed record column of exactly its dimension.

Nested fields evolve by the same rules inside each record column they go to (new fields are
added to the struct). Fields with an empty name were dropped when observed (§2.6).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import DuckLakeError
from ..model.changes import AddColumn
from ..model.names import fold, identifier_problem
from ..model.state import ColumnState, TableState
from ..model.types import Field, Struct, member_fields
from ..model.value_kinds import (
    DOUBLE,
    LONG,
    NOTHING,
    RECORD,
    STRING,
    TIMESTAMP,
    Shape,
    column_kind,
    evolved_name,
    fit_reads_extent,
    fits,
    leaf_type,
    takes,
    widest,
    widest_of,
    with_dims,
)
from .observed import Fields, FieldSeen, ShapeSeen, merge_fields

# a suffixed column's comment starts so, then names its field (docs/ingest-schema-evolution.md §2.7, §6.3)
EVOLVED_FROM = "evolved_from:"


def marker_field(comment: str | None) -> str | None:
    """The field an ``evolved_from`` comment names (its first line), else None. Field names
    hold no line breaks (they are column names in the suffixed column's name)."""
    if not comment or not comment.startswith(EVOLVED_FROM):
        return None
    return comment[len(EVOLVED_FROM) :].split("\n", 1)[0]


def evolved_from(column: ColumnState) -> str | None:
    """The field a column was added for with a type suffix (its comment says so), else None."""
    return marker_field(column.comment)


def comment_keeping_marker(current: str | None, declared: str | None) -> str | None:
    """The comment a column should have when a manifest declares ``declared`` for it (None:
    the manifest says nothing) and the catalog has ``current``. An ``evolved_from`` marker
    ingest wrote is kept, or the next ingest would find a suffixed column of its own and fail:
    alone when the manifest says nothing, else as the first line with the manifest's comment
    after it. A manifest comment that is a marker itself is taken as it is."""
    field = marker_field(current)
    if field is None or (declared is not None and declared.startswith(EVOLVED_FROM)):
        return declared
    marker = EVOLVED_FROM + field
    return f"{marker}\n{declared}" if declared else marker


@dataclass(frozen=True)
class Target:
    """A column (or struct field) that values of a field may go to."""

    index: int  # its position among its level's columns
    dims: int
    kind: str
    primary: bool  # the column named as the field (records of any smaller dimension go in)
    level: Level | None = None  # of a record column: its fields

    def takes(self, shape: Shape) -> bool:
        """Whether values of ``shape`` go here (a declared column of a type no base kind
        is takes those it holds exactly: ``routing`` checks each value)."""
        if shape.dims > self.dims:
            return False
        if shape.kind == NOTHING:
            return True
        if RECORD in (shape.kind, self.kind):
            return shape.kind == self.kind and (shape.dims == self.dims or self.primary)
        return takes(self.kind, shape.kind)


@dataclass(frozen=True)
class Level:
    """The columns of a table (or the fields of a struct) and which field goes where."""

    names: tuple[str, ...]  # every column at this level, in order
    routes: Mapping[str, tuple[Target, ...]]  # folded field name -> its columns, its own first
    required: tuple[tuple[int, str], ...] = ()  # (index, name) of NOT NULL columns
    defaults: tuple[tuple[int, str, Any], ...] = ()  # (index, folded field, value) for absent fields
    _taking: dict[tuple[str, Shape], tuple[Target, ...]] = field(default_factory=dict, compare=False, repr=False)

    def taking(self, key: str, shape: Shape) -> tuple[Target, ...]:
        """The columns of field ``key`` that take values of ``shape`` (remembered: values are
        many, their shapes few)."""
        found = self._taking.get((key, shape))
        if found is None:
            found = self._taking[(key, shape)] = tuple(t for t in self.routes.get(key, ()) if t.takes(shape))
        return found


@dataclass(frozen=True)
class IngestPlan:
    changes: tuple[AddColumn, ...]  # in commit order
    layout: tuple[ColumnState, ...]  # the table's columns after them, with the ids the commit gives
    level: Level  # where each field's values go

    def describe(self) -> list[str]:
        return [c.describe() for c in self.changes]


class EvolutionError(DuckLakeError):
    """The records need a column that cannot be added (a name taken by a column of its own)."""


def plan_ingest(table: TableState, observed: Fields, defaults: Mapping[int, Any] | None = None) -> IngestPlan:
    """``defaults``: the value of each top-level column's literal default by column id, for
    records that lack its field (as DuckDB's INSERT fills them)."""
    planner = _Planner(table)
    level = planner.level(table.columns, observed, (), top=True, defaults=defaults or {})
    changes = tuple(planner.changes)
    return IngestPlan(changes, layout_after(table.columns, changes, table.next_column_id), level)


def extents_read(table: TableState) -> frozenset[tuple[str, str]]:
    """(folded field name, kind) of the scalar values whose extent (``ShapeSeen``'s range,
    scale, digits, forms) a plan for ``table`` reads: where the field's own column is one
    ``fits`` needs the extent for (``_Planner.field``; a new column takes its kinds alone). An
    observer of flat records may leave every other extent unnoted."""
    out: set[tuple[str, str]] = set()
    for c in table.columns:
        shape = column_kind(c.type)
        if shape.kind != RECORD:
            out |= {(fold(c.name), k) for k in (LONG, DOUBLE, TIMESTAMP, STRING) if fit_reads_extent(k, shape.kind)}
    return frozenset(out)


# --------------------------------------------------------------------------- planning


@dataclass
class _Column:
    """A column of a level as planned: an existing one, or one to add."""

    name: str
    shape: Shape
    primary: bool
    existing: ColumnState | None = None
    seen: Fields = field(default_factory=dict)  # of a record column: what goes into its fields
    leaf_fields: tuple[Field, ...] = ()  # of a new record column: its fields, once planned
    comment: str | None = None


@dataclass
class _Planner:
    table: TableState
    changes: list[AddColumn] = field(default_factory=list)  # fields added to existing structs (and the table)
    new_fields: list[Field] = field(default_factory=list)  # fields of a new struct

    def level(
        self,
        current: tuple[ColumnState, ...],
        observed: Mapping[str, FieldSeen],
        path: tuple[str, ...] | None,
        *,
        top: bool = False,
        defaults: Mapping[int, Any] | None = None,
    ) -> Level:
        """Plan one level: ``current`` columns (none for a new struct), the fields seen there;
        ``path``: the struct's path to add new fields to (None: the struct is new itself,
        its fields go into its type). Returns the level's routes; new columns become
        ``AddColumn`` changes, or the ``_Column.leaf_fields`` of the caller's new struct."""
        columns = [_existing(c) for c in current]
        by_field: dict[str, list[_Column]] = {}
        for key, seen in observed.items():
            by_field[key] = self.field(columns, key, seen, path)
        for key, cols in by_field.items():
            for col in cols:
                col.seen = _routed_fields(col, observed[key])
        targets: dict[int, Target] = {}  # id of a record column -> its target, fields planned
        for col in columns:
            if col.shape.kind != RECORD:
                continue
            if col.existing is not None:
                inner = _struct_of(col.existing)
                sub_path = None if path is None else path + (col.existing.name,) + ("element",) * col.shape.dims
                targets[id(col)] = Target(
                    0, col.shape.dims, RECORD, col.primary, self.level(inner.children, col.seen, sub_path)
                )
            elif col.seen:
                sub = _Planner(self.table)
                sub_level = sub.level((), col.seen, None)
                col.leaf_fields = tuple(sub.new_fields)
                targets[id(col)] = Target(0, col.shape.dims, RECORD, col.primary, sub_level)
        new = [c for c in columns if c.existing is None and (c.shape.kind != RECORD or c.leaf_fields)]
        kept = [c for c in columns if c.existing is not None] + new
        index = {id(c): i for i, c in enumerate(kept)}
        for col in new:
            f = Field(col.name, _type_of(col), comment=col.comment)
            problem = identifier_problem(col.name, "column")
            if problem:
                raise EvolutionError(f"{self.table.qualified_name}: {problem}; the records' field cannot be a column")
            if path is None:
                self.new_fields.append(f)
            else:
                self.changes.append(AddColumn(self.table.table_id, self.table.qualified_name, path, f))
        routes: dict[str, tuple[Target, ...]] = {}
        for key, cols in by_field.items():
            found = []
            for col in cols:
                if id(col) not in index:
                    continue  # a record column that would have no field: nothing to write
                i = index[id(col)]
                planned = targets.get(id(col))
                found.append(
                    replace(planned, index=i) if planned else Target(i, col.shape.dims, col.shape.kind, col.primary)
                )
            routes[key] = tuple(found)
        required = tuple((i, c.name) for i, c in enumerate(kept) if top and c.existing and not c.existing.nullable)
        found_defaults = tuple(
            (i, fold(c.name), (defaults or {})[c.existing.column_id])
            for i, c in enumerate(kept)
            if c.existing is not None and c.existing.column_id in (defaults or {})
        )
        return Level(tuple(c.name for c in kept), routes, required, found_defaults)

    def field(self, columns: list[_Column], key: str, seen: FieldSeen, path: tuple[str, ...] | None) -> list[_Column]:
        """The columns of one field at this level (its own first), adding what its shapes need."""
        own = next((c for c in columns if fold(c.name) == key), None)
        origin = evolved_from(own.existing) if own is not None and own.existing is not None else None
        if own is not None and origin is not None and fold(origin) != key:
            raise EvolutionError(
                f"{self.table.qualified_name}: the records have a field {seen.name}, but column {own.name} holds "
                f"values of {origin} (its comment: {EVOLVED_FROM}{origin}); rename the field or the column"
            )
        evolved = [c for c in columns if c.existing is not None and fold(evolved_from(c.existing) or "\0") == key]
        shapes = dict(seen.shapes)
        needed: list[Shape] = []
        if own is None:
            if any(
                Shape(s.dims, DOUBLE) in shapes for s in shapes if s.kind == LONG
            ):  # docs/ingest-schema-evolution.md §3.1
                shapes = {s: v for s, v in shapes.items() if not (s.kind == LONG and Shape(s.dims, DOUBLE) in shapes)}
            primary = _widest_shape(list(shapes))
            own = _Column(seen.name, primary, True)
            columns.append(own)
            needed = [s for s in shapes if s != primary and s.kind != NOTHING]
        else:
            own.primary = True  # the field's own column: records of any smaller dimension go in
            # the field's double columns besides its own: those it has, and those its doubles
            # need (a declared decimal or float32 that holds them does not hold every long)
            doubles = {c.shape for c in evolved} | {
                s for s, v in shapes.items() if s.kind == DOUBLE and not _fits_column(s, v, own.shape)
            }
            for s, v in shapes.items():
                if s.kind == NOTHING or _fits_column(s, v, own.shape):
                    continue
                if s.kind == LONG and Shape(s.dims, DOUBLE) in doubles:
                    continue  # docs/ingest-schema-evolution.md §3.1 here too: the longs go to the doubles' column
                for w in (_wider(s, own.shape), s):
                    if w is not None and w not in needed:
                        needed.append(w)
        needed += _for_empty_arrays(own, evolved, shapes, needed)
        out = [own] + evolved
        for shape in needed:
            name = evolved_name(seen.name, shape)
            taken = next((c for c in columns if fold(c.name) == fold(name)), None)
            if taken is None:
                added = _Column(name, shape, False, comment=EVOLVED_FROM + seen.name)
                columns.append(added)
                out.append(added)
            elif taken not in evolved or taken.shape != shape:
                where = ".".join((path or ()) + (seen.name,))
                raise EvolutionError(
                    f"{self.table.qualified_name}: {where} needs a column {name} of type "
                    f"{_type_of(_Column(name, shape, False))} for its {shape} values, but {taken.name} is "
                    f"a column of its own (its comment is not {EVOLVED_FROM}{seen.name}); rename it, or declare the column "
                    "these values should go to"
                )
        return out


def _for_empty_arrays(
    own: _Column, evolved: list[_Column], shapes: Mapping[Shape, ShapeSeen], needed: list[Shape]
) -> list[Shape]:
    """A column for empty arrays (``[]``, ``[[]]``) that no column of the field can hold: one
    of the field's widest plain kind (string if none) and their dimension. A record column
    holds them when it has fields (DuckLake has no struct without)."""

    def holds(shape: Shape, record_fields: bool) -> bool:
        return shape.kind != RECORD or record_fields

    own_fields = own.existing is not None or any(_writable(v) for k, v in shapes.items() if k.kind == RECORD)
    holders = [(own.shape, holds(own.shape, own_fields))] + [(c.shape, True) for c in evolved]
    holders += [(s, holds(s, s in shapes and _writable(shapes[s]))) for s in needed]
    kind = widest_of([s.kind for s in [own.shape, *shapes] if s.kind not in (NOTHING, RECORD)])
    out: list[Shape] = []
    for s in sorted(s for s in shapes if s.kind == NOTHING):
        if any(h.dims >= s.dims and ok for h, ok in holders):
            continue
        extra = Shape(s.dims, STRING if kind in (None, NOTHING) else kind)
        if extra not in needed and extra not in out:
            out.append(extra)
            holders.append((extra, True))
    return out


def _writable(seen: ShapeSeen) -> bool:
    """Records with a field that gets a column: one with a value that is not a record of nothing."""
    return any(k.kind != RECORD or _writable(v) for f in seen.fields.values() for k, v in f.shapes.items())


def _existing(c: ColumnState) -> _Column:
    return _Column(c.name, column_kind(c.type), False, existing=c)


def _struct_of(c: ColumnState) -> ColumnState:
    while c.type_name == "list":
        c = c.children[0]
    return c


def _widest_shape(shapes: list[Shape]) -> Shape:
    """A new field's own column: records first, then the largest dimension and widest type."""
    records = [s for s in shapes if s.kind == RECORD]
    if records:
        return Shape(max(s.dims for s in records), RECORD)
    kinds = [s.kind for s in shapes]
    kind = widest_of(kinds) or next(k for k in kinds if k != NOTHING)  # none is wider: the first seen
    return Shape(max(s.dims for s in shapes), STRING if kind == NOTHING else kind)


def _fits_column(s: Shape, seen: ShapeSeen, column: Shape) -> bool:
    if s.dims > column.dims:
        return False
    if RECORD in (s.kind, column.kind) and s.kind != NOTHING:
        return s.kind == column.kind
    return fits(s.kind, column.kind, seen)


def _wider(s: Shape, column: Shape) -> Shape | None:
    kind = widest(s.kind, column.kind)
    return None if kind is None else Shape(max(s.dims, column.dims), kind)


def _routed_fields(col: _Column, seen: FieldSeen) -> Fields:
    """The nested fields of the records that go into a record column."""
    out: Fields = {}
    if col.shape.kind != RECORD:
        return out
    for s, v in seen.shapes.items():
        if s.kind == RECORD and (s.dims == col.shape.dims or (col.primary and s.dims < col.shape.dims)):
            merge_fields(out, v.fields)
    return out


def _type_of(col: _Column) -> Any:
    leaf = Struct(col.leaf_fields) if col.shape.kind == RECORD else leaf_type(col.shape.kind)
    return with_dims(leaf, col.shape.dims)


# --------------------------------------------------------------------------- the layout after


def layout_after(
    columns: tuple[ColumnState, ...], adds: tuple[AddColumn, ...], next_id: int
) -> tuple[ColumnState, ...]:
    """The table's columns once ``adds`` are committed, with the ids the commit allocates
    (each column and its children depth-first from the next free id, in change order)."""
    out = columns
    for change in adds:
        new, next_id = _states(change.field, next_id, None)
        out = _insert(out, change.parent_path, new)
    return out


def _states(f: Field, next_id: int, parent: int | None) -> tuple[ColumnState, int]:
    cid, next_id = next_id, next_id + 1
    children: list[ColumnState] = []
    t = f.type
    for sub in member_fields(t):
        child, next_id = _states(sub, next_id, cid)
        children.append(child)
    state = ColumnState(
        column_id=cid,
        name=f.name,
        type_name=t.name,
        nullable=f.nullable,
        initial_default=None,
        default_value=None,
        default_value_type=None,
        parent_id=parent,
        order=cid,
        begin_snapshot=0,
        children=tuple(children),
        tags=dict(f.tags) | ({"comment": f.comment} if f.comment is not None else {}),
    )
    return state, next_id


def _insert(columns: tuple[ColumnState, ...], path: tuple[str, ...], new: ColumnState) -> tuple[ColumnState, ...]:
    if not path:
        return columns + (new,)
    out = []
    for c in columns:
        if fold(c.name) == fold(path[0]):
            if len(path) == 1:
                c = replace(c, children=c.children + (replace(new, parent_id=c.column_id),))
            else:
                c = replace(c, children=_insert(c.children, path[1:], new))
        out.append(c)
    return tuple(out)
