"""Column tags: DuckDB 1.5.5 fails every query on a table whose columns carry a tag other than
the comment ("Only comment tags are supported for columns currently"), so manifests may not
declare them, and a lake that holds some (written by an earlier version of the operator)
loses them at the next apply, after which DuckDB reads it again."""

from __future__ import annotations

from contextlib import closing

import pytest

from ducklake_operator.api.load import COLUMN_TAGS_REFUSED, parse_manifest
from ducklake_operator.api.v1alpha1.table import TableSpec
from ducklake_operator.catalog import Catalog, CatalogLocation
from ducklake_operator.errors import SpecError
from ducklake_operator.model.changes import CreateTable
from ducklake_operator.model.types import Field, parse_type
from ducklake_operator.use_cases import apply_plan
from support import duck

pytestmark = pytest.mark.duckdb


def table(columns: list[dict[str, object]]) -> dict[str, object]:
    return {"kind": "DuckLakeTable", "metadata": {"name": "t", "namespace": "data"},
            "spec": {"catalogRef": {"name": "lake"}, "name": "t", "columns": columns}}  # fmt: skip


def test_a_manifest_with_column_tags_is_refused_at_every_level() -> None:
    with pytest.raises(SpecError) as info:
        parse_manifest(table([{"name": "id", "type": "int64", "tags": {"pii": "no"}},
                              {"name": "s", "type": "struct", "fields": [{"name": "a", "type": "int32",
                                                                          "tags": {"x": "1"}}]}]))  # fmt: skip
    assert list(info.value.problems) == [f"spec.columns[0].tags: {COLUMN_TAGS_REFUSED}",
                                   f"spec.columns[1].fields[0].tags: {COLUMN_TAGS_REFUSED}"]  # fmt: skip
    parse_manifest(table([{"name": "id", "type": "int64", "comment": "pii: no", "tags": {}}]))  # empty is fine


def test_column_tags_an_earlier_version_wrote_are_removed_and_duckdb_reads_again(tmp_path) -> None:
    location = CatalogLocation(kind="sqlite", path=str(tmp_path / "c.sqlite"))
    with closing(Catalog.create(location, str(tmp_path / "data") + "/")) as catalog:
        catalog.commit([CreateTable("main", "t", (Field("id", parse_type("int64"), tags=(("pii", "no"),)),))])
    con = duck.attach(location, con=duck.connect())
    with pytest.raises(Exception, match="Only comment tags are supported for columns"):
        con.execute("SELECT * FROM lk.t").fetchall()
    con.close()
    spec = parse_manifest(table([{"name": "id", "type": "int64"}]))
    assert isinstance(spec, TableSpec)
    with closing(Catalog.open(location)) as catalog:
        result = apply_plan(catalog, spec)
    assert result.commit is not None and any("pii" in c.describe() for c in result.plan.changes)
    con = duck.attach(location, con=duck.connect())
    duck.run_workload(location, ["INSERT INTO lk.t VALUES (1)"])
    assert con.execute("SELECT * FROM lk.t").fetchall() == [(1,)]
    con.close()
