"""A fallback that could never apply is refused when the DAG file is parsed, naming the DAG and task."""

from __future__ import annotations

import datetime as dt

import pytest
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_leastaction.exceptions import InvalidFallbackError
from airflow_leastaction.gating.fallback import Fallback
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


def test_require_0_is_refused_naming_the_dag_and_task():
    with pytest.raises(InvalidFallbackError, match="DAG 'country_report' task 'report': fallback require=0"):
        declare(Fallback("06:00", 0))


LETTERS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", max_size=8)
BAD = {
    "at": st.one_of(
        st.timedeltas(max_value=-dt.timedelta(microseconds=1)),
        LETTERS,
        st.integers(),
        st.times(timezones=st.just(dt.UTC)),
        st.sampled_from(["25:00", "06:00+01:00", "6h", ""]),
    ),
    "require": st.one_of(st.integers(max_value=0), st.booleans(), st.floats(), LETTERS, st.none()),
    "on_late_arrival": st.one_of(LETTERS, st.integers(), st.sampled_from(["Rerun", "rerun ", "retry"])),
}
GOOD = {"at": "06:00", "require": 1, "on_late_arrival": None}


def with_a_sensor(fallback):
    with DAG("country_report", schedule=None, start_date=START):
        ParentIntervalSensor(task_id="report", parents=FEEDS, timeout=86400, fallback=fallback)


def with_a_run_condition(fallback):
    declare(fallback)


def with_a_dag_run_condition(fallback):
    with DAG("country_report", schedule=None, start_date=START) as dag:
        EmptyOperator(task_id="report")
        dag_run_condition(dag, *FEEDS, fallback=fallback)


@settings(max_examples=150, deadline=None)
@given(
    bad=st.lists(st.sampled_from(sorted(BAD)), min_size=1, max_size=3, unique=True).flatmap(
        lambda names: st.fixed_dictionaries({name: BAD[name] for name in names})
    ),
    attach=st.sampled_from([with_a_sensor, with_a_run_condition, with_a_dag_run_condition]),
)
def test_every_bad_value_is_refused_naming_the_dag_the_task_and_the_value(bad, attach):
    fallback = Fallback(**{**GOOD, **bad})
    task = "leastaction_dag_gate" if attach is with_a_dag_run_condition else "report"
    with pytest.raises(InvalidFallbackError) as raised:
        attach(fallback)
    message = str(raised.value)
    assert message.startswith(f"DAG 'country_report' task '{task}': "), message
    assert all(f"fallback {name}=" in message for name in bad), message


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
