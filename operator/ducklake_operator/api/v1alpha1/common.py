"""Declarations several kinds share: a manifest's identity, references to a catalog and to
Secrets, names, tags and comments, DuckLake options, the deletion policy."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import SpecError
from ...model.names import identifier_problem
from ...model.options import OPTIONS, normalize_option
from ..problems import Problems
from .fields import Anything, Arr, DefaultChoice, Obj, Str, StrMap, obj

DELETION_POLICY = DefaultChoice(("Retain", "Delete"), "Retain")


@dataclass(frozen=True)
class ObjectRef:
    """Kubernetes identity of a manifest and where it came from (for messages)."""

    kind: str
    name: str
    namespace: str | None = None
    source: str | None = None  # file path, or "namespace/name" in a cluster
    generation: int | None = None
    labels: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        where = f" ({self.source})" if self.source else ""
        return f"{self.kind} {self.name}{where}"


@dataclass(frozen=True)
class SecretRef:
    name: str
    username_key: str = "username"
    password_key: str = "password"


NAME_PATTERN = r"^[^\s\x00-\x1f](.*[^\s\x00-\x1f])?$"


def identifier(what: str, desc: str, **more: Any) -> Str:
    """A schema, table or column name: required, checked as DuckDB takes it."""

    def read(p: Problems, o: Any, key: str, path: str) -> str:
        value = o.get(key) if isinstance(o, Mapping) else None
        if value is None:
            p.add(f"{path}.{key}", "is required")
            return ""
        problem = identifier_problem(value, what)
        if problem:
            p.add(f"{path}.{key}", problem)
            return ""
        return str(value)

    return Str(desc=desc, pattern=NAME_PATTERN, reader=read, **more)


def secret_ref(what: str) -> Obj:
    return obj(
        f"Secret (same namespace) holding the {what}.",
        {
            "name": Str(desc="Name of the Secret.", min_length=1),
            "usernameKey": Str(desc="Key of the user name in the Secret.", default="username"),
            "passwordKey": Str(desc="Key of the password in the Secret.", default="password"),
        },
        required=("name",),
        to=SecretRef,
        absent="none",
        attr="credentials",
    )


CATALOG_REF = obj(
    "The DuckLakeCatalog (same namespace) this object belongs to. Immutable.",
    {"name": Str(desc="Name of the DuckLakeCatalog.", min_length=1)},
    required=("name",),
    rules=(("self == oldSelf", "catalogRef is immutable"),),
    to=lambda name: name,  # the spec holds the catalog's name
    attr="catalog",
)


def deletion(desc: str) -> Str:
    return Str(desc=desc, choice=DELETION_POLICY)


DELETION = deletion(
    "Retain (default): deleting the resource leaves the lake untouched. Delete: the object is dropped "
    "from the catalog in one snapshot."
)


def read_tags(p: Problems, o: Any, key: str, path: str, with_comment: bool = True) -> tuple[tuple[str, str], ...]:
    """Tags, with the ``comment`` field of ``o`` among them (as DuckDB keeps it)."""
    out = []
    for k, v in p.get(o, key, path, dict, default={}).items():
        if not isinstance(k, str) or not isinstance(v, (str, int, float, bool)):
            p.add(f"{path}.tags.{k}", "tags map names to strings")
            continue
        if k == "comment":
            p.add(f"{path}.tags.comment", "use the comment field for the comment")
            continue
        out.append((k, str(v)))
    comment = p.get(o, "comment", path, str) if with_comment else None
    if comment is not None:
        out.append(("comment", comment))
    return tuple(sorted(out))


def comment(desc: str) -> Str:
    """The comment: read with the tags (``read_tags``)."""
    return Str(desc=desc, attr=None, reader=lambda p, o, key, path: None)


def tags(desc: str) -> StrMap:
    return StrMap(desc=desc, reader=read_tags)


def renamed_from(desc: str) -> Arr:
    def read(p: Problems, o: Any, key: str, path: str) -> tuple[str, ...]:
        raw = o.get(key) if isinstance(o, Mapping) else None
        if raw is None:
            return ()
        names = [raw] if isinstance(raw, str) else raw
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            p.add(f"{path}.{key}", "must be a name or a list of earlier names")
            return ()
        return tuple(names)

    return Arr(desc=desc, items=Str(desc="An earlier name."), reader=read)


def options(scope: str) -> Anything:
    """The options that may be set at ``scope`` (``model/options.py``), normalised."""
    names = [manifest for manifest, _, scopes in OPTIONS.values() if scope in scopes]
    desc = f"DuckLake options (ducklake_metadata) for this {'catalog' if scope == 'global' else scope}: " + (
        ", ".join(names) + "."
    )

    def read(p: Problems, o: Any, key: str, path: str) -> tuple[tuple[str, str], ...]:
        out = []
        for k, v in p.get(o, key, path, dict, default={}).items():
            try:
                out.append(normalize_option(k, v, scope))
            except SpecError as exc:
                p.add(f"{path}.{key}.{k}", exc.problems[0])
        return tuple(sorted(out))

    return Anything(desc=desc, mapping=True, reader=read)


def local_path(path: str, base_dir: str | None) -> str:
    """A path relative to the manifest's file, made absolute."""
    if not path or os.path.isabs(path) or base_dir is None:
        return path
    return os.path.normpath(os.path.join(base_dir, path)) + ("/" if path.endswith("/") else "")
