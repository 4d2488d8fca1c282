"""Retries are not failures: an attempt Airflow will retry is recorded ``up_for_retry``, and cross-DAG
consumers that look during the retry window wait for the retry instead of alerting, skipping or failing.

Real Airflow processes (``airflow dags test``) on a real SQLite catalog. ``lx_retry_parent`` fails its
first try and waits a day for its retry; the consumers start inside that window, each judges and defers,
then the test lets the retry delay elapse (it moves the failed try's end back by the delay, in Airflow's
own database) and the retry succeeds.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import time

import pytest

from airflow_leastaction.refs import airflow_task
from airflow_leastaction.version_compat import TASK_RETRY_POLICIES

DAY = dt.datetime(2026, 11, 21, tzinfo=dt.UTC)
PARENT = airflow_task("lx_retry_parent", "load")
CONSUMERS = {"lx_retry_alert": "alert__gate", "lx_retry_child": "child__gate", "lx_retry_sensor": "wait_for_load"}
#: Only a guard against a hang: every wait below ends on a condition.
HANG_GUARD = 600


@pytest.fixture
def catalog(sqlite_url, use_catalog, tmp_path, monkeypatch, airflow_db):
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.store import CatalogStore

    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("LX_MARKERS", str(tmp_path / "markers"))
    get_engine(sqlite_url, migrate=True)
    use_catalog(sqlite_url)
    return CatalogStore(get_engine(sqlite_url))


class Processes:
    def __init__(self, logs):
        self.logs, self.running = logs, {}

    def start(self, dag_id: str):
        with open(self.logs / f"{dag_id}.log", "w") as log:  # the child keeps its own copy of the file
            self.running[dag_id] = subprocess.Popen(
                [sys.executable, "-m", "airflow", "dags", "test", dag_id, DAY.isoformat()],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=dict(os.environ),
            )

    def wait_until(self, condition, what: str):
        give_up = time.monotonic() + HANG_GUARD
        while not condition():
            ended = {d: p.returncode for d, p in self.running.items() if p.poll() is not None}
            assert not ended, f"{ended} ended while waiting until {what}; logs in {self.logs}"
            assert time.monotonic() < give_up, f"never happened: {what}; logs in {self.logs}"
            time.sleep(0.2)

    def finish(self) -> dict[str, int]:
        return {d: p.wait(timeout=HANG_GUARD) for d, p in self.running.items()}

    def stop(self):
        # Only after a failure: a parent still waiting out its day-long retry delay ignores SIGTERM.
        for p in self.running.values():
            if p.poll() is None:
                p.kill()
                p.wait()


@pytest.fixture
def processes(tmp_path):
    procs = Processes(tmp_path)
    yield procs
    procs.stop()


def slot(store):
    _, slots = store.snapshot([(PARENT, DAY)])
    return [(s.state, s.output_revision) for s in slots]


def slot_attempt(store):
    from sqlalchemy import select

    from airflow_leastaction.catalog.schema import task_run

    parent_pk = store.get_task(PARENT)["id"]
    with store.engine.connect() as conn:
        return conn.execute(select(task_run.c.state, task_run.c.attempt).where(task_run.c.task_pk == parent_pk)).all()


def task_instances(dag_id: str) -> dict:
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        return {
            ti.task_id: (str(getattr(ti.state, "value", ti.state)), ti.next_method, ti.trigger_id)
            for ti in session.scalars(select(TaskInstance).where(TaskInstance.dag_id == dag_id))
        }


def has_deferred(dag_id: str, task_id: str) -> bool:
    """The waiting task judged once and deferred: it is waiting in the triggerer."""
    _, next_method, trigger_id = task_instances(dag_id).get(task_id, (None, None, None))
    return next_method is not None or trigger_id is not None


def let_the_retry_delay_elapse():
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        ti = session.scalars(
            select(TaskInstance).where(TaskInstance.dag_id == "lx_retry_parent", TaskInstance.task_id == "load")
        ).one()
        assert str(getattr(ti.state, "value", ti.state)) == "up_for_retry"
        ti.end_date -= dt.timedelta(days=2)


def test_consumers_that_look_during_the_retry_window_wait_and_are_admitted_after_the_retry_succeeds(
    catalog, processes, tmp_path
):
    markers = tmp_path / "markers"
    processes.start("lx_retry_parent")
    processes.wait_until(lambda: slot(catalog) not in ([], [("running", 0)]), "the first try ends")
    assert [tuple(r) for r in slot_attempt(catalog)] == [("up_for_retry", 1)]
    for dag_id, waiting in CONSUMERS.items():  # one at a time: each judges inside the retry window
        processes.start(dag_id)
        processes.wait_until(lambda d=dag_id, w=waiting: has_deferred(d, w), f"{dag_id}.{waiting} waits")
    assert slot(catalog) == [("up_for_retry", 0)]  # still inside the window while all of them looked
    let_the_retry_delay_elapse()

    assert processes.finish() == {"lx_retry_parent": 0, **{d: 0 for d in CONSUMERS}}
    assert [tuple(r) for r in slot_attempt(catalog)] == [("success", 2)]
    assert task_instances("lx_retry_alert")["alert"][0] == "skipped"  # the FAILURE alert never ran
    assert not (markers / "alert").exists()
    assert task_instances("lx_retry_child")["child"][0] == "success"  # the SUCCESS dependency admitted
    assert task_instances("lx_retry_sensor")["wait_for_load"][0] == "success"  # not failed early
    assert (markers / "child").exists() and (markers / "after_sensor").exists()


@pytest.mark.parametrize(
    "dag_id",
    [
        "lx_fail_fast",  # AirflowFailException
        pytest.param(
            "lx_retry_policy_fails",
            marks=pytest.mark.skipif(not TASK_RETRY_POLICIES, reason="retry policies are an Airflow 3.3 feature"),
        ),
    ],
)
def test_an_attempt_airflow_will_not_retry_is_failed_even_with_retries_left(catalog, run_dag, dag_id):
    # The task gives up (or its retry policy does) at its first try although three retries remain: Airflow's
    # own decision, not the try count, says whether an attempt is final.
    run = run_dag(dag_id, DAY)
    assert {ti.task_id: str(getattr(ti.state, "value", ti.state)) for ti in run.get_task_instances()} == {
        "load": "failed"
    }
    identity = airflow_task(dag_id, "load")
    _, slots = catalog.snapshot([(identity, DAY)])
    assert [(s.state, s.output_revision) for s in slots] == [("failed", 0)]
    assert catalog.get_task(identity)["state"] == "failed"
