"""DuckLake's path chain (memo §4.2), pure: where a catalog row's path points."""

from __future__ import annotations


def is_absolute(path: str) -> bool:
    return "://" in path or path.startswith("/")


def join(*parts: str) -> str:
    """Each part is a directory ending in ``/`` or a file name; an absolute part restarts the chain."""
    out = ""
    for part in parts:
        out = part if is_absolute(part) else out + part
    return out
