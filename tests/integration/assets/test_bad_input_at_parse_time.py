"""Bad bridges refused by Airflow's own DAG parser, each import error naming both sides."""

from __future__ import annotations

import textwrap

import pytest

from airflow_leastaction.assets import bridge
from airflow_leastaction.version_compat import PARTITIONED_ASSETS
from tests.helpers.airflow_minors import needs

HEADER = """
from airflow.sdk import DAG, task
from airflow_leastaction.assets import catalog_asset, partitioned_on_catalog
from airflow_leastaction.refs import external_task

FEED = external_task("feed", "partners")
"""

FILES = {
    "two_assets": """
        with DAG("a", schedule=[catalog_asset(FEED)]):
            pass
        with DAG("b", schedule=[catalog_asset(FEED, name="feed_copy")]):
            pass
    """,
    "one_name_two_tasks": """
        with DAG("a", schedule=[catalog_asset(FEED, name="partner_data")]):
            pass
        with DAG("b", schedule=[catalog_asset(external_task("returns", "partners"), name="partner_data")]):
            pass
    """,
    "unreadable_keys": """
        from airflow.sdk import StartOfDayMapper

        with DAG("daily", schedule=partitioned_on_catalog(
            catalog_asset(FEED), default_partition_mapper=StartOfDayMapper(input_format="%Y-%m-%d")
        )):
            pass
    """,
}
EXPECTED = {
    "two_assets": ["partners/feed", "'catalog:partners/feed'", "'feed_copy'"],
    "one_name_two_tasks": ["'partner_data'", "partners/feed", "partners/returns"],
    "unreadable_keys": ["StartOfDayMapper(input_format='%Y-%m-%d')", "'catalog:partners/feed'", "partners/feed"],
}


PARTITIONED = needs(PARTITIONED_ASSETS, "partition-aware DAGs and partition mappers (Airflow 3.2)")


@pytest.mark.parametrize(
    "case", [pytest.param(case, marks=PARTITIONED) if case == "unreadable_keys" else case for case in sorted(FILES)]
)
def test_the_dag_file_fails_to_import_with_an_error_naming_both_sides(case, tmp_path, monkeypatch, airflow_db):
    from airflow_leastaction.version_compat import dag_bag_class

    DagBag = dag_bag_class()

    for registry in ("_by_task", "_by_name", "_by_uri"):  # the DAG processor parses each file in a new process
        monkeypatch.setattr(bridge, registry, {})
    path = tmp_path / f"{case}.py"
    path.write_text(HEADER + textwrap.dedent(FILES[case]))
    bag = DagBag(str(tmp_path))
    assert not bag.dags
    [error] = bag.import_errors.values()
    assert all(part in error for part in EXPECTED[case]), error
