"""The run document a launcher hands the job program (JSON: a ConfigMap the DuckLakeJob owns,
mounted at ``/etc/ducklake/run.json`` in pods; a temporary file for the Local launcher): the
job's identity (and the run's deadline, past which it must not commit), its catalog as the
cluster holds it, the operation with its parameters, and how to run it. Credentials are never
in it: they come as environment variables.

``parse_run_document`` is pure and reports every problem at once, with its field path.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ducklake_operator.api.load import parse_manifest
from ducklake_operator.api.v1alpha1.catalog import CatalogSpec
from ducklake_operator.errors import SpecError
from ducklake_operator.model import timestamps
from ducklake_operator.model.job_marker import JobIdentity
from ducklake_operator.model.options import parse_size

DEFAULT_MASTER = "local[*]"


@dataclass(frozen=True)
class RunDocument:
    job: JobIdentity
    catalog: CatalogSpec
    operation: str
    table: str | None  # "schema.table"; None for catalog-wide operations
    params: Mapping[str, object]
    in_process_below: int | None = None  # bytes of planned input; None: always Spark
    spark_master: str = DEFAULT_MASTER
    spark_conf: tuple[tuple[str, str], ...] = ()
    deadline: float | None = None  # the run's (seconds since the epoch); None: no timeout


def read_run_document(path: str) -> RunDocument:
    try:
        with open(path, encoding="utf-8") as fh:
            raw = json.load(fh)
    except OSError as exc:
        raise SpecError(f"cannot read the run document {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise SpecError(f"the run document {path} is not JSON: {exc}") from None
    return parse_run_document(raw)


def parse_run_document(raw: Any) -> RunDocument:
    if not isinstance(raw, Mapping):
        raise SpecError("the run document must be a JSON object")
    problems: list[str] = []
    field = functools.partial(_field, problems)

    job_raw = field(raw, "job", "", Mapping, True) or {}
    uid, name = field(job_raw, "uid", "job.", str, True), field(job_raw, "name", "job.", str, True)
    namespace, attempt = field(job_raw, "namespace", "job.", str, False), field(job_raw, "attempt", "job.", int, False)
    deadline_text = field(job_raw, "deadline", "job.", str, False)
    deadline = timestamps.parse(deadline_text)
    if deadline_text is not None and deadline is None:
        problems.append(f"job.deadline: {deadline_text!r} is not a time such as 2026-01-01T00:00:00Z")
    operation = field(raw, "operation", "", str, True)
    table = field(raw, "table", "", str, False)
    params = field(raw, "params", "", Mapping, False) or {}
    catalog = _catalog(field(raw, "catalog", "", Mapping, True), problems)
    below = raw.get("inProcessBelow")
    in_process_below = None
    if below is not None:
        try:
            in_process_below = parse_size(below)
        except ValueError as exc:
            problems.append(f"inProcessBelow: {exc}")
    master, conf = _spark(field(raw, "spark", "", Mapping, False) or {}, problems)
    if problems:
        raise SpecError(problems, source="run document")
    assert catalog is not None
    return RunDocument(
        job=JobIdentity(uid, name, namespace, attempt or 1),
        catalog=catalog,
        operation=operation,
        table=table,
        params=dict(params),
        in_process_below=in_process_below,
        spark_master=master,
        spark_conf=conf,
        deadline=deadline.timestamp() if deadline is not None else None,
    )


def spark_settings(raw: Any) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The Spark master and settings of a run document's ``spark`` object, as its run gets
    them (a warm spare's, ``spare``, started before its run)."""
    problems: list[str] = []
    settings = _spark(raw if isinstance(raw, Mapping) else {}, problems)
    if problems or not isinstance(raw, Mapping):
        raise SpecError(problems or ["spark: must be an object"], source="Spark settings")
    return settings


def _spark(raw: Mapping[str, Any], problems: list[str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    master = _field(problems, raw, "master", "spark.", str, False) or DEFAULT_MASTER
    conf = _field(problems, raw, "conf", "spark.", Mapping, False) or {}
    return master, tuple(sorted((str(k), str(v)) for k, v in conf.items()))


def _field(
    problems: list[str], obj: Mapping[str, Any], key: str, path: str, kind: type | tuple[type, ...], required: bool
) -> Any:
    value = obj.get(key)
    if value is None:
        if required:
            problems.append(f"{path}{key}: is required")
        return None
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        problems.append(f"{path}{key}: {value!r} is not {_kind_name(kind)}")
        return None
    return value


def _catalog(raw: Mapping[str, Any] | None, problems: list[str]) -> CatalogSpec | None:
    if raw is None:
        return None
    try:
        spec = parse_manifest(raw)
    except SpecError as exc:
        problems += [f"catalog: {p}" for p in exc.problems]
        return None
    if not isinstance(spec, CatalogSpec):
        problems.append(f"catalog: a {spec.ref.kind}, not a DuckLakeCatalog")
        return None
    return spec


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", Mapping: "an object"}
    return " or ".join(names.get(k, k.__name__) for k in (kind if isinstance(kind, tuple) else (kind,)))
