"""Shared fixtures: a real PostgreSQL server for the session, catalogs on both backends.

The server is started here, by the test run itself; if it cannot start, every test that
needs it errors (nothing is skipped).
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

sys.path.insert(0, os.path.dirname(__file__))

from ducklake_operator.catalog import Catalog, CatalogLocation  # noqa: E402
from support.pgserver import PgServer  # noqa: E402
from support.s3server import S3Server  # noqa: E402

# Property tests replay the same examples on every run of the test command, so a red CI
# can be reproduced; HYPOTHESIS_PROFILE=explore draws new ones (add --hypothesis-seed=N to
# replay one exploration).
settings.register_profile("replay", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "replay"))

_counter = itertools.count()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    server = PgServer.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_location(pg_server: PgServer) -> CatalogLocation:
    name = f"lake_{os.getpid()}_{next(_counter)}"
    pg_server.create_database(name)
    return CatalogLocation(
        kind="postgres", host=pg_server.host, port=pg_server.port, database=name, user=pg_server.user
    )


@pytest.fixture
def make_location(request: pytest.FixtureRequest, tmp_path) -> Callable[[str], CatalogLocation]:
    """Fresh, empty catalog locations of a backend ('sqlite' or 'postgres')."""

    def make(kind: str) -> CatalogLocation:
        if kind == "sqlite":
            return CatalogLocation(kind="sqlite", path=str(tmp_path / f"catalog_{next(_counter)}.sqlite"))
        server: PgServer = request.getfixturevalue("pg_server")
        name = f"lake_{os.getpid()}_{next(_counter)}"
        server.create_database(name)
        return CatalogLocation(kind="postgres", host=server.host, port=server.port, database=name, user=server.user)

    return make


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, make_location) -> CatalogLocation:
    return make_location(request.param)


@pytest.fixture
def data_path(tmp_path) -> str:
    path = tmp_path / "data"
    path.mkdir()
    return str(path) + "/"


@pytest.fixture
def catalog(location: CatalogLocation, data_path: str) -> Iterator[Catalog]:
    cat = Catalog.create(location, data_path)
    try:
        yield cat
    finally:
        cat.close()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    server = S3Server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_bucket(s3_server, monkeypatch) -> str:
    """A fresh bucket; the AWS environment points at the S3 server. Returns ``s3://bucket/``."""
    import pyarrow.fs as pafs

    from ducklake_operator import storage

    for key, value in s3_server.env.items():
        monkeypatch.setenv(key, value)
    storage.configure(None)
    bucket = f"lake-{os.getpid()}-{next(_counter)}"
    pafs.S3FileSystem(
        endpoint_override=s3_server.endpoint.split("://")[1],
        scheme="http",
        access_key="test-key",
        secret_key="test-secret",
        region="us-east-1",
        allow_bucket_creation=True,
    ).create_dir(bucket)
    return f"s3://{bucket}/"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Units of work for ``pytest -n`` (``--dist loadgroup``, as ``scripts/test`` runs the
    suite): a module, so its module-scoped fixtures start once; and ``tests/e2e`` whole, on
    one worker, since it shares one control plane and operator, stopped after its last test."""
    e2e = Path(__file__).parent / "e2e"
    for item in items:
        group = "tests/e2e" if e2e in item.path.parents else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))


def pytest_collection_finish(session: pytest.Session) -> None:
    """The pod tests need the images and the node's binaries, minutes to build on a new
    machine: when any of them is collected, the builds start now, beside the tests that run
    first (``tests/pods`` comes late). A build that fails here fails again, with its reason,
    in the test that needs it."""
    if any(item.nodeid.startswith("tests/pods/") for item in session.items):
        threading.Thread(target=_build_for_pods, name="pod-builds", daemon=True).start()


def _build_for_pods() -> None:
    from support import images, kube_cluster, spark_operator

    try:
        kube_cluster.binaries()
        images.pause_image()
        spark_operator.image(images.operator_image())
    except Exception as exc:  # said again, with its reason, by the test that needs it
        print(f"\nbuilding for the pod tests failed (the pod tests will say why): {exc}", file=sys.stderr)
