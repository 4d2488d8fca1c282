"""A DAG file whose fallback has a bad value fails to import, and Airflow's own parser shows an error
naming the DAG and the task it was written for."""

from __future__ import annotations

import textwrap

import pytest

HEADER = """
import datetime as dt

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG

from airflow_leastaction.gating.fallback import Fallback
from airflow_leastaction.refs import external_task
from airflow_leastaction.run_conditions import run_condition, success
from airflow_leastaction.sensors import ParentIntervalSensor

FEEDS = [external_task(f"feed_{c}", "feeds") for c in ("fr", "de")]
START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
"""

FILES = {
    "gate_require_0": """
        with DAG("country_report", schedule="@daily", start_date=START):
            report = EmptyOperator(task_id="report")
            run_condition(report, *(success(f) for f in FEEDS), fallback=Fallback("06:00", require=0))
    """,
    "sensor_bad_at": """
        with DAG("country_report", schedule="@daily", start_date=START):
            ParentIntervalSensor(task_id="report", parents=FEEDS, fallback=Fallback("six o'clock", require=1))
    """,
    "gate_bad_on_late_arrival": """
        with DAG("country_report", schedule="@daily", start_date=START):
            report = EmptyOperator(task_id="report")
            run_condition(
                report, *(success(f) for f in FEEDS), fallback=Fallback("06:00", 1, on_late_arrival="retry")
            )
    """,
}
EXPECTED = {
    "gate_require_0": "fallback require=0",
    "sensor_bad_at": 'fallback at="six o\'clock"',
    "gate_bad_on_late_arrival": "fallback on_late_arrival='retry'",
}


@pytest.mark.parametrize("case", sorted(FILES))
def test_a_bad_fallback_fails_the_import_naming_the_dag_and_the_task(case, tmp_path, airflow_db):
    from airflow_leastaction.version_compat import dag_bag_class

    (tmp_path / f"{case}.py").write_text(HEADER + textwrap.dedent(FILES[case]))
    bag = dag_bag_class()(str(tmp_path))
    assert not bag.dags
    [error] = bag.import_errors.values()
    assert "DAG 'country_report' task 'report': " + EXPECTED[case] in error, error
