"""The run-condition and run-outcome triggers round trip through their constructors."""

from __future__ import annotations

from types import SimpleNamespace

from airflow_leastaction.triggers.run_condition import RunConditionTrigger
from airflow_leastaction.triggers.run_outcome import RunOutcomeTrigger
from tests.helpers.run_conditions import day
from tests.helpers.triggers import OTHER, gate_trigger


class TestSerialization:
    def test_the_gate_trigger_round_trips_through_its_constructor(self):
        trigger = gate_trigger(condition="N", count=1, consumed={OTHER.key: [day(1).isoformat(), 2]})
        path, kwargs = trigger.serialize()
        assert path == "airflow_leastaction.triggers.run_condition.RunConditionTrigger"
        assert RunConditionTrigger(**kwargs).serialize() == (path, kwargs)

    def test_the_gate_trigger_started_in_the_triggerer_round_trips_without_the_run_values(self):
        trigger = gate_trigger(run_id=None, slot=None, upstream=None, waiting=None, active=False, end_from_trigger=True)
        path, kwargs = trigger.serialize()
        assert (kwargs["end_from_trigger"], kwargs["active"], kwargs["run_id"], kwargs["slot"]) == (
            True,
            False,
            None,
            None,
        )
        assert RunConditionTrigger(**kwargs).serialize() == (path, kwargs)

    def test_a_gate_trigger_built_without_active_or_end_from_trigger_is_an_active_one_deferred_by_a_worker(self):
        _, kwargs = gate_trigger().serialize()
        del kwargs["active"], kwargs["end_from_trigger"]
        trigger = RunConditionTrigger(**kwargs)
        assert (trigger.active, trigger.end_from_trigger) == (True, False)

    def test_the_run_outcome_trigger_round_trips_through_its_constructor(self):
        path, kwargs = RunOutcomeTrigger("rc_t", "r1", "leastaction_run_outcome", 0.5).serialize()
        assert RunOutcomeTrigger(**kwargs).serialize() == (path, kwargs)

    def test_a_gate_trigger_with_a_fallback_round_trips_and_one_without_carries_no_fallback(self):
        fallback = {"time": "06:00:00", "require": 3, "on_late_arrival": "rerun"}
        path, kwargs = gate_trigger(fallback=fallback, timezone="Europe/Rome").serialize()
        assert (kwargs["fallback"], kwargs["timezone"]) == (fallback, "Europe/Rome")
        assert RunConditionTrigger(**kwargs).serialize() == (path, kwargs)
        assert "fallback" not in gate_trigger().serialize()[1]

    def test_a_gate_trigger_with_a_fallback_carries_when_its_run_started_and_reads_one_without_it(self):
        fallback = {"time": "06:00:00", "require": 3, "on_late_arrival": None}
        path, kwargs = gate_trigger(fallback=fallback, run_started=day(2).isoformat()).serialize()
        assert kwargs["run_started"] == day(2).isoformat()
        assert RunConditionTrigger(**kwargs).serialize() == (path, kwargs)
        del kwargs["run_started"]  # a run whose start is not known: the rule for runs started in time
        assert RunConditionTrigger(**kwargs).run_started is None
        assert "run_started" not in gate_trigger().serialize()[1]


class TestGatedTask:
    """Airflow's ``BaseTrigger`` sets ``task_id`` to the task instance's own (the gate, ``child__gate``) when
    the triggerer hands a trigger its task instance; the gated task (``child``) is what the trigger reads
    the consumption of, serializes, and re-runs on a late arrival."""

    def test_the_gated_task_survives_airflow_handing_the_trigger_its_task_instance(self):
        started = gate_trigger(end_from_trigger=True)
        started.task_instance = SimpleNamespace(task_id="child__gate")
        assert started.serialize()[1]["task_id"] == "child"
        assert started.spec().task_id == "child"
