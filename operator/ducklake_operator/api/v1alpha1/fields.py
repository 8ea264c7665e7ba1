"""Field declarations: each says once what a manifest field is (description, enum, pattern,
default, bounds, its maintenance ``Param``), and so both how the loader reads it (with the
field path of every problem) and how the CRD's OpenAPI schema renders it.

A declaration reads into the spec dataclass's field named by ``attr`` (by default the field's
key in snake_case; None: a hook of the enclosing object uses it). ``reader`` replaces the
generic reading where a field means more than its shape (identifiers, columns, sizes).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from functools import cached_property
from typing import Any

from ...model.durations import DURATION_PATTERN
from ...model.maintenance_params import Param
from ...model.options import SIZE_PATTERN
from ..problems import Problems

Schema = dict[str, Any]
# (problems, the enclosing mapping, the field's key, the enclosing path) -> the field's value
Reader = Callable[[Problems, Any, str, str], Any]
# (the values read, the raw mapping, its path, problems) -> None; checks across fields, may rewrite values
Check = Callable[[dict[str, Any], Mapping[str, Any], str, Problems], None]
# (the field's value, the fields read before it, the enclosing path, problems) -> None
After = Callable[[Any, Mapping[str, Any], str, Problems], None]
# (a list's item, its path, the fields read before the list, problems) -> None
Each = Callable[[Any, str, Mapping[str, Any], Problems], None]


@dataclass(frozen=True)
class Choice:
    """A field that takes one of a few words: the loader checks it, the CRD lists it as an enum."""

    values: tuple[str, ...]
    default: str | None = None  # None: the field may be absent (and means something else then)


@dataclass(frozen=True)
class DefaultChoice(Choice):
    """A choice with a default: its field always has one of the words."""

    default: str


def case_insensitive(pattern: str) -> str:
    """A pattern of ours (Python, compiled with re.I) for the API server (Go's RE2)."""
    return "(?i)" + pattern


def snake(key: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower()


@dataclass(frozen=True, kw_only=True)
class Node:
    desc: str
    attr: str | None = ""  # "": snake_case of the key; None: not a field of the dataclass
    reader: Reader | None = None
    after: After | None = None  # checks the value against the fields read before it
    extra: Mapping[str, Any] = field(default_factory=dict)  # more schema keywords, rendered last
    shared: bool = False  # rendered once wherever it is used: the CRD's YAML repeats it as an alias

    def schema(self) -> Schema:
        return self._rendered if self.shared else {**self.render(), **self.extra}

    @cached_property
    def _rendered(self) -> Schema:
        return {**self.render(), **self.extra}

    def render(self) -> Schema:
        raise NotImplementedError

    def read(
        self,
        p: Problems,
        obj: Any,
        key: str,
        path: str,
        required: bool = False,
        before: Mapping[str, Any] | None = None,
    ) -> Any:
        """The field ``key`` of ``obj`` (at ``path``); ``required`` as the enclosing object's schema
        says; ``before``: the fields of ``obj`` read before it."""
        if self.reader is not None:
            return self.reader(p, obj, key, path)
        return self.load(p, obj, key, path, required, before or {})

    def load(self, p: Problems, obj: Any, key: str, path: str, required: bool, before: Mapping[str, Any]) -> Any:
        return obj.get(key) if isinstance(obj, Mapping) else None


@dataclass(frozen=True, kw_only=True)
class Str(Node):
    choice: Choice | None = None
    pattern: str | None = None
    default: str | None = None
    min_length: int | None = None

    def render(self) -> Schema:
        s: Schema = {"type": "string", "description": self.desc}
        default = self.default
        if self.choice is not None:
            s["enum"] = list(self.choice.values)
            default = self.choice.default
        if self.pattern:
            s["pattern"] = self.pattern
        if default is not None:
            s["default"] = default
        if self.min_length is not None:
            s["minLength"] = self.min_length
        return s

    def load(self, p: Problems, obj: Any, key: str, path: str, required: bool, before: Mapping[str, Any]) -> Any:
        if self.choice is not None:
            return p.enum(obj, key, path, self.choice.values, self.choice.default)
        return p.get(obj, key, path, str, required=required, default="" if required else self.default)


@dataclass(frozen=True, kw_only=True)
class Int(Node):
    minimum: float | None = None
    maximum: float | None = None
    default: int | None = None

    def render(self) -> Schema:
        s: Schema = {"type": "integer", "description": self.desc}
        if self.minimum is not None:
            s["minimum"] = self.minimum
        if self.maximum is not None:
            s["maximum"] = self.maximum
        if self.default is not None:
            s["default"] = self.default
        return s

    def load(self, p: Problems, obj: Any, key: str, path: str, required: bool, before: Mapping[str, Any]) -> Any:
        return p.get(obj, key, path, int, required=required, default=self.default)


@dataclass(frozen=True, kw_only=True)
class Bool(Node):
    default: bool | None = None

    def render(self) -> Schema:
        s: Schema = {"type": "boolean", "description": self.desc}
        if self.default is not None:
            s["default"] = self.default
        return s

    def load(self, p: Problems, obj: Any, key: str, path: str, required: bool, before: Mapping[str, Any]) -> Any:
        return p.get(obj, key, path, bool, default=bool(self.default))


@dataclass(frozen=True, kw_only=True)
class Number(Node):
    minimum: float | None = None
    maximum: float | None = None

    def render(self) -> Schema:
        return {"type": "number", "description": self.desc, "minimum": self.minimum, "maximum": self.maximum}


@dataclass(frozen=True, kw_only=True)
class StrMap(Node):
    """A mapping of names to strings, read as sorted pairs."""

    def render(self) -> Schema:
        return {"type": "object", "description": self.desc, "additionalProperties": {"type": "string"}}

    def load(self, p: Problems, obj: Any, key: str, path: str, required: bool, before: Mapping[str, Any]) -> Any:
        return tuple(sorted((k, str(v)) for k, v in p.get(obj, key, path, dict, default={}).items()))


@dataclass(frozen=True, kw_only=True)
class Anything(Node):
    """Any value (checked by its reader); ``mapping``: an object whose keys are free."""

    mapping: bool = False

    def render(self) -> Schema:
        s: Schema = {"description": self.desc, "x-kubernetes-preserve-unknown-fields": True}
        return {**s, "type": "object"} if self.mapping else s


@dataclass(frozen=True, kw_only=True)
class IntOrStr(Node):
    pattern: str | None = None

    def render(self) -> Schema:
        s: Schema = {"description": self.desc, "x-kubernetes-int-or-string": True}
        return {**s, "pattern": self.pattern} if self.pattern else s


@dataclass(frozen=True, kw_only=True)
class Arr(Node):
    items: Node
    max_items: int | None = None
    each: Each | None = None  # checks each item (as it is read) against the fields read before the list

    def render(self) -> Schema:
        s: Schema = {"type": "array", "description": self.desc, "items": self.items.schema()}
        if self.max_items is not None:
            s["maxItems"] = self.max_items
        return s

    def load(self, p: Problems, obj: Any, key: str, path: str, required: bool, before: Mapping[str, Any]) -> Any:
        raw = p.get(obj, key, path, list, required=required, default=[])
        if not isinstance(self.items, Obj):
            return tuple(raw)
        out = []
        for i, item in enumerate(raw):
            out.append(self.items.read_value(p, item, f"{path}.{key}[{i}]"))
            if self.each is not None:
                self.each(out[-1], f"{path}.{key}[{i}]", before, p)
        return tuple(out)


@dataclass(frozen=True, kw_only=True)
class Obj(Node):
    """An object with declared fields, read into ``to(**fields)``.

    ``allowed`` lists the fields in the order the loader names them, ``order`` in the order it
    reads them (and so reports their problems) when these differ from the schema's, with checks
    (``Check``) run at their point of it; ``absent``: what an absent object reads as ("none":
    None, "defaults": its fields' defaults, "missing": None only when its key is missing,
    its fields' defaults when it is null or no mapping); ``rules``: CEL rules (rule,
    message) the API server checks too.
    """

    props: Mapping[str, Node]
    to: Callable[..., Any] = dict
    check: Check | None = None
    allowed: tuple[str, ...] | None = None
    order: tuple[str | Check, ...] | None = None
    absent: str = "defaults"  # or "none", "missing"
    rules: tuple[tuple[str, str], ...] = ()
    schema_required: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """A declared field must be a field of the dataclass it reads into (caught at import)."""
        read = None if self.order is None else tuple(k for k in self.order if isinstance(k, str))
        for keys in (self.allowed, read):
            if keys is not None and sorted(keys) != sorted(self.props):
                raise TypeError(f"{keys} are not the fields {tuple(self.props)}")
        if is_dataclass(self.to):
            names = {f.name for f in fields(self.to)}
            attrs = {node.attr or snake(key) for key, node in self.props.items() if node.attr is not None}
            if not attrs <= names:
                raise TypeError(f"{self.to.__name__} has no field {', '.join(sorted(attrs - names))}")

    def render(self) -> Schema:
        s: Schema = {
            "type": "object",
            "description": self.desc,
            "properties": {k: n.schema() for k, n in self.props.items()},
        }
        if self.schema_required:
            s["required"] = list(self.schema_required)
        if self.rules:
            s["x-kubernetes-validations"] = [{"rule": r, "message": m} for r, m in self.rules]
        return s

    def load(self, p: Problems, obj: Any, key: str, path: str, required: bool, before: Mapping[str, Any]) -> Any:
        if self.absent == "missing" and key not in obj:
            return None
        raw = p.get(obj, key, path, dict, required=required, default=None if self.absent == "none" else {})
        return None if raw is None else self.read_value(p, raw, f"{path}.{key}")

    def read_value(self, p: Problems, raw: Any, path: str, **given: Any) -> Any:
        """``raw`` (the object itself) read, checked and built; ``given``: fields from elsewhere."""
        return self.make({**given, **self.values(p, raw, path)}, raw, path, p)

    def values(self, p: Problems, raw: Any, path: str) -> dict[str, Any]:
        if isinstance(raw, (Mapping, str, list)):  # a list item that is no mapping: each of its parts is unknown
            p.keys(raw, path, self.allowed or tuple(self.props))
        elif not isinstance(raw, Mapping):
            p.add(path, "must be a mapping")
        values: dict[str, Any] = {}
        for key in self.order or self.allowed or tuple(self.props):
            if not isinstance(key, str):
                key(values, raw if isinstance(raw, Mapping) else {}, path, p)
                continue
            node = self.props[key]
            value = node.read(p, raw, key, path, key in self.schema_required, values)
            if node.after is not None:
                node.after(value, values, path, p)
            if node.attr is not None:
                values[node.attr or snake(key)] = value
        return values

    def make(self, values: dict[str, Any], raw: Any, path: str, p: Problems) -> Any:
        if self.check is not None:
            self.check(values, raw if isinstance(raw, Mapping) else {}, path, p)
        return self.to(**values)


def obj(desc: str, props: Mapping[str, Node], *, required: tuple[str, ...] = (), **more: Any) -> Obj:
    """An object; ``required`` as the schema says (the loader requires them too)."""
    return Obj(desc=desc, props=props, schema_required=required, **more)


def sentence(text: str) -> str:
    return text[0].upper() + text[1:] + "."


def setting(param: Param, **more: Any) -> Node:
    """A maintenance setting from its one definition (``model/maintenance_params.py``)."""
    desc = sentence(param.describe())

    def read(p: Problems, o: Any, key: str, path: str) -> Any:
        return p.setting(o, key, path, param)

    if param.kind == "integer":
        return Int(desc=desc, minimum=param.minimum, maximum=param.maximum, default=param.default, reader=read, **more)
    if param.kind == "boolean":
        return Bool(desc=desc, default=param.default, reader=read, **more)
    if param.kind == "size":  # an integer is bytes; a string must read as a size
        return IntOrStr(desc=desc, pattern=case_insensitive(SIZE_PATTERN), reader=read, **more)
    if param.kind == "duration":
        return Str(desc=desc, pattern=case_insensitive(DURATION_PATTERN), default=param.default, reader=read, **more)
    if param.kind == "fraction":
        return Number(desc=desc, minimum=param.minimum, maximum=param.maximum, reader=read, **more)
    raise AssertionError(f"{param.kind} settings are job params only")


def settings(params: Mapping[str, Param]) -> dict[str, Node]:
    """Settings by field name, each read into its own field name (a policy section's)."""
    return {key: setting(param, attr=key) for key, param in params.items()}
