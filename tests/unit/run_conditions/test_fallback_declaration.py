"""A fallback that could never apply is refused when the DAG file is parsed, naming the DAG and task."""

from __future__ import annotations

import datetime as dt

import pytest
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG

from airflow_leastaction.exceptions import InvalidFallbackError
from airflow_leastaction.fallback import Fallback
from airflow_leastaction.refs import external_task
from airflow_leastaction.run_conditions import dag_run_condition, failure, run_condition, success
from airflow_leastaction.sensors import ParentIntervalSensor

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
FEEDS = [external_task(f"feed_{c}", "feeds") for c in ("fr", "de", "es", "it")]


def declare(fallback, *deps, **kwargs):
    with DAG("country_report", schedule=None, start_date=START) as dag:
        report = EmptyOperator(task_id="report")
        run_condition(report, *(deps or [success(f) for f in FEEDS]), fallback=fallback, **kwargs)
    return dag


def test_a_sound_fallback_is_taken():
    dag = declare(Fallback("06:00", require=3))
    assert dag.get_task("report__gate").fallback == Fallback("06:00", require=3)


@pytest.mark.parametrize(
    "fallback, deps, kwargs, words",
    [
        (Fallback("06:00", 5), (), {}, "fallback require=5 but the task has only 4 dependencies"),
        (Fallback("06:00", 1), (success(FEEDS[0]), failure(FEEDS[1])), {}, "cannot stand in for FAILURE"),
        (Fallback(dt.timedelta(hours=2), 3), (), {"max_wait": dt.timedelta(hours=1)}, "is after max_wait"),
        (Fallback("06:00", 3), (), {"native": True}, "a native run condition"),
    ],
)
def test_a_fallback_that_could_never_apply_is_refused_naming_the_task(fallback, deps, kwargs, words):
    with pytest.raises(InvalidFallbackError, match="DAG 'country_report' task 'report'") as raised:
        declare(fallback, *deps, **kwargs)
    assert words in str(raised.value)


def test_require_0_is_refused_where_the_fallback_is_written():
    with pytest.raises(InvalidFallbackError, match="require=0"):
        Fallback("06:00", 0)


def test_a_dag_run_condition_refuses_it_too():
    refused = pytest.raises(InvalidFallbackError, match="DAG 'daily' task 'leastaction_dag_gate': fallback require=2")
    with refused, DAG("daily", schedule=None, start_date=START) as dag:
        EmptyOperator(task_id="report")
        dag_run_condition(dag, FEEDS[0], fallback=Fallback("06:00", 2))


def test_a_sensor_refuses_a_deadline_after_its_timeout():
    refused = pytest.raises(
        InvalidFallbackError, match="task 'wait_for_feeds': the fallback deadline .* is after timeout"
    )
    with refused, DAG("sensed", schedule=None, start_date=START):
        ParentIntervalSensor(task_id="wait_for_feeds", parents=FEEDS, timeout=3600, fallback=Fallback("06:00", 3))
