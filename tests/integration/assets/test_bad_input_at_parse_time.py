"""Bad bridges refused by Airflow's own DAG parser, each import error naming both sides."""

from __future__ import annotations

import json
import textwrap

import pytest

from airflow_leastaction.assets import bridge
from airflow_leastaction.version_compat import PARTITIONED_ASSETS
from tests.helpers.airflow_minors import needs
from tests.helpers.crash import run_to_end
from tests.helpers.entry_points import declared_entry_points

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


#: DAG files whose catalog asset shares its name or URI with a plain asset of a DAG: Airflow would keep
#: one of the two active and drop the other without an error. The cluster policy refuses the DAG naming
#: the second asset (an import error of its file); the file's other DAGs parse.
PLAIN_TWINS = {
    "same_name_in_one_schedule": """
        from airflow.sdk import Asset

        with DAG("partner_report", schedule=[
            catalog_asset(FEED, name="partner_data"), Asset("partner_data", uri="s3://bucket/partner_data")
        ]):
            pass
    """,
    "same_uri_in_a_condition": """
        from airflow.sdk import Asset

        with DAG("partner_report", schedule=catalog_asset(FEED) | Asset(
            "feed_copy", uri="leastaction://catalog/partners/feed"
        )):
            pass
    """,
    "an_outlet_of_another_dag_in_the_file": """
        from airflow.sdk import Asset

        with DAG("partner_report", schedule=[catalog_asset(FEED, name="partner_data")]):
            pass
        with DAG("partner_writer", schedule=None):
            @task(outlets=[Asset("partner_data", uri="s3://bucket/partner_data")])
            def write():
                pass

            write()
    """,
}
PLAIN_EXPECTED = {
    "same_name_in_one_schedule": [
        "DAG 'partner_report'",
        "'partner_data'",
        "partners/feed",
        "s3://bucket/partner_data",
    ],
    "same_uri_in_a_condition": [
        "DAG 'partner_report'",
        "'leastaction://catalog/partners/feed'",
        "partners/feed",
        "'feed_copy'",
    ],
    "an_outlet_of_another_dag_in_the_file": ["DAG 'partner_writer'", "'partner_data'", "partners/feed", "s3://"],
}

PARSE = """
import json
from airflow_leastaction.version_compat import dag_bag_class

bag = dag_bag_class()({folder!r})
print(json.dumps({{"dags": sorted(bag.dags), "errors": list(bag.import_errors.values())}}))
"""


@pytest.mark.parametrize("case", sorted(PLAIN_TWINS))
def test_a_plain_asset_sharing_a_catalog_assets_name_or_uri_is_refused_at_parse_naming_the_dag_and_both(
    case, tmp_path, airflow_db
):
    """Parsed by a real DagBag in a process of its own, with the package's entry points installed: Airflow
    loads the package's cluster policy as it does in a deployment."""
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / f"{case}.py").write_text(HEADER + textwrap.dedent(PLAIN_TWINS[case]))
    installed = declared_entry_points(tmp_path / "site", ("airflow.policy",))
    out = run_to_end(PARSE.format(folder=str(dags)), env={"PYTHONPATH": str(installed)})
    parsed = json.loads(out.strip().splitlines()[-1])
    assert parsed["dags"] == (["partner_report"] if case == "an_outlet_of_another_dag_in_the_file" else [])
    [error] = parsed["errors"]
    assert all(part in error for part in PLAIN_EXPECTED[case]), error


def test_a_dag_whose_assets_are_each_one_thing_parses_with_the_policy_installed(tmp_path, airflow_db):
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "fine.py").write_text(
        HEADER
        + textwrap.dedent("""
            from airflow.sdk import Asset

            with DAG("partner_report", schedule=[catalog_asset(FEED), Asset("orders", uri="s3://bucket/orders")]):
                @task(outlets=[Asset("report", uri="s3://bucket/report")])
                def write():
                    pass

                write()
        """)
    )
    installed = declared_entry_points(tmp_path / "site", ("airflow.policy",))
    out = run_to_end(PARSE.format(folder=str(dags)), env={"PYTHONPATH": str(installed)})
    assert json.loads(out.strip().splitlines()[-1]) == {"dags": ["partner_report"], "errors": []}
