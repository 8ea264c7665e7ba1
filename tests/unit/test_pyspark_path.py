"""Spark's Python archives go last on a path only where they are the installed PySpark's own
(``ducklake_jobs.pyspark_path``): real directories, found as Python's import system finds them."""

from __future__ import annotations

import os

from ducklake_jobs.pyspark_path import installed_first


def package(site: str) -> tuple[str, str]:
    """A pyspark package under ``site`` with Spark's archives in its python/lib, as pip installs it."""
    lib = os.path.join(site, "pyspark", "python", "lib")
    os.makedirs(lib)
    open(os.path.join(site, "pyspark", "__init__.py"), "w").close()
    archives = os.path.join(lib, "pyspark.zip"), os.path.join(lib, "py4j-0.10.9.9-src.zip")
    for archive in archives:
        open(archive, "wb").close()
    return archives


def test_the_installed_packages_own_archives_go_last(tmp_path) -> None:
    site = str(tmp_path / "site")
    zip_, py4j = package(site)
    assert installed_first([zip_, py4j, "/app", site]) == ["/app", site, zip_, py4j]


def test_another_sparks_archives_stay_first(tmp_path) -> None:
    site = str(tmp_path / "site")
    package(site)
    other = str(tmp_path / "spark" / "python" / "lib")
    path = [os.path.join(other, "pyspark.zip"), os.path.join(other, "py4j-0.10.9.9-src.zip"), site]
    assert installed_first(path) == path


def test_without_an_installed_pyspark_the_archives_stay_first(tmp_path) -> None:
    zip_, py4j = package(str(tmp_path / "site"))
    path = [zip_, py4j, str(tmp_path / "elsewhere")]
    assert installed_first(path) == path


def test_a_path_without_archives_is_left_alone(tmp_path) -> None:
    site = str(tmp_path / "site")
    package(site)
    assert installed_first(["/app", site]) == ["/app", site]
