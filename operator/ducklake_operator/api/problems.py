"""The loader's problem list: every problem with its field path, raised all at once."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..model.maintenance_params import Param


class Problems:
    """Collects problems with field paths while a manifest is read; ``base_dir`` resolves the
    relative paths of a manifest read from a file (None for kopf bodies)."""

    def __init__(self, base_dir: str | None = None) -> None:
        self.items: list[str] = []
        self.base_dir = base_dir

    def add(self, path: str, message: str) -> None:
        self.items.append(f"{path}: {message}")

    def keys(self, obj: Iterable[Any], path: str, allowed: Iterable[str]) -> None:
        allowed = tuple(allowed)
        for key in obj:
            if key not in allowed:
                self.add(f"{path}.{key}", f"unknown field; allowed: {', '.join(allowed)}")

    def get(
        self, obj: Any, key: str, path: str, kind: type | tuple[type, ...], required: bool = False, default: Any = None
    ) -> Any:
        if not isinstance(obj, Mapping):
            return default
        if key not in obj or obj[key] is None:
            if required:
                self.add(f"{path}.{key}", "is required")
            return default
        value = obj[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            self.add(f"{path}.{key}", f"must be {_article(names)}, got {type(value).__name__} {value!r}")
            return default
        return value

    def enum(self, obj: Any, key: str, path: str, values: tuple[str, ...], default: str | None) -> str | None:
        """One of ``values``; ``default`` when absent (or wrong)."""
        value = self.get(obj, key, path, str)
        if value is None:
            return default
        if value not in values:
            self.add(f"{path}.{key}", f"{value!r} is not one of {', '.join(values)}")
            return default
        return value

    def setting(self, obj: Any, key: str, path: str, param: Param) -> Any:
        """A maintenance setting checked by its one definition; its default when absent."""
        if not isinstance(obj, Mapping) or obj.get(key) is None:
            return param.default
        try:
            return param.parse(obj[key])
        except ValueError as exc:
            self.add(f"{path}.{key}", str(exc))
            return param.default


def _article(name: str) -> str:
    return {"dict": "a mapping", "list": "a list", "str": "a string", "int": "an integer", "bool": "true or false"}.get(
        name, name
    )
