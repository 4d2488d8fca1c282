"""What the package does on each supported Airflow minor: where the scheduler can start a task in the
triggerer (3.3), the gates, the sensor and the run-outcome task start there by default; where it cannot
(3.1, 3.2), they start on a worker, check once and defer, and the log says so once per process."""

from __future__ import annotations

import datetime as dt
import logging

import pytest
from airflow.sdk import DAG, task

from airflow_leastaction import version_compat
from airflow_leastaction.refs import airflow_task
from airflow_leastaction.run_conditions import run_condition, success
from airflow_leastaction.sensors import ParentIntervalSensor, external_task
from airflow_leastaction.version_compat import OLDEST_SUPPORTED, TRIGGERER_STARTS_TASKS, airflow_version

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
SAID = "cannot start a task in the triggerer"


@pytest.fixture
def fresh_process(monkeypatch, caplog):
    """As in a process that has not said anything yet; the package's log lines captured."""
    monkeypatch.setattr(version_compat, "_said", set())
    caplog.set_level(logging.INFO, logger=version_compat.__name__)
    return caplog


def waiting_tasks(dag_id: str, **kwargs) -> dict:
    """A sensor, a run-condition gate and the run-outcome task, each left at its default start."""
    with DAG(dag_id, schedule=None, start_date=START) as dag:
        sensor = ParentIntervalSensor(task_id="wait", parents=[external_task("raw", "sales")], **kwargs)

        @task
        def load():
            return 1

        @task
        def report():
            return 2

        loaded = load()
        sensor >> loaded
        run_condition(report(), success(loaded))
    return {
        t.task_id: t
        for t in dag.tasks
        if hasattr(t, "start_from_trigger") and t.task_type != "_PythonDecoratedOperator"
    }


def said(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if SAID in r.getMessage()]


def test_the_running_airflow_is_a_supported_minor():
    assert airflow_version()[:2] >= OLDEST_SUPPORTED


def test_a_task_that_does_not_ask_to_start_in_the_triggerer_never_does(fresh_process):
    assert version_compat.starts_in_triggerer(False) is False
    assert said(fresh_process) == []


@pytest.mark.skipif(TRIGGERER_STARTS_TASKS, reason="Airflow 3.3 starts tasks in the triggerer: no fallback")
def test_where_airflow_cannot_start_a_task_in_the_triggerer_the_gates_start_on_a_worker_and_say_so_once(
    fresh_process,
):
    tasks = {**waiting_tasks("vc_first"), **{f"{k}2": v for k, v in waiting_tasks("vc_second").items()}}
    assert sorted(tasks) == sorted(
        ["wait", "report__gate", "leastaction_run_outcome", "wait2", "report__gate2", "leastaction_run_outcome2"]
    )
    for name, gate in tasks.items():
        # The worker path: execute() checks once and defers to the same trigger to wait.
        assert (gate.start_from_trigger, gate.deferrable) == (False, True), name
        # The scheduler there never reads start_trigger_args; the sensor and the gate still serialize
        # theirs, so the plugin's pages read their parents, dependencies and condition from the stored DAG.
        has_args = gate.start_trigger_args is not None
        assert has_args is (not name.startswith("leastaction_run_outcome")), name
    [line] = said(fresh_process)
    assert f"Airflow {'.'.join(map(str, airflow_version()))} cannot start a task in the triggerer" in line
    assert "start on a worker, check once and defer to the triggerer" in line


@pytest.mark.skipif(not TRIGGERER_STARTS_TASKS, reason="Airflow before 3.3 never starts a task in the triggerer")
def test_where_airflow_starts_tasks_in_the_triggerer_the_gates_start_there_by_default(fresh_process):
    tasks = waiting_tasks("vc_first")
    for name, gate in tasks.items():
        assert gate.start_from_trigger is True and gate.start_trigger_args is not None, name
    assert said(fresh_process) == []


def test_start_from_trigger_false_is_the_worker_path_on_every_minor(fresh_process):
    sensor = ParentIntervalSensor(
        task_id="wait", parents=[airflow_task("d", "t")], start_from_trigger=False, dag=DAG("vc_worker")
    )
    assert (sensor.start_from_trigger, sensor.start_trigger_args) == (False, None)
    assert said(fresh_process) == []
