"""A run-condition trigger keeps naming the task it gates once Airflow hands it its task instance.

Airflow's ``BaseTrigger`` sets ``task_id`` to the task instance's own (the gate, ``report__gate``) when the
triggerer gives a trigger its task instance; the gated task (``report``) is what the trigger reads the
consumption of, re-serializes, and re-runs on a late arrival.
"""

from __future__ import annotations

from types import SimpleNamespace

from airflow_leastaction.triggers.run_condition import RunConditionTrigger


def trigger() -> RunConditionTrigger:
    return RunConditionTrigger(
        dag_id="country_report",
        run_id=None,
        task_id="report",
        dependencies=[{"upstream": "land_fr", "type": "SUCCESS"}],
        condition="ALL",
        count=None,
        slot_requests={},
        slot=None,
        upstream=None,
        waiting=None,
        end_from_trigger=True,
        fallback={"after": 60.0, "require": 1, "on_late_arrival": "rerun"},
    )


def test_the_gated_task_survives_airflow_handing_the_trigger_its_task_instance():
    started = trigger()
    started.task_instance = SimpleNamespace(task_id="report__gate")
    assert started.serialize()[1]["task_id"] == "report"
    assert started.spec().task_id == "report"


def test_its_kwargs_round_trip():
    path, kwargs = trigger().serialize()
    assert path == "airflow_leastaction.triggers.run_condition.RunConditionTrigger"
    assert RunConditionTrigger(**kwargs).serialize() == (path, kwargs)
