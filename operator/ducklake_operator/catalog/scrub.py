"""Credentials out of every message a database driver writes, before it reaches a condition,
an event, a log line or the CLI's output.

DuckDB's postgres extension puts the whole libpq connection string, password included, into
its "Unable to connect" errors; URLs may carry ``user:password@``. Pure: text in, text out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "***"

# libpq key/value: password=value, the value 'quoted' (with \' and \\ escapes) or up to the
# next blank; an unquoted value may itself contain quotes, so everything up to a blank goes
_LIBPQ_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'?|\S+)", re.IGNORECASE)
# scheme://user:password@host
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/\s:@]*:)[^@\s]*(@)", re.IGNORECASE)
# libpq: connection to server at "host", port N failed: <reason>  (or on socket "...")
_CONNECTION_FAILED = re.compile(r"connection to server (?:at|on socket) .*? failed: (.*)")
_FATAL = re.compile(r"^FATAL:\s*")
_AUTHENTICATION = ("authentication", "no password supplied")


def scrub(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` without passwords: libpq ``password=...``, URL passwords, and every known
    secret value (longest first, so a secret containing another is masked whole)."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    text = _LIBPQ_PASSWORD.sub(lambda m: m.group(1) + MASK, text)
    return _URL_PASSWORD.sub(lambda m: m.group(1) + MASK + m.group(2), text)


def describe_failure(text: str, secrets: Iterable[str | None] = ()) -> str:
    """A driver's error as one credential-free clause: ``authentication failed (...)``,
    ``could not connect (<libpq's reason>)``, or the message's first line."""
    lines = [line.strip() for line in scrub(text, secrets).splitlines() if line.strip()]
    first = lines[0] if lines else "unknown error"
    found = _CONNECTION_FAILED.search(first)
    reason = found.group(1).strip() if found else first
    if any(marker in reason.lower() for marker in _AUTHENTICATION):
        return "authentication failed (check the credentials)"
    if found:
        return f"could not connect ({_FATAL.sub('', reason) or 'no reason given'})"
    return first
