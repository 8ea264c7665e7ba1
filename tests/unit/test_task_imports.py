"""The catalog package imports its names when first asked for (PEP 562), so a module that
imports ``ducklake_operator.catalog.paths`` (a Spark task's) does not import SQLAlchemy and
the catalog's writers with it (tests/maintenance/test_task_pickles.py: what a worker imports)."""

from __future__ import annotations


def test_the_catalog_package_still_gives_its_names() -> None:
    import ducklake_operator.catalog as catalog
    from ducklake_operator.catalog.catalog import Catalog

    assert catalog.Catalog is Catalog and catalog.CatalogLocation.__name__ == "CatalogLocation"
    assert sorted(catalog.__all__) == ["Catalog", "CatalogLocation", "CommitResult"]
