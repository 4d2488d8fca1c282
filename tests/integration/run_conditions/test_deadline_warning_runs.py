"""Early warnings on real DAG runs (``dag.test()``) against real catalogs: a report due six hours after its
slot, whose feed outside the DAG is late or on time.

Time is the test's: each run's slot is put hours before now, so the deadline is hours ahead whatever the
machine's speed, and the history written says when the feed usually lands (an hour after its slot) and
what each takes (the feed three hours, the report two). The feed lands on a condition, never after a
sleep: once the warning is in the catalog, or, when none is expected, once the gate waits deferred (it
has looked by then: a gate looks before it defers)."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest
from sqlalchemy import event, select
from sqlalchemy.engine import Engine

from airflow_leastaction.catalog.external import report_completion
from airflow_leastaction.catalog.schema import deadline_warning
from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.refs import airflow_task
from tests.helpers import deadline_warnings as dw
from tests.helpers.run_conditions import states

UTC = dt.UTC
H = dt.timedelta(hours=1)
MIN = dt.timedelta(minutes=1)
FEED = TaskIdentity("dw_feed", "feeds")


@pytest.fixture
def catalog(rc_catalog_any):
    return rc_catalog_any


def prepare(store, dag_id: str, at: dt.timedelta) -> tuple[dt.datetime, dt.datetime]:
    """History for ``dag_id``'s report and the feed, and today's slot ``at`` before now: (slot, now)."""
    now = dw.whole_minute(dt.datetime.now(UTC))
    slot = now - at
    report = airflow_task(dag_id, "report")
    meta = TaskMeta(dag_id=dag_id, task_id="report")
    dw.history(store, FEED, report, slot, feed_done=H, feed_takes=3 * H, report_takes=2 * H, report_meta=meta)
    return slot, now


def day(catalog, run_dag, dag_id: str, at: dt.timedelta, *, feed_running: bool = True, land_on=None):
    """One run of ``dag_id`` whose slot is ``at`` before now, the feed running since five minutes ago (or
    not started), landing once ``land_on()`` holds (default: once the warning is in the catalog). The
    report must succeed. Returns the slot."""
    slot, now = prepare(catalog, dag_id, at)
    if feed_running:  # it usually takes 3 h
        catalog.record_running(FEED, slot, meta=dw.FEED_META, at=now - 5 * MIN)
    lands = land_when(land_on or warned(catalog, dag_id), catalog, slot)
    run = run_dag(dag_id, slot)
    lands.join()
    assert states(run)["report"] == "success"
    return slot


def rows(store, dag_id: str) -> list[dict]:
    with store.engine.connect() as conn:
        query = select(deadline_warning).where(deadline_warning.c.dag_id == dag_id)
        return [dict(r) for r in conn.execute(query).mappings()]


class land_when(threading.Thread):
    """Report the feed's success once ``condition()`` holds: what happens in the world, on a condition.
    ``join()`` raises what the report raised."""

    def __init__(self, condition, store, slot: dt.datetime):
        super().__init__(daemon=True)
        self.condition, self.store, self.slot, self.error = condition, store, slot, None
        self.start()

    def run(self):
        try:
            while not self.condition():
                time.sleep(0.1)  # polling a condition; the run waits for the feed meanwhile
            report_completion(FEED.name, FEED.project, self.slot, store=self.store)
        except BaseException as exc:  # handed to the test by join()
            self.error = exc

    def join(self, timeout=None):
        super().join(timeout)
        if self.error is not None:
            raise self.error


def warned(store, dag_id: str):
    return lambda: bool(rows(store, dag_id))


@pytest.fixture
def looked():
    """Set once a gate of this process read its warning's state: a look reads it after the expectation,
    so by then the gate has judged whether to warn."""
    seen = threading.Event()

    def statement(conn, cursor, text, *args):
        if "la_deadline_warning" in text:
            seen.set()

    event.listen(Engine, "after_cursor_execute", statement)
    yield seen.is_set
    event.remove(Engine, "after_cursor_execute", statement)


class TestASensor:
    """The sensor defers: its first look is on the worker, the others in its trigger, run inline."""

    def test_a_feed_held_back_warns_before_the_deadline(self, catalog, run_dag, markers):
        slot = day(catalog, run_dag, "dw_sensor", 4 * H + 30 * MIN, feed_running=False)  # not started at 04:30
        (row,) = rows(catalog, "dw_sensor")
        deadline = slot + 6 * H
        assert (row["task_id"], row["deadline"], row["callback_outcome"]) == ("wait_for_feed", deadline, "called")
        assert row["created_at"] < deadline
        (told,) = dw.calls()
        assert (told["kind"], told["kwargs"], told["warning"]["task"]) == ("sync", {"channel": "#data"}, "report")
        assert dt.datetime.fromisoformat(told["warning"]["expected_p90"]) > deadline
        assert told["warning"]["critical_path"] == [str(FEED)]
        chance = told["warning"]["chance_of_missing"]  # the default threshold is one half
        assert 0.5 <= chance <= 1 and f"{int(chance * 100)}% likely to miss" in told["warning"]["message"]

    def test_a_late_feed_warns_and_its_landing_brings_the_report_back_on_time(self, catalog, run_dag, markers):
        slot = day(catalog, run_dag, "dw_sensor", 3 * H)  # the feed is expected ~06:00, the report ~08:00
        (row,) = rows(catalog, "dw_sensor")
        deadline = slot + 6 * H
        assert (row["deadline"], row["state"], row["callback_outcome"]) == (deadline, "cleared", "called")
        assert row["created_at"] < deadline and row["expected_p90"] <= deadline  # what cleared it
        (told,) = dw.calls()
        warning = told["warning"]
        assert (warning["task"], warning["gate"], warning["deadline"]) == (
            "report",
            "wait_for_feed",
            deadline.isoformat(),
        )
        assert dt.datetime.fromisoformat(warning["expected_p90"]) > deadline
        assert warning["critical_path"] == [str(FEED)]
        assert warning["message"].startswith("report (slot ") and f"waiting on {FEED}" in warning["message"]

    def test_a_feed_on_time_warns_nobody(self, catalog, run_dag, markers, looked):
        day(catalog, run_dag, "dw_sensor", 30 * MIN, land_on=looked)  # the feed ~03:25, the report ~05:25
        assert rows(catalog, "dw_sensor") == [] and dw.calls() == []


class TestARunConditionGate:
    """The gates wait on the worker (see the DAGs' module)."""

    def test_a_late_feed_warns_before_the_deadline(self, catalog, run_dag, markers):
        slot = day(catalog, run_dag, "dw_report", 4 * H + 30 * MIN)  # the report is expected ~09:25
        (row,) = rows(catalog, "dw_report")
        deadline = slot + 6 * H
        assert (row["task_id"], row["deadline"], row["state"]) == ("report__gate", deadline, "warned")
        assert row["created_at"] < deadline < row["expected_p90"] and row["callback_outcome"] == "called"
        (told,) = dw.calls()
        warning = told["warning"]
        assert (told["kind"], warning["task"], warning["critical_path"]) == ("async", "report", [str(FEED)])

    def test_a_callback_that_raises_is_recorded_and_the_gate_waits_on(self, catalog, run_dag, markers):
        day(catalog, run_dag, "dw_pager_down", 4 * H + 30 * MIN)
        (row,) = rows(catalog, "dw_pager_down")
        assert row["state"] == "warned"
        assert row["callback_outcome"] == "failed: ConnectionError: pager unreachable"
        assert len(dw.calls()) == 1
