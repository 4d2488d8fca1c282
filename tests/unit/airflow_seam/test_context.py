"""The Airflow-side helpers the sensor and the run-condition gates share."""

import datetime as dt
from types import SimpleNamespace

from airflow_leastaction.airflow_seam.context import (
    attempt_key,
    context_interval_end,
    context_slot,
    resolve_poll_interval,
)
from airflow_leastaction.catalog.audit import AttemptKey

UTC = dt.UTC


def test_the_poll_interval_is_the_tasks_own_else_the_deployments(monkeypatch):
    monkeypatch.setenv("AIRFLOW__LEASTACTION__POLL_INTERVAL", "7")
    assert resolve_poll_interval(None) == 7.0
    assert resolve_poll_interval(2) == 2.0


def test_an_attempt_is_keyed_by_run_map_index_and_try_number():
    ti = SimpleNamespace(run_id="r1", map_index=None, try_number=2)
    assert attempt_key({"ti": ti}, "sales", "report") == AttemptKey("sales", "report", "r1", -1, 2)


def test_a_run_is_judged_at_its_data_interval_and_ends_with_it():
    start, end = dt.datetime(2026, 1, 1, tzinfo=UTC), dt.datetime(2026, 1, 2, tzinfo=UTC)
    run = SimpleNamespace(data_interval_start=start, data_interval_end=end, logical_date=None, run_after=end)
    assert context_slot({"dag_run": run}).instant == start
    assert context_interval_end({"dag_run": run}) == end
    assert context_slot({"dag_run": None}) is None and context_interval_end({}) is None
