"""plan_table(spec, catalog state) -> TablePlan. Pure: no I/O, no clock.

Identity is by name plus ``renamedFrom`` (sqlglot's "matchings"): a column that disappears
without a rename is a drop, a new name is an add with a new id, so an old file's data can
never surface under a new column (Iceberg's guarantee 1). Renames are matched first, so a
swap (``b`` renamed from ``a`` while a new ``a`` is added) works.

Order within the plan (one commit): table rename, column renames (parents first), type
changes, defaults, nullability, drops, adds, column tags, table tags, partitioning, sort
order, options. Ids of added columns are assigned at commit (MAX+1 over all rows ever).

A type change that is no lossless promotion is blocked, unless ``typeChanges: rewrite`` and
``model.conversions`` can convert it: then it is a heavy change (``RewriteColumnType``),
which the plan carries with a "heavy: rewrite N files, M bytes" note; one rewriteColumnType
job does every such change of the plan and commits the plan's other changes with them, in
one snapshot (``evolution.heavy``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ..api.v1alpha1.schema import SchemaSpec
from ..api.v1alpha1.table import TableSpec
from ..errors import SchemaNotFound, SpecError
from ..model.changes import (
    AddColumn,
    Change,
    CreateSchema,
    CreateTable,
    DropColumn,
    PartitionColumn,
    PromoteColumn,
    RenameColumn,
    RenameTable,
    RewriteColumnType,
    SetColumnTags,
    SetDefault,
    SetNullable,
    SetOption,
    SetPartitioning,
    SetSortOrder,
    SetTags,
    SortExpression,
)
from ..model.conversions import column_rewrite_problem
from ..model.defaults import BOOLEAN_EXPRESSIONS, default_warnings, for_added_column
from ..model.names import column_reference_sql, fold, same_name
from ..model.plans import BlockedChange, TablePlan
from ..model.promotion import promotion_problem
from ..model.state import CatalogState, ColumnState, TableState
from ..model.types import DuckLakeType, Field, ListOf, MapOf, Struct, is_nested
from .auto_schema import comment_keeping_marker


def plan_table(spec: TableSpec, catalog: CatalogState, pending_schemas: frozenset[str] = frozenset()) -> TablePlan:
    """``pending_schemas``: schemas an earlier plan of the same run creates."""
    if any(same_name(s, spec.schema) for s in pending_schemas):
        return _create_plan(spec, catalog.snapshot.snapshot_id)
    if catalog.schema(spec.schema) is None:
        raise SchemaNotFound(
            f"{spec.ref}: schema {spec.schema!r} does not exist in the catalog; declare it with a DuckLakeSchema"
        )
    base = catalog.snapshot.snapshot_id
    table = catalog.table(spec.schema, spec.name)
    prefix: list[Change] = []
    if table is None:
        old = next((t for old_name in spec.renamed_from if (t := catalog.table(spec.schema, old_name))), None)
        if old is None:
            return _create_plan(spec, base)
        prefix.append(RenameTable(old.table_id, old.qualified_name, spec.name))
        table = old
    return _Differ(spec, table).plan(base, prefix)


def _create_plan(spec: TableSpec, base: int) -> TablePlan:
    changes: list[Change] = [
        CreateTable(
            spec.schema,
            spec.name,
            spec.columns,
            tags=spec.tags,
            partition_by=tuple(PartitionColumn(_top_name(spec, k.column), k.transform) for k in spec.partition_by),
            sort_by=tuple(_sort_expression(_top_name(spec, k.column), k.direction, k.nulls) for k in spec.sort_by),
        )
    ]
    changes += [SetOption(k, v, scope="table", scope_name=spec.qualified_name) for k, v in spec.options]
    return TablePlan(spec.qualified_name, base, tuple(changes), notes=tuple(default_warnings(spec.columns)))


def _top_name(spec: TableSpec, column: str) -> str:
    return next((c.name for c in spec.columns if fold(c.name) == fold(column)), column)


def _sort_expression(column: str, direction: str, nulls: str) -> SortExpression:
    return SortExpression(column, direction.upper(), f"NULLS_{nulls.upper()}")


def _default_key(value: str | None, kind: str | None) -> tuple[str, str] | None:
    """Comparable form of a stored default (booleans have two stored spellings)."""
    if value is None or value == "NULL":
        return None
    if value in BOOLEAN_EXPRESSIONS:
        return ("literal", BOOLEAN_EXPRESSIONS[value])
    return (kind or "literal", value)


@dataclass
class _Differ:
    spec: TableSpec
    table: TableState
    renames: list[Change] = field(default_factory=list)
    types: list[Change] = field(default_factory=list)
    defaults: list[Change] = field(default_factory=list)
    nullability: list[Change] = field(default_factory=list)
    drops: list[Change] = field(default_factory=list)
    adds: list[Change] = field(default_factory=list)
    tags: list[Change] = field(default_factory=list)
    blocked: list[BlockedChange] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rewrites: list[str] = field(default_factory=list)  # the heavy changes' "path old → new", for one note
    problems: list[str] = field(default_factory=list)
    top_ids: dict[str, int] = field(default_factory=dict)  # desired top-level name -> column id

    @property
    def tid(self) -> int:
        return self.table.table_id

    @property
    def tname(self) -> str:
        return self.spec.qualified_name

    def plan(self, base: int, prefix: list[Change]) -> TablePlan:
        self.fields(self.spec.columns, self.table.columns, (), top=True)
        if self.problems:
            raise SpecError(self.problems, source=str(self.spec.ref))
        tail = self.table_level()
        changes = tuple(
            prefix
            + self.renames
            + self.types
            + self.defaults
            + self.nullability
            + self.drops
            + self.adds
            + self.tags
            + tail
        )
        if self.rewrites:
            files = [f for f in self.table.data_files if f.end_snapshot is None]
            self.notes.append(
                f"heavy: rewrite {len(files)} files, {sum(f.file_size_bytes for f in files)} bytes: one "
                f"rewriteColumnType job converts {', '.join(self.rewrites)} in one pass over them, and commits the "
                "plan's other changes with them in one snapshot"
            )
        notes = tuple(default_warnings(self.spec.columns) + self.notes)
        plan = TablePlan(self.tname, base, changes, tuple(self.blocked), tuple(self.unsupported), notes)
        approvable = all(not isinstance(b.change, RewriteColumnType) for b in plan.blocked)
        if plan.blocked and approvable and self.spec.evolution.approved_plan == plan.hash:
            plan = replace(plan, approved=True)
        return plan

    # ---------------------------------------------------------------- columns

    def fields(
        self, desired: tuple[Field, ...], current: tuple[ColumnState, ...], parent: tuple[str, ...], top: bool
    ) -> None:
        by_name = {fold(c.name): c for c in current}
        matched: dict[int, Field] = {}
        pairs: list[tuple[Field, ColumnState | None]] = []
        claimed_by_rename: set[int] = set()
        # renames first: a desired field whose name is free but an old name exists
        rename_of: dict[int, ColumnState] = {}
        for i, d in enumerate(desired):
            if fold(d.name) in by_name and not any(fold(o) in by_name for o in d.renamed_from):
                continue
            for old in d.renamed_from:
                c = by_name.get(fold(old))
                if c is not None and fold(d.name) not in by_name:
                    rename_of[i] = c
                    claimed_by_rename.add(c.column_id)
                    break
        for i, d in enumerate(desired):
            c = rename_of.get(i)
            if c is None:
                c = by_name.get(fold(d.name))
                if c is not None and c.column_id in claimed_by_rename:
                    c = None  # its old name moved to another column: this is a new column
            if c is None and d.renamed_from and fold(d.name) not in by_name:
                where = ".".join(parent + (d.name,))
                self.problems.append(
                    f"{where}.renamedFrom: no column named {' or '.join(map(repr, d.renamed_from))} "
                    f"exists to rename; remove renamedFrom to add {d.name!r} as a new column"
                )
                continue
            if c is not None:
                matched[c.column_id] = d
            pairs.append((d, c))
        self.check_order(pairs, current, parent)
        for d, c in pairs:
            if c is None:
                self.add(d, parent, top)
            else:
                if top:
                    self.top_ids[fold(d.name)] = c.column_id
                self.compare(c, d, parent, top)
        for c in current:
            if c.column_id not in matched:
                path = parent + (c.name,)
                if self.spec.evolution.mode == "auto":
                    self.notes.append(f"kept {'.'.join(path)}: not in the manifest (mode: auto)")
                    continue
                drop = DropColumn(self.tid, self.tname, c.column_id, path)
                self.drops.append(drop)
                if not self.spec.evolution.allow_drop_columns:
                    self.blocked.append(
                        BlockedChange(
                            drop,
                            "allowDropColumns is false",
                            "spec.evolution.allowDropColumns: true, or approvedPlan: <plan hash>",
                        )
                    )

    def check_order(
        self, pairs: list[tuple[Field, ColumnState | None]], current: tuple[ColumnState, ...], parent: tuple[str, ...]
    ) -> None:
        where = ".".join(parent) or self.tname
        orders = [c.order for _, c in pairs if c is not None]
        if orders != sorted(orders):
            desired = ", ".join(d.name for d, c in pairs if c is not None)
            actual = ", ".join(c.name for c in sorted((c for _, c in pairs if c is not None), key=lambda c: c.order))
            self.unsupported.append(
                f"{where}: DuckLake cannot reorder existing columns (catalog order: {actual}; manifest: {desired})"
            )
        seen_new = None
        for d, c in pairs:
            if c is None and seen_new is None:
                seen_new = d.name
            elif c is not None and seen_new is not None:
                self.unsupported.append(
                    f"{where}: new column {seen_new!r} would be placed after {c.name!r} by DuckLake "
                    "(new columns go last); move it to the end"
                )
                break

    def add(self, d: Field, parent: tuple[str, ...], top: bool) -> None:
        where = ".".join(parent + (d.name,))
        try:
            f = _for_added(d, where)
        except SpecError as exc:
            self.problems.extend(exc.problems)
            return
        has_rows = bool(self.table.stats and self.table.stats.record_count)
        if not d.nullable and top and d.default is None and has_rows:
            self.unsupported.append(
                f"{where}: a NOT NULL column added to a table with rows needs a default (existing rows would read NULL)"
            )
        if not d.nullable and not top:
            self.unsupported.append(f"{where}: DuckLake does not enforce NOT NULL on nested fields")
        self.adds.append(AddColumn(self.tid, self.tname, parent, f))

    def compare(self, c: ColumnState, d: Field, parent: tuple[str, ...], top: bool) -> None:
        path = parent + (d.name,)
        if c.name != d.name:
            self.renames.append(RenameColumn(self.tid, self.tname, c.column_id, parent + (c.name,), d.name))
        self.compare_type(c, d.type, path)
        if top and c.nullable != d.nullable:
            change = SetNullable(self.tid, self.tname, c.column_id, path, d.nullable)
            self.nullability.append(change)
            if not d.nullable:
                self.blocked.append(
                    BlockedChange(change, f"makes {'.'.join(path)} NOT NULL", "approvedPlan: <plan hash>")
                )
        elif not top and not d.nullable:
            self.unsupported.append(f"{'.'.join(path)}: DuckLake does not enforce NOT NULL on nested fields")
        if not is_nested(d.type):
            want = d.default
            if _default_key(c.default_value, c.default_value_type) != (
                _default_key(want.value, "expression" if want.is_expression else "literal") if want else None
            ):
                self.defaults.append(SetDefault(self.tid, self.tname, c.column_id, path, want))
        desired_tags = dict(d.tags) | ({"comment": d.comment} if d.comment is not None else {})
        declared = desired_tags.get("comment")
        comment = comment_keeping_marker(c.tags.get("comment"), declared)
        if comment is not None:
            desired_tags["comment"] = comment
        diff = _tag_diff(c.tags, desired_tags)
        if diff:
            self.tags.append(SetColumnTags(self.tid, self.tname, c.column_id, path, diff))
            if declared and comment != declared:
                marker = (comment or "").split("\n", 1)[0]
                self.notes.append(
                    f"{'.'.join(path)}: its comment keeps the line {marker!r} before the manifest's comment "
                    "(ingest routes the field's values by it)"
                )

    def compare_type(self, c: ColumnState, want: DuckLakeType, path: tuple[str, ...]) -> None:
        have = c.type
        if isinstance(want, Struct) and c.type_name == "struct":
            self.fields(want.fields, c.children, path, top=False)
        elif isinstance(want, ListOf) and c.type_name == "list":
            self.compare_type(c.children[0], want.element, path + ("element",))
        elif isinstance(want, MapOf) and c.type_name == "map":
            if c.children[0].type != want.key:
                self.unsupported.append(
                    f"{'.'.join(path)}: map keys cannot change type ({c.children[0].type} → {want.key})"
                )
            self.compare_type(c.children[1], want.value, path + ("value",))
        elif have != want:
            problem = (
                promotion_problem(have, want)
                if not (is_nested(have) or is_nested(want))
                else (f"{have.name} → {want.name} changes the kind of the column")
            )
            if problem is None:
                self.types.append(PromoteColumn(self.tid, self.tname, c.column_id, path, have, want))
                self.notes.append(
                    f"DuckDB 1.5.5 sessions that read {self.tname} before this promotion fail queries "
                    f"filtering on {'.'.join(path)} until they attach the lake again (README)"
                )
                return
            change = RewriteColumnType(self.tid, self.tname, c.column_id, path, have, want)
            self.types.append(change)
            keyed = len(path) == 1 and any(fold(k.column) == fold(path[0]) for k in self.spec.partition_by)
            rewrite_problem = (
                column_rewrite_problem(path, self.parent_types(c), have, want, keyed)
                if not (is_nested(have) or is_nested(want))
                else problem
            )
            reason = problem if self.spec.evolution.type_changes == "promote" else rewrite_problem
            if reason is not None:
                self.blocked.append(
                    BlockedChange(
                        change,
                        reason,
                        "spec.evolution.typeChanges: rewrite (rewrites the data)"
                        if rewrite_problem is None
                        else "a type the column can be converted to (README, heavy-weight changes), or its old type",
                    )
                )
            else:
                self.rewrites.append(f"{'.'.join(path)} {have} → {want}")

    def parent_types(self, c: ColumnState) -> tuple[str, ...]:
        """The type names of the columns above ``c``, top-level first."""
        out: list[str] = []
        parent = self.table.column_by_id(c.parent_id) if c.parent_id is not None else None
        while parent is not None:
            out.insert(0, parent.type_name)
            parent = self.table.column_by_id(parent.parent_id) if parent.parent_id is not None else None
        return tuple(out)

    # ---------------------------------------------------------------- table level

    def table_level(self) -> list[Change]:
        out: list[Change] = []
        diff = _tag_diff(self.table.tags, dict(self.spec.tags))
        if diff:
            out.append(SetTags(self.tid, self.tname, diff))
        current_part = [(f.column_id, f.transform) for f in self.table.partition.fields] if self.table.partition else []
        wanted_part = [(self.top_ids.get(fold(k.column)), k.transform) for k in self.spec.partition_by]
        if current_part != wanted_part:
            out.append(
                SetPartitioning(
                    self.tid,
                    self.tname,
                    tuple(PartitionColumn(_top_name(self.spec, k.column), k.transform) for k in self.spec.partition_by),
                )
            )
        current_sort = (
            [(f.expression, f.direction, f.null_order) for f in self.table.sort.fields] if self.table.sort else []
        )
        wanted = [_sort_expression(_top_name(self.spec, k.column), k.direction, k.nulls) for k in self.spec.sort_by]
        if current_sort != [(column_reference_sql(s.column), s.direction, s.null_order) for s in wanted]:
            out.append(SetSortOrder(self.tid, self.tname, tuple(wanted)))
        desired_options = dict(self.spec.options)
        for key in sorted(set(self.table.options) | set(desired_options)):
            if self.table.options.get(key) != desired_options.get(key):
                out.append(
                    SetOption(key, desired_options.get(key), scope="table", scope_id=self.tid, scope_name=self.tname)
                )
        return out


def _tag_diff(current: Mapping[str, str], desired: Mapping[str, str]) -> tuple[tuple[str, str | None], ...]:
    cur = dict(current)
    keys = sorted(set(cur) | set(desired))
    return tuple((k, desired.get(k)) for k in keys if cur.get(k) != desired.get(k))


def _for_added(d: Field, where: str) -> Field:
    """An added column's defaults in the form DuckDB accepts for added columns."""
    t = d.type
    if isinstance(t, Struct):
        t = Struct(tuple(_for_added(f, f"{where}.{f.name}") for f in t.fields))
    default = for_added_column(d.default, where) if d.default is not None else None
    return replace(d, type=t, default=default, renamed_from=())


def plan_schema(spec: SchemaSpec, catalog: CatalogState) -> TablePlan:
    """A DuckLakeSchema: create it, or bring its tags and comment in line."""
    existing = catalog.schema(spec.name)
    base = catalog.snapshot.snapshot_id
    if existing is None:
        return TablePlan(spec.name, base, (CreateSchema(spec.name, tags=spec.tags),))
    diff = _tag_diff(existing.tags, dict(spec.tags))
    changes: tuple[Change, ...] = (SetTags(existing.schema_id, spec.name, diff, is_table=False),) if diff else ()
    return TablePlan(spec.name, base, changes)
