"""Dates and timestamps written as JSON strings (pure). JSON has no date type, so ingestion
reads a string in ISO 8601 form as the ``date`` or ``timestamp`` kind, as DuckDB's
``read_json`` detects them (DuckDB settles on one format per column; this looks at each value):

* ``2024-01-05`` is a date;
* ``2024-01-05T10:11:12`` (or a space for the ``T``), with up to six fraction digits and an
  optional ``Z`` or ``+hh:mm`` offset, is a timestamp; one with an offset is the instant in
  UTC (as DuckDB's ``CAST(CAST(s AS TIMESTAMPTZ) AS TIMESTAMP)`` with ``TimeZone`` UTC), since
  a DuckLake ``timestamp`` holds no zone.

Anything else stays a string: other layouts (``01/05/2024``), impossible days
(``2024-02-30``), and fractions finer than a microsecond, which a timestamp would round.
A date or timestamp string routed into a string column keeps its own text.
"""

from __future__ import annotations

import datetime
import re

from ..model.value_kinds import DATE, TIMESTAMP

# the forms (``ducklake_jobs.ingest_json`` reads them in DuckDB's regular expressions too)
DATE_PATTERN = r"\d{4}-\d{2}-\d{2}"
TIMESTAMP_PATTERN = r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-]\d{2}:\d{2})?"
_DATE = re.compile(DATE_PATTERN)
_TIMESTAMP = re.compile(TIMESTAMP_PATTERN)
SHORTEST, LONGEST = 10, 32  # 2024-01-05 .. 2024-01-05T10:11:12.123456+02:00


def text_kind(text: str) -> str | None:
    """``date`` or ``timestamp`` when ``text`` is one in ISO form, else None."""
    if not SHORTEST <= len(text) <= LONGEST or text[4:5] != "-" or not text[:1].isdigit():
        return None  # most strings are not dates: leave them before any pattern
    kind = DATE if _DATE.fullmatch(text) else TIMESTAMP if _TIMESTAMP.fullmatch(text) else None
    if kind is None:
        return None
    try:
        parse_text(text, kind)
    except ValueError:
        return None  # 2024-02-30, 25:00:00
    return kind


def parse_text(text: str, kind: str) -> datetime.date | datetime.datetime:
    """The value of a string ``text_kind`` found to be of ``kind``."""
    if kind == DATE:
        return datetime.date.fromisoformat(text)
    value = datetime.datetime.fromisoformat(text)
    if value.tzinfo is not None:
        value = value.astimezone(datetime.UTC).replace(tzinfo=None)
    return value


def text_fraction_digits(text: str) -> int:
    """The digits of a timestamp string's fraction of a second, trailing zeros aside
    (``2024-01-05T10:11:12.250Z`` has two; a date none): what a declared ``timestamp_ms`` or
    ``timestamp_s`` column's fit depends on."""
    if text[19:20] != ".":
        return 0
    end = 20
    while end < len(text) and text[end].isdigit():
        end += 1
    return len(text[20:end].rstrip("0"))
