"""Both gate triggers carry a gate's early warning through their kwargs, and a gate without one carries
no warning at all."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_leastaction.airflow_seam.deadline_watch import DeadlineWatch, declared
from airflow_leastaction.catalog.deadline_warnings import WarningKey
from airflow_leastaction.gating.deadline_warning import DeadlineWarning, WarningRule
from airflow_leastaction.refs import airflow_task
from airflow_leastaction.triggers.parent_interval import ParentIntervalTrigger
from airflow_leastaction.triggers.run_condition import RunConditionTrigger
from tests.helpers.run_conditions import day
from tests.helpers.triggers import gate_trigger

CALLBACK = {"kind": "async", "path": "ops.alerts.page", "kwargs": {"team": "data"}}
WARNING = DeadlineWarning("06:00", callback=CALLBACK)
TARGET = airflow_task("sales", "report")


def resolved() -> DeadlineWatch:
    key = WarningKey("sales", "scheduled__1", "report__gate", -1, day(2) + dt.timedelta(hours=5))
    return DeadlineWatch(WARNING, key, TARGET, day(2), "Europe/Paris", "N", 2, day(2) + dt.timedelta(hours=7), "report")


def test_a_worker_hands_its_trigger_the_runs_watch_whole():
    watch = resolved()
    again = DeadlineWatch.from_dict(watch.as_dict())
    assert (again.key, again.target, again.slot, again.mode, again.n, again.cap, again.task) == (
        watch.key,
        TARGET,
        day(2),
        "N",
        2,
        watch.cap,
        "report",
    )
    assert (again.warning, again.warning.callback, again.timezone) == (WARNING, CALLBACK, "Europe/Paris")


def test_the_gate_trigger_round_trips_with_a_warning_and_without_one_keeps_its_form():
    for warning in (declared(WARNING, TARGET, "report", "UTC", "ANY"), resolved().as_dict()):
        path, kwargs = gate_trigger(warning=warning).serialize()
        assert kwargs["warning"] == warning
        assert RunConditionTrigger(**kwargs).serialize() == (path, kwargs)
    assert "warning" not in gate_trigger().serialize()[1]


def test_the_interval_trigger_round_trips_with_a_warning_and_without_one_keeps_its_form():
    parents = [TARGET.as_dict()]
    for warning in (declared(WARNING, TARGET, "report", "UTC"), resolved().as_dict()):
        trigger = ParentIntervalTrigger(parents=parents, child_interval=day(2).isoformat(), warning=warning)
        path, kwargs = trigger.serialize()
        assert ParentIntervalTrigger(**kwargs).serialize() == (path, kwargs)
    plain = ParentIntervalTrigger(parents=parents, child_interval=day(2).isoformat())
    assert "warning" not in plain.serialize()[1]


OPTIONS = {
    "AIRFLOW__LEASTACTION__DEADLINE_WARNING_PROBABILITY": "deadline_warning_probability",
    "AIRFLOW__LEASTACTION__DEADLINE_WARNING_EARLY_PROBABILITY": "deadline_warning_early_probability",
    "AIRFLOW__LEASTACTION__DEADLINE_WARNING_LEAD_MINUTES": "deadline_warning_lead_minutes",
}


def test_the_warning_rule_is_the_deployments_options_with_their_defaults_unset(monkeypatch):
    from airflow_leastaction.airflow_seam.deadline_watch import warning_rule

    for variable in OPTIONS:
        monkeypatch.delenv(variable, raising=False)
    assert warning_rule() == WarningRule(0.5, 0.9, dt.timedelta(minutes=30))
    monkeypatch.setenv("AIRFLOW__LEASTACTION__DEADLINE_WARNING_PROBABILITY", "0.8")
    monkeypatch.setenv("AIRFLOW__LEASTACTION__DEADLINE_WARNING_EARLY_PROBABILITY", "0.95")
    monkeypatch.setenv("AIRFLOW__LEASTACTION__DEADLINE_WARNING_LEAD_MINUTES", "45")
    assert warning_rule() == WarningRule(0.8, 0.95, dt.timedelta(minutes=45))


@pytest.mark.parametrize("variable", sorted(OPTIONS))
@pytest.mark.parametrize("value", ["2", "-1", "soon", ""])
def test_a_warning_option_that_cannot_be_read_is_refused_naming_it(monkeypatch, variable, value):
    from airflow_leastaction.airflow_seam.deadline_watch import warning_rule

    for other in OPTIONS:
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv(variable, value if value != "2" or "LEAD" not in variable else "99999")
    with pytest.raises(ValueError, match=rf"\[leastaction\] {OPTIONS[variable]} must be"):
        warning_rule()
