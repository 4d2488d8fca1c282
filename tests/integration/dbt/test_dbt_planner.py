"""The planner asks real dbt (``dbt ls``) which models a selector resolves to."""

from __future__ import annotations

import pytest

from airflow_leastaction.dbt.planner import Planner
from airflow_leastaction.dbt.runner import DbtRunner, dbt_executable
from airflow_leastaction.exceptions import DbtPlanningError, DbtProjectError
from tests.helpers.dbt_queue import DBT_ENV, names

pytestmark = pytest.mark.dbt


@pytest.fixture(scope="module")
def planner(deployed_project):
    return Planner(DbtRunner(deployed_project, env=DBT_ENV))


class TestPlanner:
    def test_request_a_and_request_b_resolve_to_overlapping_physical_models(self, plans):
        a, b = plans["A"], plans["B"]
        assert names(m.unique_id for m in a.models) == [
            "agg_labor_history",
            "dim_project",
            "fact_project_labor",
            "stg_field_ops__work_orders",
        ]
        assert names(m.unique_id for m in b.models) == [
            "agg_labor_history",
            "dim_project",
            "fact_project_labor",
            "stg_field_ops__time_entries",
        ]
        assert names(m.unique_id for m in a.excluded) == ["rpt_open_work_orders"]  # a view
        dim = next(m for m in a.models if m.name == "dim_project")
        assert (dim.fqn, dim.materialized, dim.tier) == ("field_ops.marts.dim_project", "table", "fast")

    def test_a_source_selector_that_resolves_only_to_views_is_a_successful_no_op(self, planner):
        plan = planner.plan("source:field_ops.crews+")
        assert plan.is_noop
        assert names(m.unique_id for m in plan.excluded) == ["stg_field_ops__crews"]

    def test_a_selector_matching_no_enabled_node_is_a_planning_failure(self, planner):
        with pytest.raises(DbtPlanningError, match=r"'source:field_ops\.invoices\+'.*matches no enabled dbt node"):
            planner.plan("source:field_ops.invoices+")

    @pytest.mark.parametrize("selector", ["", "   ", None])
    def test_an_empty_selector_is_rejected_before_dbt_runs(self, planner, selector):
        with pytest.raises(DbtPlanningError, match="non-empty string"):
            planner.plan(selector)

    def test_a_directory_without_dbt_project_yml_is_rejected(self, tmp_path):
        with pytest.raises(DbtProjectError, match="no dbt_project.yml"):
            DbtRunner(tmp_path)


def test_without_dbt_installed_the_error_says_how_to_install_the_unpublished_package(tmp_path, monkeypatch):
    # An interpreter with no dbt beside it and a PATH without one: what a worker without the extra sees.
    monkeypatch.setattr("sys.executable", str(tmp_path / "bin" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(DbtProjectError, match="the dbt executable is not installed") as raised:
        dbt_executable()
    assert (
        "from a clone of its repository (pip install -c constraints/airflow-<your Airflow minor>.txt '.[dbt]')"
        in str(raised.value)
    )
    assert "pip install 'airflow-leastaction[dbt]'" not in str(raised.value)  # not on PyPI
