"""A gate without a deadline of its own warns against its DAG's ``DeadlineAlert``, with the alert's
callback, on a real catalog: the gate declared in a real DAG, the run's watch made from a task context
as Airflow hands it to the gate (its run, map index, logical date and start), the look a gate takes.

Airflow's ``dag.test()`` cannot run a DAG that has a deadline alert (it reads the alerts back as ids), so
the run is the context alone here; the gates' own deadlines are run through ``dag.test()`` in
``test_deadline_warning_runs.py``."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG
from airflow.sdk.definitions.deadline import AsyncCallback, DeadlineAlert, DeadlineReference, SyncCallback
from sqlalchemy import select

from airflow_leastaction.airflow_seam.deadline_watch import warn_sync
from airflow_leastaction.catalog.schema import deadline_warning
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.refs import airflow_task
from airflow_leastaction.run_conditions import run_condition, success
from tests.helpers import deadline_warnings as dw

UTC = dt.UTC
H = dt.timedelta(hours=1)
MIN = dt.timedelta(minutes=1)
FEED = TaskIdentity("dwa_feed", "feeds")
START = dt.datetime(2026, 11, 1, tzinfo=UTC)


def gate_of(reference, callback=None, deadline_callback=None):
    alert = DeadlineAlert(reference=reference, interval=6 * H, callback=callback or AsyncCallback(dw.tell))
    with DAG("dwa_report", schedule=None, start_date=START, deadline=alert):
        return run_condition(
            EmptyOperator(task_id="report"), success(FEED), max_wait=8 * H, deadline_callback=deadline_callback
        )


def context(run_id: str, slot: dt.datetime, logical_date: dt.datetime, started: dt.datetime) -> dict:
    """What a gate reads of Airflow's task context for its warning."""
    run = SimpleNamespace(data_interval_start=slot, logical_date=logical_date, start_date=started)
    return {
        "run_id": run_id,
        "dag_run": run,
        "ti": SimpleNamespace(map_index=-1),
    }


@pytest.fixture
def late(store, tmp_path, monkeypatch):
    """The usual history (the feed takes 3 h, the report 2 h) and today's feed running late: the report
    is expected after 06:00. Returns (slot, now)."""
    monkeypatch.setenv("RC_MARKERS", str(tmp_path))
    monkeypatch.delenv("AIRFLOW_CONN_LEASTACTION_AIRFLOW_API_DEFAULT", raising=False)
    now = dw.whole_minute(dt.datetime.now(UTC))
    slot = now - 4 * H - 30 * MIN
    dw.history(store, FEED, airflow_task("dwa_report", "report"), slot, feed_done=H, feed_takes=3 * H,
               report_takes=2 * H)  # fmt: skip
    store.record_running(FEED, slot, meta=dw.FEED_META, at=now - 5 * MIN)
    return slot, now


def warned(store) -> dict:
    with store.engine.connect() as conn:
        return dict(conn.execute(select(deadline_warning)).mappings().one())


def test_the_logical_date_alert_warns_at_its_own_time_with_its_callback(store, late):
    slot, now = late
    gate = gate_of(DeadlineReference.DAGRUN_LOGICAL_DATE)
    logical = slot + 10 * MIN  # Airflow's logical date need not be the slot
    watch = gate._watch(context("manual__1", slot, logical, slot))
    warn_sync(watch, store, now)
    row = warned(store)
    assert (row["dag_id"], row["task_id"], row["deadline"], row["state"]) == (
        "dwa_report",
        "report__gate",
        logical + 6 * H,
        "warned",
    )
    (told,) = dw.calls()
    assert (told["kind"], told["warning"]["deadline"]) == ("async", (logical + 6 * H).isoformat())


def test_the_queued_at_alert_is_measured_from_the_runs_start_when_airflows_api_cannot_say(store, late):
    slot, now = late
    gate = gate_of(DeadlineReference.DAGRUN_QUEUED_AT, deadline_callback=SyncCallback(dw.tell_now))
    started = slot + 20 * MIN
    warn_sync(gate._watch(context("manual__2", slot, slot, started)), store, now)
    assert warned(store)["deadline"] == started + 6 * H
    (told,) = dw.calls()
    assert told["kind"] == "sync"  # the gate's own callback, in place of the alert's


def test_a_fixed_alert_already_passed_warns_nobody(store, late):
    slot, now = late
    gate = gate_of(DeadlineReference.FIXED_DATETIME(now - 7 * H))
    warn_sync(gate._watch(context("manual__3", slot, slot, slot)), store, now)
    with store.engine.connect() as conn:
        assert conn.execute(select(deadline_warning)).all() == []
    assert dw.calls() == []
