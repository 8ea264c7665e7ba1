"""The files an ingest reads: which they are (a file, a directory, a pattern; local or
``s3://``), their format, and their records, one at a time, with the file and line each came
from. JSON lines are parsed here (each value keeps its own type, a number with a fraction or an
exponent its exact text as a Decimal); CSV and Parquet are read by an in-process DuckDB,
whose column types are the values' types. A CSV file's types hold for every row
(``CsvDialect``): its default sample's, proven value by value as an ingest writes the file
(``csv_checks``), else sniffed over every row; the later scans name them, sniffing nothing.
A record that cannot be read is a ``BadRecord``; a file that is not what its format says is a
``DuckLakeError`` whatever ``onBadRecord`` says.
"""

from __future__ import annotations

import decimal
import fnmatch
import gzip
import json
import posixpath
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any, cast

import duckdb

from ducklake_operator import storage
from ducklake_operator.errors import DuckLakeError, SpecError
from ducklake_operator.evolution.observed import TypedField, typed_field
from ducklake_operator.model.ingested_files import SourceFile
from ducklake_operator.model.names import fold
from ducklake_operator.model.types import DuckLakeType, parse_type
from ducklake_operator.model.value_kinds import LONG, UnreadableType

from . import csv_checks
from .ingest_json import plain_bytes
from .parquet_writer import literal, quote, scratch_connection

_JSON = json.JSONDecoder(parse_float=decimal.Decimal)  # a number with a fraction or exponent: its exact text
EXTENSIONS = {".json": "json", ".jsonl": "json", ".ndjson": "json", ".csv": "csv", ".parquet": "parquet"}
FIRST_SKIPPED = 5  # skipped records the report names
BATCH_ROWS = 4096  # rows fetched from DuckDB at a time


@dataclass(frozen=True)
class Source:
    file: SourceFile
    format: str  # json, csv or parquet


def format_of(path: str) -> str | None:
    name = posixpath.basename(path).lower()
    if name.endswith(".gz") and not name.endswith(".parquet.gz"):
        name = name[: -len(".gz")]
        return next((f for ext, f in EXTENSIONS.items() if name.endswith(ext) and f != "parquet"), None)
    return next((f for ext, f in EXTENSIONS.items() if name.endswith(ext)), None)


def _hidden(path: str, root: str) -> bool:
    """Files (and directories) named ``.x`` or ``_x`` under ``root`` (``_SUCCESS``, ``.crc``)."""
    return any(part.startswith((".", "_")) for part in path[len(root) :].split("/") if part)


def list_sources(path: str, file_format: str) -> tuple[list[Source], int]:
    """The files at ``path`` with their formats, in path order, and how many were left alone
    (hidden, or of an unknown extension when the format is auto)."""
    if not path:
        raise SpecError("ingest: path is empty")
    one = None if any(c in posixpath.basename(path) for c in "*?[") else storage.stat(path)
    if one is not None:
        fmt = format_of(path) if file_format == "auto" else file_format
        if fmt is None:
            raise DuckLakeError(
                f"ingest: cannot tell the format of {path} from its extension "
                f"({', '.join(EXTENSIONS)}, .gz after json and csv ones); set format: json, csv or parquet"
            )
        return [Source(SourceFile(one.path, one.size, one.mtime), fmt)], 0
    pattern = None
    root = path
    if any(c in posixpath.basename(path) for c in "*?["):
        root, pattern = posixpath.dirname(path), posixpath.basename(path)
    root = root.rstrip("/") + "/"
    try:
        found = sorted(storage.list_files(root), key=lambda f: f.path)
    except OSError as exc:
        raise DuckLakeError(f"ingest: cannot list {root}: {exc}") from None
    sources, ignored = [], 0
    for f in found:
        if pattern is not None and not fnmatch.fnmatchcase(f.path[len(root) :], pattern):
            continue
        fmt = format_of(f.path) if file_format == "auto" else file_format
        if _hidden(f.path, root) or fmt is None:
            ignored += 1
            continue
        sources.append(Source(SourceFile(f.path, f.size, f.mtime), fmt))
    if not sources:
        what = "no file" if not ignored else f"no file to ingest ({ignored} hidden or of an unknown extension)"
        raise DuckLakeError(
            f"ingest: {what} at {path}" + ("" if file_format != "auto" or not ignored else "; set format to read them")
        )
    return sources, ignored


@dataclass
class Skipped:
    """Records skipped (``onBadRecord: skip``) and the first few, named."""

    count: int = 0
    first: list[str] = field(default_factory=list)

    def add(self, where: str, why: str) -> None:
        self.count += 1
        if len(self.first) < FIRST_SKIPPED:
            self.first.append(f"{where}: {why}")

    def merge(self, other: Skipped) -> None:
        self.count += other.count
        self.first = (self.first + other.first)[:FIRST_SKIPPED]


@dataclass(frozen=True)
class CsvDialect:
    """How one CSV file reads: ``read_csv``'s options after the path (the prompt of DuckDB's
    sniffer over the whole file), so a later scan, or pass 2 of an ingest, reads it with no
    sniffing: the sniffer reads a file at about a tenth of the parallel reader's rate.
    ``sampled``: its delimiter, quoting, line ends, comments and skipped rows are what the
    sniffer found on its default sample (as ``read_csv`` does); only the header and the types
    are the whole file's."""

    options: str
    sampled: bool = False
    # the types are the default sample's, not yet proven for the later rows: a scan reads the
    # columns whose reader cast bends a value that does not fit as text and proves each value
    # (``csv_checks``); an ingest that meets one that does not fit, or a row that does not
    # parse, reads the file again as sniffed over every row
    sample_types: bool = False


# The options of a sniffer's prompt that say how a file splits into rows and fields: found on
# the default sample and given to the whole-file sniff, which then only types the columns and
# finds the header, in about a third of the time of one that looks for them over every row
# (0.4 s against 1.2 s for 34 MB on one thread).
_DIALECT_OPTIONS = ("delim", "quote", "escape", "new_line", "comment", "skip")
# the options of a sample's prompt whose types ``csv_checks`` proves as the file is read
_SAMPLE_OPTIONS = frozenset({*_DIALECT_OPTIONS, "auto_detect", "header", "columns", "ignore_errors"})
_ISO_DATES = ("dateformat", "'%Y-%m-%d'")  # the sniffer names the format of plain dates too
FIRST_ROWS = 2048  # of a file, surely in the sniffer's sample (its first 20,480 rows)


@dataclass(frozen=True)
class TypedRead:
    """What pass 1 read of a CSV or Parquet file, for pass 2: its rows (those that parse) and
    how a CSV file reads."""

    rows: int | None  # None: not counted (a CSV file in its sample's types: pass 2 counts it)
    dialect: CsvDialect | None = None

    @property
    def uncounted(self) -> bool:
        return self.rows is None


@dataclass(frozen=True)
class Record:
    where: str  # file:line (JSON, CSV) or file:row (Parquet)
    values: dict[str, Any]


class SourceReader:
    """The records of one local copy of a source: ``typed`` is None for JSON (each value its own
    type), else the columns' types by folded name (for ``routing``) and in order (to observe)."""

    def __init__(
        self,
        source: Source,
        local: str,
        on_bad_record: str,
        skipped: Skipped | None,
        dialect: CsvDialect | None = None,
        extents: frozenset[tuple[str, str]] | None = None,
        con: duckdb.DuckDBPyConnection | None = None,
        sample_types: bool = False,
    ) -> None:
        """``skipped``: where skipped records are counted (None: they were counted already, by
        a reader of the same file that read its rows and ranges too: this one does not);
        ``dialect``: how a CSV file reads, as that reader found it (None: sniffed here);
        ``extents``: the (folded name, kind) pairs whose range a plan reads
        (``auto_schema.extents_read``): the long columns' ranges found (None: all of them);
        ``con``: the caller's DuckDB to read with, left open (None: one of its own, about
        10 ms to open and close); not for a CSV file read with rejects counted, nor for
        ``records``, whose scan the caller's next query would end; ``sample_types``: a CSV file
        not sniffed yet is read in its default sample's types where they can be proven as the
        file is read (``CsvDialect.sample_types``): neither its rows nor its rejects are
        counted (``count`` is None), the pass that writes it proves them."""
        self.source, self.local, self.on_bad_record, self.skipped = source, local, on_bad_record, skipped
        self.dialect, self.extents, self.sample_types = dialect, extents, sample_types
        self.columns: tuple[TypedField, ...] = ()
        self.types: tuple[DuckLakeType, ...] = ()  # of ``columns``, as DuckDB reads them
        self._sql_types: tuple[str, ...] = ()  # the same, as DuckDB spells them
        self.ranges: dict[str, tuple[int | None, int | None]] = {}
        self._rows: int | None = 0  # of a CSV or Parquet file (those that parse; None: not counted)
        self._given: str | None = None  # ``_sample_dialect``'s
        self._con: duckdb.DuckDBPyConnection | None = None
        self._owned = con is None
        if source.format != "json":
            self._con = con or scratch_connection()
            self._describe(counting=skipped is not None)

    @property
    def typed(self) -> dict[str, TypedField] | None:
        return None if self.source.format == "json" else {fold(c.name): c for c in self.columns}

    def close(self) -> None:
        if self._con is not None and self._owned:
            self._con.close()

    def bad(self, where: str, why: str) -> None:
        if self.on_bad_record == "fail":
            raise DuckLakeError(f"ingest: {where}: {why} (onBadRecord: skip skips such records)")
        if self.skipped is not None:
            self.skipped.add(where, why)

    def records(self) -> Generator[Record, None, None]:
        return self._json() if self.source.format == "json" else self._typed()

    # ------------------------------------------------------------------ JSON lines

    @contextmanager
    def _open(self) -> Iterator[IO[bytes]]:
        gz = self.source.file.path.lower().endswith(".gz")
        try:
            with cast(IO[bytes], gzip.open(self.local, "rb") if gz else open(self.local, "rb")) as fh:
                head = fh.read(4096)
                fh.seek(0)
                if head.startswith(b"PAR1") or b"\x00" in head:
                    raise DuckLakeError(
                        f"ingest: {self.source.file.path} is not JSON lines: it holds binary data"
                        + (" (a Parquet file?)" if head.startswith(b"PAR1") else "")
                    )
                yield fh
        except (OSError, EOFError) as exc:  # gzip's "Not a gzipped file", a truncated one
            raise DuckLakeError(f"ingest: cannot read {self.source.file.path}: {exc}") from None

    def plain_json(self) -> bool:
        """Whether the JSON-lines file holds no byte Python's line reading takes for blank space
        and DuckDB's JSON reader skips around a record as well (``ingest_json``); fails as
        ``records`` would on a file that is not JSON lines."""
        with self._open() as fh:
            return plain_bytes(fh)

    def _json(self) -> Generator[Record, None, None]:
        path = self.source.file.path
        with self._open() as fh:
            for number, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                where = f"{path}:{number}"
                try:
                    value = _JSON.decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))
                except (ValueError, UnicodeDecodeError) as exc:
                    self.bad(where, f"not JSON ({_first_line(str(exc))})")
                    continue
                if not isinstance(value, dict):
                    self.bad(where, f"a JSON {_json_type(value)} is not a record (an object)")
                    continue
                yield Record(where, value)

    # ------------------------------------------------------------------ CSV, Parquet

    def scan(self, files: Sequence[str] = ()) -> str:
        """The table function reading a CSV or Parquet file: the rows ``records`` gives;
        ``files``: of these local files instead (in order), read as this one is."""
        return self._scan(files=files)

    def query(self, sql: str) -> tuple[Any, ...]:
        """The one row ``sql`` (over ``scan``) gives, from this reader's DuckDB."""
        assert self._con is not None
        row = self._con.execute(sql).fetchone()
        assert row is not None
        return tuple(row)

    def _scan(self, rejects: bool = True, files: Sequence[str] = ()) -> str:
        path = f"[{', '.join(literal(p) for p in files)}]" if files else literal(self.local)
        if self.source.format == "parquet":
            return f"read_parquet({path})"
        # rows that do not parse are rejected rather than making the sniffer give up on the
        # dialect; without a dialect, every row sniffed (the types hold for the whole file)
        options = self.dialect.options if self.dialect is not None else "sample_size = -1, ignore_errors = true"
        stored = ", store_rejects = true" if rejects else ""
        if self.dialect is None or not self.dialect.sample_types or not self._sql_types:
            return f"read_csv({path}, {options}{stored})"
        names, types = [c.name for c in self.columns], list(self._sql_types)
        as_read = f"{_without_columns(options)}, {csv_checks.columns_option(names, csv_checks.read_types(types))}"
        stored = csv_checks.STORE_REJECTS if rejects else ""  # apart: pass 1 counted the others
        return csv_checks.proven_select(names, types, f"read_csv({path}, {as_read}{stored})")

    def _sniff(self, on_sample: bool = True) -> CsvDialect | None:
        """The file's types from DuckDB's sniffer over every row (a sample would not do: a
        later value of another type is no rejected row, DuckDB's CSV reader rounds ``2.5``
        into a BIGINT column), in the dialect its default sample shows (``on_sample``), else
        one it finds over every row too; None when its prompt does not name this file as
        written (the scans then sniff for themselves)."""
        path = self.source.file.path
        given = self._sample_dialect() if on_sample else ""
        try:
            prompt = self._prompt(f", sample_size = -1{given}")
        except duckdb.Error as exc:
            if given:
                return self._sniff(on_sample=False)
            raise DuckLakeError(f"ingest: {path} is not a CSV file DuckDB can read ({_first_line(str(exc))})") from None
        options = self._prompt_options(prompt)
        return None if options is None else CsvDialect(options, sampled=bool(given))

    def _sample_dialect(self) -> str:
        """``, delim = ',', quote = ...``: how the file splits into rows and fields, as DuckDB's
        sniffer finds it on its default sample; '' when it cannot say. A sample with no quoted
        field reads quotes as RFC 4180 does (``"``, doubled inside), as later rows may quote.
        Sniffed once a reader (the sample's types tried first, the whole-file sniff after)."""
        if self._given is None:
            self._given = self._sniffed_sample_dialect()
        return self._given

    def _sniffed_sample_dialect(self) -> str:
        try:
            prompt = self._prompt("")
        except duckdb.Error:
            return ""
        found = {
            k: v for k, v in _options(prompt.removeprefix("FROM read_csv(").removesuffix(");")) if k in _DIALECT_OPTIONS
        }
        if set(found) != set(_DIALECT_OPTIONS):
            return ""
        if found["quote"] == "''":
            found["quote"] = found["escape"] = "'\"'"
        return "".join(f", {key} = {value}" for key, value in found.items())

    def _sample_dialect_typed(self) -> CsvDialect | None:
        """The file's dialect and types as DuckDB's sniffer finds them on its default sample
        (the dialect as ``_sample_dialect`` gives it), to be proven as the file is read; None
        when the prompt has options beyond the dialect, header and columns (date formats, a
        decimal separator: not proven by ``csv_checks``)."""
        given = self._sample_dialect()
        if not given:
            return None
        try:
            prompt = self._prompt(given)
        except duckdb.Error:
            return None
        options = self._prompt_options(prompt)
        if options is None or any(
            key not in _SAMPLE_OPTIONS and (key, value) != _ISO_DATES for key, value in _options(options)
        ):
            return None
        return CsvDialect(options, sampled=True, sample_types=True)

    def _prompt_options(self, prompt: str) -> str | None:
        """The options of a sniffer's prompt after this file's path; None when the prompt does
        not name the file as written (the scans then sniff for themselves)."""
        head, tail = f"FROM read_csv('{self.local}', ", ");"
        if not (prompt.startswith(head) and prompt.endswith(tail)):
            return None
        return prompt[len(head) : -len(tail)]

    def _ranged_longs(self) -> list[str]:
        """The top-level long columns whose range a plan reads (``extents``)."""
        return [
            c.name
            for c in self.columns
            if c.shape.dims == 0
            and c.shape.kind == LONG
            and (self.extents is None or (fold(c.name), LONG) in self.extents)
        ]

    def _sample_holds(self) -> bool:
        """Whether the sample's types can be proven as the file is read: each is one
        ``csv_checks`` proves, no long column's range is wanted (a plan reads those before
        anything is written), the first rows hold a row, and a value in every VARCHAR column
        (a column the sample has no value in is VARCHAR, whatever the later rows hold), and
        they are proven as read (a file of a form the checks do not take, ``2024-01-02
        10:00:00.250`` say, is sniffed over every row at once, not after a wasted pass 2)."""
        assert self._con is not None
        if not csv_checks.provable(self._sql_types):
            return False
        if self._ranged_longs():
            return False
        texts = [c.name for c, t in zip(self.columns, self._sql_types, strict=True) if t == "VARCHAR"]
        counts = "".join(f", count({quote(n)})" for n in texts)
        scan = self._scan(rejects=False)  # proven: values of a form the checks refuse are found early
        try:
            row = self._con.execute(
                f"SELECT count(*){counts} FROM (SELECT * FROM {scan} LIMIT {FIRST_ROWS})"
            ).fetchone()
        except duckdb.Error:
            return False
        return row is not None and all(row)

    def _prompt(self, options: str) -> str:
        """The ``read_csv`` call DuckDB's sniffer writes for the file, sniffed with ``options``
        (rows that do not parse ignored, so they do not make it give up on the dialect)."""
        assert self._con is not None
        row = self._con.execute(
            f"SELECT Prompt FROM sniff_csv({literal(self.local)}, ignore_errors = true{options})"
        ).fetchone()
        return str(row[0]) if row else ""

    def _read_columns(self) -> list[Any]:
        assert self._con is not None
        path = self.source.file.path
        try:
            return self._con.execute(f"DESCRIBE SELECT * FROM {self._scan(rejects=False)}").fetchall()
        except duckdb.Error as exc:
            if self.dialect is not None:
                self.dialect = None  # options the prompt spelled as DuckDB cannot read them back
                return self._read_columns()
            raise DuckLakeError(
                f"ingest: {path} is not a {self.source.format.upper()} file DuckDB can read ({_first_line(str(exc))})"
            ) from None

    def _describe(self, counting: bool, on_sample: bool = True) -> None:
        assert self._con is not None
        path = self.source.file.path
        if self.source.format == "csv" and self.dialect is None:
            # pass 2 is handed pass 1's
            self.dialect = (self._sample_dialect_typed() if self.sample_types else None) or self._sniff(on_sample)
        described = self._read_columns()
        columns: list[TypedField] = []
        types: list[DuckLakeType] = []
        for name, type_text, *_ in described:
            try:
                types.append(parse_type(type_text))
                columns.append(typed_field(name, types[-1]))
            except (UnreadableType, SpecError):
                raise DuckLakeError(
                    f"ingest: column {name} of {path} is {type_text}, which ingest does not read; "
                    "convert it (to text, or a supported type) first"
                ) from None
        self.columns, self.types = tuple(columns), tuple(types)
        self._sql_types = tuple(str(r[1]) for r in described)
        names: dict[str, str] = {}
        for c in columns:
            other = names.setdefault(fold(c.name), c.name)
            if other != c.name:
                raise DuckLakeError(
                    f"ingest: columns {other} and {c.name} of {path} name the same column (names are case-insensitive)"
                )
        if self.dialect is not None and self.dialect.sample_types and counting:
            if self._sample_holds():
                self._rows = None
                return
            self.sample_types, self.dialect = False, None  # sniffed over every row instead
            return self._describe(counting, on_sample)
        if not counting:
            return
        longs = self._ranged_longs()
        # one scan of the whole file: a CSV file's rejects are stored by its end (a Parquet
        # file's count alone is its footer's)
        items = "".join(f", min({quote(n)}), max({quote(n)})" for n in longs)
        ((self._rows, *bounds),) = self._con.execute(f"SELECT count(*){items} FROM {self._scan()}").fetchall()
        self.ranges = {n: (bounds[2 * i], bounds[2 * i + 1]) for i, n in enumerate(longs)}
        if self.source.format != "csv":
            return
        rejected = self._rejects()
        if rejected and self.dialect is not None and self.dialect.sampled:
            # rows that do not split as the sample did: the dialect found over every row, as
            # if the sample had not been looked at, may read them
            self._con.execute("DROP TABLE reject_errors; DROP TABLE reject_scans")
            self.dialect = None
            return self._describe(counting, on_sample=False)
        self._note_rejects(rejected)

    def _rejects(self) -> list[tuple[Any, ...]]:
        """The lines of a CSV file the last scan rejected, each with its first error."""
        assert self._con is not None
        try:
            return self._con.execute(
                "SELECT line, min(error_message) FROM reject_errors GROUP BY line ORDER BY line"
            ).fetchall()
        except duckdb.CatalogException:  # DuckDB creates it with the first rejected row
            return []

    def _note_rejects(self, rejected: list[tuple[Any, ...]]) -> None:
        """Rows of a CSV file that did not parse: fail on the first, or count them skipped."""
        for line, message in rejected:
            self.bad(f"{self.source.file.path}:{line}", f"not a CSV row of this file ({message})")

    def count(self) -> int | None:
        """The rows of a CSV or Parquet file (those that parse; None: a CSV file read in its
        sample's types, which the pass that writes it counts)."""
        return None if self._rows is None else int(self._rows)

    def _typed(self) -> Generator[Record, None, None]:
        assert self._con is not None
        path = self.source.file.path
        try:
            cursor = self._con.execute(f"SELECT * FROM {self._scan()}")
            names = [d[0] for d in cursor.description or ()]
            row_number = 0
            while batch := cursor.fetchmany(BATCH_ROWS):
                for row in batch:
                    row_number += 1
                    yield Record(f"{path}:row {row_number}", dict(zip(names, row, strict=True)))
        except duckdb.Error as exc:
            raise DuckLakeError(f"ingest: cannot read {path}: {_first_line(str(exc))}") from None


def _options(options: str) -> list[tuple[str, str]]:
    """The ``key=value`` options of a sniffer's prompt, in order (a comma inside a quoted
    text or the braces of ``columns`` is no separator)."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(options):
        if ch == "'":
            quoted = not quoted  # a doubled quote inside a text flips twice
        elif not quoted and ch in "{}":
            depth += 1 if ch == "{" else -1
        elif not quoted and depth == 0 and ch == ",":
            parts.append(options[start:i])
            start = i + 1
    parts.append(options[start:])
    return [(p.split("=", 1)[0].strip(), p.split("=", 1)[1].strip() if "=" in p else "") for p in parts if p.strip()]


def _without_columns(options: str) -> str:
    return ", ".join(f"{key}={value}" for key, value in _options(options) if key != "columns")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def _json_type(value: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def read_local(source: Source, scratch: str) -> str:
    """A local copy of the source (the file itself when it is local)."""
    try:
        return storage.fetch(source.file.path, scratch)
    except OSError as exc:
        raise DuckLakeError(f"ingest: cannot read {source.file.path}: {exc}") from None
