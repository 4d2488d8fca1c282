"""A sensor routed to a triggerer queue, in a real DAG run (``dag.test()``): the task instance and the
trigger Airflow is asked to create carry the queue chosen when the DAG was parsed; a change of
``[leastaction] trigger_queues`` while it waits moves it nowhere."""

from __future__ import annotations

import datetime as dt

import pytest
from airflow.sdk.execution_time import task_runner
from sqlalchemy import select

from airflow_leastaction import report_completion
from airflow_leastaction.catalog.schema import gate_decision
from airflow_leastaction.gating.trigger_queues import choose_queue
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.version_compat import TRIGGERER_QUEUES

pytestmark = pytest.mark.skipif(not TRIGGERER_QUEUES, reason="triggerer queues need Airflow 3.2")

UTC = dt.UTC
RAW = TaskIdentity("rq_orders_raw", "sales-platform")
QUEUES = ["eu", "us", "apac"]


def day(n: int) -> dt.datetime:
    return dt.datetime(2026, 11, n, tzinfo=UTC)


@pytest.fixture
def deferrals(monkeypatch):
    """Each deferral's message to Airflow (what the trigger row is made of), from Airflow's own ``_defer_task``;
    ``then`` runs once the task is deferred, before its trigger runs."""
    sent, after = [], []
    real = task_runner._defer_task

    def deferring(defer, ti, log):
        msg, state = real(defer, ti, log)
        sent.append(msg)
        for step in after:
            step()
        return msg, state

    monkeypatch.setattr(task_runner, "_defer_task", deferring)
    return sent, after


DAG_FILE = """
import datetime as dt
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.sensors import ParentIntervalSensor
from airflow_leastaction.timetables import IntervalCronTimetable

with DAG("rq_enriched", schedule=IntervalCronTimetable("0 0 * * *"),
         start_date=dt.datetime(2026, 11, 1, tzinfo=dt.UTC), catchup=False):
    wait = ParentIntervalSensor(
        task_id="wait", parents=[TaskIdentity("rq_orders_raw", "sales-platform")], poll_interval=0.2, timeout=120
    )
    wait >> EmptyOperator(task_id="enrich")
"""


def parsed(tmp_path, monkeypatch):
    """The DAG parsed from its file as the DAG processor does (with the deployment's settings of now) and
    serialized to Airflow's database, which ``dag.test()`` runs from."""
    from importlib import import_module

    from airflow import settings
    from airflow.models.dagbundle import DagBundleModel
    from airflow.utils.session import create_session

    from airflow_leastaction.version_compat import dag_bag_class

    monkeypatch.setenv("AIRFLOW__CORE__MIN_SERIALIZED_DAG_UPDATE_INTERVAL", "0")
    monkeypatch.setattr(settings, "MIN_SERIALIZED_DAG_UPDATE_INTERVAL", 0, raising=False)
    bag_class = dag_bag_class()
    with create_session() as session:
        if session.get(DagBundleModel, "la-trigger-queues") is None:
            session.add(DagBundleModel(name="la-trigger-queues"))
    folder = tmp_path / "dags"
    folder.mkdir()
    (folder / "rq_enriched.py").write_text(DAG_FILE)
    bag = bag_class(str(folder))
    assert not bag.import_errors, bag.import_errors
    import_module(bag_class.__module__).sync_bag_to_db(bag, "la-trigger-queues", None)
    return bag.get_dag("rq_enriched")


def test_a_routed_sensor_defers_to_its_queue_and_a_settings_change_meanwhile_moves_it_nowhere(
    store, catalog_url, use_catalog, airflow_db, monkeypatch, tmp_path, deferrals
):
    use_catalog(catalog_url)
    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("AIRFLOW__LEASTACTION__TRIGGER_QUEUES", ",".join(QUEUES))
    monkeypatch.setenv("AIRFLOW__TRIGGERER__QUEUES_ENABLED", "True")
    dag = parsed(tmp_path, monkeypatch)
    chosen = choose_queue([RAW], QUEUES)
    moved_to = next(q for q in ["elsewhere_1", "elsewhere_2"] if q != chosen)
    sent, after = deferrals

    def while_it_waits():
        # The deployment lists other queues now, and the parent lands: the waiting sensor must stay put.
        monkeypatch.setenv("AIRFLOW__LEASTACTION__TRIGGER_QUEUES", moved_to)
        report_completion("rq_orders_raw", "sales-platform", day(5), cron="0 0 * * *", rows_written=1, store=store)

    after.append(while_it_waits)
    run = dag.test(logical_date=day(5))

    assert run.state == "success"
    assert [m.queue for m in sent] == [chosen]  # the trigger row's queue: fixed when the task deferred
    assert "queue" not in sent[0].trigger_kwargs  # the trigger itself never names or reads one
    ti = next(t for t in run.get_task_instances() if t.task_id == "wait")
    assert ti.queue == chosen
    with store.engine.connect() as conn:
        results = conn.execute(select(gate_decision.c.result).where(gate_decision.c.dag_id == "rq_enriched")).scalars()
        assert list(results) == ["SATISFIED"]  # released once


def test_a_gate_whose_trigger_no_triggerer_of_its_queue_took_is_reported_unserved_only_once_one_would_have(
    store, catalog_url, use_catalog, airflow_db, monkeypatch, tmp_path
):
    """Airflow's rows of a real run, turned back into a gate deferred to queue ``nowhere``: its trigger is
    reported unserved once it is older than ``[triggerer] triggerer_health_check_threshold`` with no
    triggerer, and not while it is new (a live triggerer of the queue takes a trigger within a loop or two)
    nor once a triggerer has it."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.trigger import Trigger
    from airflow.utils.session import create_session

    from airflow_leastaction.www import airflow_state

    use_catalog(catalog_url)
    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(tmp_path / "spool"))
    # An hour: the trigger made "now" stays new however long this test takes; the old one is two hours old.
    monkeypatch.setenv("AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD", "3600")
    dag = parsed(tmp_path, monkeypatch)
    report_completion("rq_orders_raw", "sales-platform", day(6), cron="0 0 * * *", rows_written=1, store=store)
    run = dag.test(logical_date=day(6))
    assert run.state == "success"
    key = ("rq_enriched", "wait", run.run_id, -1)
    now = dt.datetime.now(UTC)

    def deferred_with(created: dt.datetime, triggerer_id: int | None) -> str | None:
        with create_session() as session:
            trigger = Trigger(classpath="airflow.triggers.testing.SuccessTrigger", kwargs={}, created_date=created)
            trigger.queue = "nowhere"
            trigger.triggerer_id = triggerer_id
            session.add(trigger)
            session.flush()
            ti = session.scalars(
                select(TaskInstance).where(
                    TaskInstance.dag_id == key[0], TaskInstance.task_id == key[1], TaskInstance.run_id == key[2]
                )
            ).one()
            ti.state, ti.trigger_id = "deferred", trigger.id
        return airflow_state.task_instances([key])[key].unserved_queue

    assert deferred_with(now - dt.timedelta(hours=2), None) == "nowhere"
    assert deferred_with(now - dt.timedelta(hours=2), 4242) is None  # a triggerer has it
    assert deferred_with(now, None) is None  # just deferred: no triggerer would have taken it yet
