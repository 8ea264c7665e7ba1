"""``ducklake``: plan, apply and inspect manifests against a catalog, without a cluster.

    ducklake plan   -f PATH...   what would change (exit 2 if a change is blocked)
    ducklake apply  -f PATH...   commit it, one snapshot per table or schema plan (a plan with
                                 heavy changes: by its rewriteColumnType job, in this process);
                                 -o json: the plans, snapshots and the heavy jobs' reports
    ducklake status -f PATH...   tables, snapshot, columns with ids, and drift
    ducklake sql -f PATH... SQL  run SQL with DuckDB on the catalog (attached as ``lake``)
    ducklake run-job OP [T] -f P  compact|rewriteDeletes|rewriteColumnType|repartition|ingest schema.table,
                                  flushInlinedData [schema.table], expireSnapshots, cleanupFiles,
                                  deleteOrphanFiles; -p key=value; --no-spark (the operations with
                                  Spark tasks: run-job --help)

Exit codes: 0 applied or nothing to do, 1 error, 2 blocked. PostgreSQL credentials come
from the environment instead of a Secret: ``DUCKLAKE_SECRET_<NAME>_<KEY>`` (name and key
upper-cased, ``-`` as ``_``), else libpq's ``PGUSER``/``PGPASSWORD``. Every failure is one
``error:`` message with credentials removed; ``DUCKLAKE_DEBUG=1`` shows the traceback of an
unexpected one.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import textwrap
from collections import defaultdict
from collections.abc import Callable, Sequence
from contextlib import closing
from typing import Any, TypeVar

import yaml

from .api.load import load_paths, parse_args
from .api.v1alpha1.catalog import CatalogSpec
from .api.v1alpha1.schema import SchemaSpec
from .api.v1alpha1.table import TableSpec
from .catalog import Catalog
from .catalog.scrub import describe_failure, scrub
from .errors import CatalogNotFound, DuckLakeError, SpecError
from .evolution.heavy import HeavyJob
from .evolution.manifest_plans import counts_files
from .model.job_params import OPERATIONS, params_help
from .model.maintenance_params import DRY_RUN
from .model.options import parse_size
from .model.state import ColumnState
from .use_cases import (
    apply_plan,
    drift,
    empty_state,
    ensure_catalog,
    location_for,
    plan_for,
    s3_settings,
)

EXIT_OK, EXIT_ERROR, EXIT_BLOCKED = 0, 1, 2
CLI_AUTHOR = "ducklake-cli"  # ducklake_snapshot_changes.author of what the CLI commits
W = TypeVar("W")
R = TypeVar("R")


_secrets_read: set[str] = set()  # every secret the CLI read, masked in whatever it prints


def env_credentials(
    secret: str, user_key: str, password_key: str, namespace: str | None = None
) -> tuple[str | None, str | None]:
    def var(key: str) -> str:
        return f"DUCKLAKE_SECRET_{secret}_{key}".upper().replace("-", "_").replace(".", "_")

    password = os.environ.get(var(password_key)) or os.environ.get("PGPASSWORD")
    if password:
        _secrets_read.add(password)
    return os.environ.get(var(user_key)) or os.environ.get("PGUSER"), password


def known_secrets() -> set[str]:
    """What no message may show: the secrets read, and those libpq and S3 take from the
    environment by themselves."""
    env = (os.environ.get(k) for k in ("PGPASSWORD", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"))
    return _secrets_read | {v for v in env if v}


def _grouped(paths: Sequence[str]) -> list[tuple[CatalogSpec, list[SchemaSpec | TableSpec]]]:
    manifests = load_paths(paths)
    catalogs = {m.ref.name: m for m in manifests if isinstance(m, CatalogSpec)}
    members: dict[str, list[SchemaSpec | TableSpec]] = defaultdict(list)
    problems = []
    for m in manifests:
        if isinstance(m, (SchemaSpec, TableSpec)):
            if m.catalog not in catalogs:
                problems.append(f"{m.ref}: catalogRef {m.catalog!r} names no DuckLakeCatalog in the given files")
            members[m.catalog].append(m)
    if problems:
        raise SpecError(problems)
    # schemas before the tables that live in them
    return [(c, sorted(members[name], key=lambda m: isinstance(m, TableSpec))) for name, c in catalogs.items()]


def cmd_plan(args: argparse.Namespace) -> int:
    status = EXIT_OK
    output = []
    for cat_spec, members in _grouped(args.file):
        location = location_for(cat_spec, env_credentials)
        try:
            with closing(Catalog.open(location, expected_data_path=cat_spec.data_path)) as catalog:
                files = any(isinstance(m, TableSpec) and counts_files(m) for m in members)
                state = catalog.state(include_files=files)
            header = f"catalog {cat_spec.ref.name} ({location.describe()}), snapshot {state.snapshot.snapshot_id}"
        except CatalogNotFound:
            state = empty_state(cat_spec)
            header = f"catalog {cat_spec.ref.name} ({location.describe()}): will be created"
        plans = []
        pending: set[str] = set()
        for m in members:
            plans.append(plan_for(m, state, frozenset(pending)))
            if isinstance(m, SchemaSpec) and not plans[-1].is_empty and state.schema(m.name) is None:
                pending.add(m.name)
        if args.output == "json":
            output.append({"catalog": cat_spec.ref.name, "plans": [p.to_json() for p in plans]})
        else:
            print(header)
            for p in plans:
                print("  " + p.render().replace("\n", "\n  "))
        if any(p.is_refused for p in plans):
            status = EXIT_BLOCKED
    if args.output == "json":
        print(json.dumps(output, indent=2))
    return status


def cmd_apply(args: argparse.Namespace) -> int:
    """Apply every manifest's plan; ``--output json``: one document instead of the text, with
    each plan, its snapshot and the reports of the heavy jobs it ran (as ``run-job`` prints them)."""
    status = EXIT_OK
    text = args.output == "text"
    output = []
    for cat_spec, members in _grouped(args.file):
        catalog, created = ensure_catalog(cat_spec, env_credentials)
        applied = []
        with closing(catalog):
            if text:
                print(
                    f"catalog {cat_spec.ref.name} ({catalog.location.describe()}): {'created' if created else 'adopted'}"
                )
            for m in members:
                result = apply_plan(catalog, m, author=args.author)
                committed = result.commit.snapshot_id if result.commit is not None else None
                if text:
                    print("  " + result.plan.render().replace("\n", "\n  "))
                    if committed is not None:
                        print(f"  → committed snapshot {committed}")
                if result.plan.is_refused:
                    status = EXIT_BLOCKED
                heavy = (
                    _run_heavy_jobs(catalog, cat_spec, m, result.heavy, args.author, text)
                    if isinstance(m, TableSpec)
                    else []
                )
                applied.append({"plan": result.plan.to_json(), "committedSnapshot": committed, "jobs": heavy})
        output.append({"catalog": cat_spec.ref.name, "created": created, "applied": applied})
    if not text:
        print(json.dumps(output, indent=2, default=str))
    return status


def _run_heavy_jobs(
    catalog: Catalog, cat_spec: CatalogSpec, spec: TableSpec, jobs: Sequence[HeavyJob], author: str, text: bool
) -> list[dict[str, Any]]:
    """A plan with heavy changes, done here and now: its job in this process, given the
    manifest when the plan has other changes too, which it commits in the same snapshot (the
    controller runs it as a DuckLakeJob instead). Their reports; said as text too, when ``text``."""
    if not jobs:
        return []
    from ducklake_jobs.job_template import run_operation
    from ducklake_jobs.task_runners import run_in_process

    from . import storage

    reports = []
    storage.configure(s3_settings(cat_spec))
    try:
        for job in jobs:
            if text:
                print(f"  → heavy change: running {job.describe()} in this process")
            params = {**job.params, **({"manifest": spec} if job.with_plan else {})}
            report = run_operation(catalog, job.operation, job.table, params, runner=run_in_process, author=author)
            reports.append(report)
            if text:
                print(
                    f"  → committed snapshot {report['committedSnapshot']}: {report['filesRead']} files read, "
                    f"{report['filesWritten']} written, {report['rowsWritten']} rows in {report['seconds']} s"
                )
    finally:
        storage.configure(None)
    return reports


def cmd_status(args: argparse.Namespace) -> int:
    """What the catalog holds for the manifests; exit 1 when a declared schema or table does
    not exist (``apply`` creates it; 2 is kept for blocked plans)."""
    missing: list[str] = []
    for cat_spec, members in _grouped(args.file):
        location = location_for(cat_spec, env_credentials)
        with closing(Catalog.open(location, expected_data_path=cat_spec.data_path)) as catalog:
            state = catalog.state()
        print(
            f"catalog {cat_spec.ref.name}: format {state.version}, snapshot {state.snapshot.snapshot_id}, "
            f"schema version {state.snapshot.schema_version}"
        )
        for m in members:
            if isinstance(m, SchemaSpec):
                present = state.schema(m.name) is not None
                print(f"  schema {m.name}: {'present' if present else 'missing'}")
                if not present:
                    missing.append(f"no such schema {m.name} (run apply)")
                continue
            table = state.table(m.schema, m.name)
            if table is None:
                print(f"  table {m.qualified_name}: missing")
                missing.append(f"no such table {m.qualified_name} (run apply)")
                continue
            files = len(table.data_files)
            rows = sum(f.record_count for f in table.data_files) - sum(d.delete_count for d in table.delete_files)
            print(f"  table {m.qualified_name} (id {table.table_id}): {files} data files, {rows} rows in files")
            _show_columns(table.columns, 0)
            for line in drift(m, state):
                print(f"    drift: {line}")
    for problem in missing:
        print(f"error: {problem}", file=sys.stderr)
    return EXIT_ERROR if missing else EXIT_OK


def _show_columns(columns: Sequence[ColumnState], depth: int) -> None:
    for c in columns:
        print(f"    {'  ' * depth}{c.column_id:>4}  {c.name}  {c.type_name}{'' if c.nullable else ' NOT NULL'}")
        _show_columns(c.children, depth + 1)


def cmd_sql(args: argparse.Namespace) -> int:
    """Run SQL with DuckDB against the catalog, attached as ``lake`` (read and write), with only
    the extensions the catalog needs."""
    import duckdb

    from .duckdb_client import attach, configure_s3, connect, extensions_for

    for cat_spec, _ in _grouped(args.file):
        location = location_for(cat_spec, env_credentials)
        try:  # DuckDB would fail with its own message (or create a catalog without the manifest's options)
            Catalog.open(location, expected_data_path=cat_spec.data_path).close()
        except CatalogNotFound as exc:
            raise CatalogNotFound(f"{exc}: `ducklake apply -f` the catalog manifest first") from None
        s3 = s3_settings(cat_spec)
        with closing(connect(extensions_for(location, cat_spec.data_path))) as con:
            try:
                if s3 is not None:
                    configure_s3(
                        con,
                        key_id=s3.access_key,
                        secret=s3.secret_key,
                        region=s3.region,
                        endpoint=s3.endpoint,
                        url_style=s3.url_style,
                    )
                attach(location, alias="lake", con=con)
                for statement in args.sql:
                    relation = con.sql(statement)
                    if relation is not None:
                        relation.show(max_width=160)
            except duckdb.Error as exc:  # the user's SQL: DuckDB's whole message (it points at the error)
                raise DuckLakeError(f"DuckDB: {exc}") from None  # main() scrubs every message
    return EXIT_OK


# Flags that stand for ``-p <param>=<value>`` (parsed and checked as -p values are).
SHORTHANDS = {"--older-than": "olderThan", "--retain-last": "retainLast"}


def _job_params(args: argparse.Namespace) -> dict[str, object]:
    """``-p key=value`` (values read as YAML scalars: 5, 0.5, true, 7d) plus the shorthand flags."""
    params: dict[str, object] = {}
    for item in args.param or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SpecError(f"-p {item!r}: expected key=value")
        params[key.strip()] = yaml.safe_load(value)
    for flag, key in SHORTHANDS.items():
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None:
            params[key] = yaml.safe_load(value)
    if args.dry_run:
        params["dryRun"] = True
    return params


def _shorthand_help(key: str) -> str:
    takers = [name for name, op in OPERATIONS.items() if key in op.params]
    return f"-p {key}=VALUE, for {', '.join(takers)} (see the operation parameters below)"


SPARK_MISSING = (
    "this job runs its file groups as Spark tasks, but pyspark is not installed: "
    "pip install 'ducklake-operator[spark]', or pass --no-spark to run them in this process"
)


def run_on_spark_if_installed(
    fn: Callable[[W], R], items: list[W], on_done: Callable[[int], None] | None = None
) -> list[R]:
    """The Spark runner, saying what to do when pyspark is missing; asked only when the job has
    work for Spark tasks, so jobs that never use Spark run without it."""
    from ducklake_jobs.task_runners import run_on_spark

    if items and importlib.util.find_spec("pyspark") is None:
        raise DuckLakeError(SPARK_MISSING)
    return run_on_spark(fn, items, on_done)


def _megabytes(text: str) -> int:
    """A size argument (512MB, 2GiB) in DuckDB's megabytes (10^6 bytes)."""
    try:
        size = parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if size < 1_000_000:
        raise argparse.ArgumentTypeError(f"{text!r} is under 1MB")
    return size // 1_000_000


def cmd_run_job(args: argparse.Namespace) -> int:
    """Run a maintenance operation locally and print its JSON result."""
    from ducklake_jobs import task_resources
    from ducklake_jobs.job_template import run_operation
    from ducklake_jobs.task_runners import run_in_process

    from . import storage

    params = _job_params(args)
    job_args = parse_args(args.operation, params, "-p")  # once; every problem before touching a catalog
    for cat_spec, _ in _grouped(args.file):
        location = location_for(cat_spec, env_credentials)
        with closing(Catalog.open(location, expected_data_path=cat_spec.data_path)) as catalog:
            storage.configure(s3_settings(cat_spec))  # shipped to Spark tasks with their work
            try:
                with task_resources.using(task_resources.in_process(args.memory_limit)):
                    result = run_operation(
                        catalog,
                        args.operation,
                        args.table,
                        job_args,
                        runner=run_in_process if args.no_spark else run_on_spark_if_installed,
                        author=CLI_AUTHOR,
                    )
            finally:
                storage.configure(None)
        print(json.dumps({"catalog": cat_spec.ref.name, **result}, indent=2, default=str))
    return EXIT_OK


def _table_help() -> str:
    """Which operations need the table argument, and which take it optionally (their declarations' scope)."""
    needed = [n for n, op in OPERATIONS.items() if op.available and op.table == "required"]
    optional = [n for n, op in OPERATIONS.items() if op.available and op.table == "optional"]
    return f"schema.table ({', '.join(needed)}; optional for {', '.join(optional)})"


def _no_spark_help() -> str:
    """The operations whose file groups run as Spark tasks (their declarations say so): the only ones
    --no-spark changes."""
    takers = [n for n, op in OPERATIONS.items() if op.available and op.spark_tasks]
    return (
        f"{', '.join(takers)}: run the file groups in this process instead of as Spark tasks "
        "(local[*], or DUCKLAKE_SPARK_MASTER); quicker for small tables, no JVM. The other operations "
        "always run in this process"
    )


def _params_epilog() -> str:
    out = ["operation parameters (-p key=value):"]
    for name, params in params_help():
        if params:
            out.append(f"  {name}")
            out += [
                textwrap.fill(text, width=100, initial_indent=f"    {key:<20}", subsequent_indent=" " * 24)
                for key, text in params
            ]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ducklake", description="Declarative DuckLake tables")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, fn, helptext in (
        ("plan", cmd_plan, "show what apply would change"),
        ("apply", cmd_apply, "commit the manifests"),
        ("status", cmd_status, "tables, columns with ids, drift"),
        ("sql", cmd_sql, "run SQL with DuckDB on the catalog (attached as lake)"),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("-f", "--file", action="append", required=True, help="manifest file or directory (repeatable)")
        p.set_defaults(func=fn)
        if name in ("plan", "apply"):
            p.add_argument("-o", "--output", choices=("text", "json"), default="text")
        if name == "apply":
            p.add_argument("--author", default=CLI_AUTHOR)
        if name == "sql":
            p.add_argument("sql", nargs="+", help="SQL statements")
    available = [name for name, op in OPERATIONS.items() if op.available]
    job = sub.add_parser(
        "run-job",
        help="run a maintenance operation locally: " + ", ".join(available),
        epilog=_params_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    job.add_argument("operation", choices=available)
    job.add_argument("table", nargs="?", help=_table_help())
    job.add_argument(
        "-p", "--param", action="append", help="operation parameter key=value, e.g. -p targetFileSize=128MB"
    )
    job.add_argument("-f", "--file", action="append", required=True, help="manifest file or directory (repeatable)")
    for flag, key in SHORTHANDS.items():
        job.add_argument(flag, help=_shorthand_help(key))
    job.add_argument("--dry-run", action="store_true", help=f"-p dryRun=true: {DRY_RUN.help}")
    job.add_argument(
        "--no-spark",
        action="store_true",
        help=_no_spark_help(),
    )
    job.add_argument(
        "--memory-limit",
        type=_megabytes,
        metavar="SIZE",
        help="with --no-spark: the memory the file groups are given, e.g. 2GB (their DuckDB gets 80%% of it "
        "and spills beyond it to the task's scratch directory under TMPDIR); default: DuckDB's, 80%% of the "
        "machine's. Spark tasks get theirs from spark.executor.pyspark.memory",
    )
    job.set_defaults(func=cmd_run_job)
    args = parser.parse_args(argv)
    try:
        return _dispatch(args)
    finally:
        if argv is None:  # this process's own command line
            _end_spark()


def _end_spark() -> None:
    """Kill the JVM of a Spark session the command started (``ducklake run-job``), its result
    printed (``ducklake_jobs.session.stop_jvm``, as the job program ends): it outlived the
    command by about 0.35 s, a process left running after the shell's prompt came back. Not
    from ``main(argv)`` called in a process that may go on using the session."""
    if "pyspark" in sys.modules:  # else nothing of the job package to import
        from ducklake_jobs.session import stop_jvm

        stop_jvm()


def _dispatch(args: argparse.Namespace) -> int:
    """The command's function, its failures as one line on stderr."""
    try:
        return int(args.func(args))
    except SpecError as exc:
        what = "parameters" if all(p.startswith("-p.") for p in exc.problems) else "manifests"
        print(f"error: invalid {what}:", file=sys.stderr)
        for problem in exc.problems:
            print(scrub(f"  {exc.source + ': ' if exc.source else ''}{problem}", known_secrets()), file=sys.stderr)
        return EXIT_ERROR
    except DuckLakeError as exc:
        print(f"error: {scrub(str(exc), known_secrets())}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # a bug, or a failure no layer below turned into a sentence
        if os.environ.get("DUCKLAKE_DEBUG"):
            raise
        print(
            f"error: unexpected {type(exc).__name__}: {describe_failure(str(exc), known_secrets())} "
            "(DUCKLAKE_DEBUG=1 shows where)",
            file=sys.stderr,
        )
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
