"""``ducklake_snapshot_changes.changes_made``: the tokens DuckDB 1.5.5 knows, parse and render.

Grammar (``ducklake_transaction_changes.cpp::ParseChangesMade``): comma-separated
``token:value``; a value is an integer id or double-quoted names with ``"`` doubled
(``created_table:"main"."t"``). Any token DuckDB does not know breaks every DuckDB client
(docs/ducklake-format.md §2.3), so only the tokens below can be constructed, and an empty change set is
rendered as SQL NULL.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import DuckLakeError

# Tokens in the order DuckDB writes them; the value kind: "id", "schema" or "qualified".
TOKEN_ORDER: tuple[tuple[str, str], ...] = (
    ("dropped_schema", "id"),
    ("dropped_table", "id"),
    ("dropped_view", "id"),
    ("created_schema", "schema"),
    ("created_table", "qualified"),
    ("created_view", "qualified"),
    ("created_scalar_macro", "qualified"),
    ("created_table_macro", "qualified"),
    ("dropped_scalar_macro", "id"),
    ("dropped_table_macro", "id"),
    ("inserted_into_table", "id"),
    ("deleted_from_table", "id"),
    ("altered_table", "id"),
    ("altered_view", "id"),
    ("inlined_insert", "id"),
    ("inlined_delete", "id"),
    ("inline_flush", "id"),
    ("merge_adjacent", "id"),
    ("rewrite_delete", "id"),
)
# Parsed but never written by 1.5.5 (legacy).
LEGACY_TOKENS = {"compacted_table": "id", "flushed_inlined": "id"}
_KIND = dict(TOKEN_ORDER) | LEGACY_TOKENS
_RANK = {name: i for i, (name, _) in enumerate(TOKEN_ORDER)}


class ChangesParseError(DuckLakeError):
    pass


@dataclass(frozen=True)
class Change:
    """One ``token:value`` of a snapshot's change set."""

    token: str
    id: int | None = None
    schema: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if self.token not in _KIND:
            raise ValueError(f"unknown changes_made token {self.token!r}")

    def render(self) -> str:
        kind = _KIND[self.token]
        if kind == "id":
            if self.id is None:
                raise ValueError(f"changes_made token {self.token!r} needs an id")
            return f"{self.token}:{int(self.id)}"
        if kind == "schema":
            return f"{self.token}:{_quote(self.schema or '')}"
        return f"{self.token}:{_quote(self.schema or '')}.{_quote(self.name or '')}"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def render_changes(changes: list[Change]) -> str | None:
    """DuckDB's text for a change set (deduplicated, in DuckDB's order); None if empty."""
    unique = list(dict.fromkeys(changes))
    unique.sort(key=lambda c: _RANK.get(c.token, len(_RANK)))
    return ",".join(c.render() for c in unique) or None


def parse_changes(text: str | None) -> list[Change]:
    """Parse a ``changes_made`` value (also a comma-joined aggregate of several)."""
    if not text:
        return []
    out: list[Change] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == ",":
            i += 1
            continue
        colon = text.find(":", i)
        if colon < 0:
            raise ChangesParseError(f"malformed change entry at {text[i:]!r}")
        token = text[i:colon]
        if token not in _KIND:
            raise ChangesParseError(f"unsupported change type {token!r}")
        i = colon + 1
        kind = _KIND[token]
        if kind == "id":
            j = i
            while j < n and text[j] != ",":
                j += 1
            try:
                out.append(Change(token, id=int(text[i:j])))
            except ValueError:
                raise ChangesParseError(f"{token} needs an integer id, got {text[i:j]!r}") from None
            i = j
            continue
        names: list[str] = []
        while True:
            name, i = _read_quoted(text, i)
            names.append(name)
            if i < n and text[i] == ".":
                i += 1
                continue
            break
        if kind == "schema":
            out.append(Change(token, schema=names[0]))
        else:
            if len(names) != 2:
                raise ChangesParseError(f'{token} needs "schema"."name"')
            out.append(Change(token, schema=names[0], name=names[1]))
    return out


def _read_quoted(text: str, i: int) -> tuple[str, int]:
    if i >= len(text) or text[i] != '"':
        raise ChangesParseError(f"expected a quoted name at {text[i:]!r}")
    i += 1
    buf = []
    while i < len(text):
        ch = text[i]
        if ch == '"':
            if i + 1 < len(text) and text[i + 1] == '"':
                buf.append('"')
                i += 2
                continue
            return "".join(buf), i + 1
        buf.append(ch)
        i += 1
    raise ChangesParseError("unterminated quoted name")
