"""A CSV file read in the types DuckDB's sniffer finds on its default sample, each value proven
to fit as the file is read (pure SQL text; ``ingest_sources.SourceReader`` runs it).

The sniffer's sample is a file's first rows; ``read_csv(..., sample_size = -1)`` types every
row, but alone, at a fraction of the parallel reader's rate, and an ingest then reads the file
twice more (to count it, to write it). A column's type over every row is the first of the
sniffer's candidates every value fits; the sample refuted the candidates before the sample's
type, so when every later value fits that type too, it is the whole file's type as well. The
proof is made while the file is written, in one pass: a value that does not fit raises
``REFUTED`` and the ingest reads its files again with types from every row.

DuckDB's CSV reader does not refuse every value that does not fit: it rounds ``2.5`` into a
BIGINT, reads ``2024-01-02 10:00:00`` into a DATE, ``10:00:00+05`` into a TIMESTAMP without
its offset and ``1_000.5`` or ``+1.5`` into a DOUBLE, where the sniffer over every row gives
DOUBLE, VARCHAR, TIMESTAMPTZ, VARCHAR. Columns of those types are read as text and cast here;
a value is taken when it is the cast value's own text (DuckDB's: ``0``, ``-12``,
``2024-01-02 10:00:00.25``, ``true``), else when it has the plain form the sniffer takes for
the type (``_FORMS``: ``2024-01-02T10:00``, ``TRUE``, ``1.50``). Each is narrower than the
sniffer where in doubt: a form the sniffer takes too, such as ``+5``, ``007``, ``t`` or
`` 1.5``, refutes the sample and costs the second reading, never a value. (The text comparison
is first where it is cheaper than a regular expression's match, about a third of it, which
only the values not in DuckDB's own text pay; a double printed back costs more than the match.)
A VARCHAR column is read by the reader itself, which rejects what does not fit (a rejected
row refutes the sample too)."""

from __future__ import annotations

from collections.abc import Sequence

from .parquet_writer import literal, quote

REFUTED = "unlike the CSV sample's types"  # in the error a misfit raises
SAMPLE_REJECTS = "__sample_rejects"  # the rows a scan in a sample's types rejected (DuckDB's table)
STORE_REJECTS = f", store_rejects = true, rejects_table = '{SAMPLE_REJECTS}', rejects_scan = '__sample_scans'"

# the types whose reader cast bends what does not fit: whether a value that is its cast's own
# text is taken at once, and the plain forms taken besides (None: that text only)
_FORMS: dict[str, tuple[bool, str | None]] = {
    "BIGINT": (True, None),  # the sniffer takes 007 and +5 for text
    "BOOLEAN": (True, "(?i)true|false"),
    "DATE": (True, None),
    "TIMESTAMP": (True, r"[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?"),
    "DOUBLE": (False, r"-?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?"),
}
READ_AS_IS = frozenset({"VARCHAR"})  # the reader's cast refuses what does not fit
PROVABLE = READ_AS_IS | _FORMS.keys()


def provable(types: Sequence[str]) -> bool:
    """Whether every type (DuckDB's spelling) can be proven value by value as read."""
    return all(t in PROVABLE for t in types)


def read_types(types: Sequence[str]) -> list[str]:
    """The types the reader is given: text for the columns proven here."""
    return ["VARCHAR" if t in _FORMS else t for t in types]


def columns_option(names: Sequence[str], types: Sequence[str]) -> str:
    """``read_csv``'s ``columns`` option for ``names`` in ``types``."""
    return "columns = {" + ", ".join(f"{literal(n)}: {literal(t)}" for n, t in zip(names, types, strict=True)) + "}"


def proven_select(names: Sequence[str], types: Sequence[str], scan: str) -> str:
    """A subquery of ``scan`` (read in ``read_types``) giving each column in its type: a value
    of a proven column that is its cast's own text or of a plain form is taken (``TRY_CAST``:
    out of range is no fit either); any other raises ``REFUTED``."""
    cast, items = [], []
    for k, (name, sql_type) in enumerate(zip(names, types, strict=True)):
        column = quote(name)
        if sql_type not in _FORMS:
            items.append(column)
            continue
        value = f"__proven{k}"
        cast.append(f"TRY_CAST({column} AS {sql_type}) AS {value}")
        own_text, form = _FORMS[sql_type]
        taken = f"{column} IS NULL" + (f" OR {value}::VARCHAR = {column}" if own_text else "")
        if form is not None:
            taken += f" OR ({value} IS NOT NULL AND regexp_full_match({column}, {literal(form)}))"
        misfit = f"error({literal(f'ingest: a value of column {name} is {REFUTED} ({sql_type}): ')} || {column})"
        items.append(f"CASE WHEN {taken} THEN {value} ELSE {misfit} END AS {column}")
    if not cast:
        return scan
    return f"(SELECT {', '.join(items)} FROM (SELECT *, {', '.join(cast)} FROM {scan}))"
