"""An external report cannot move an Airflow task out of its DAG.

A task of a DAG is readable only by users who may read that DAG; a task that belongs to no DAG (one an
external system reports) is readable by everyone. So the catalog never lets a report turn a DAG's task
into an external one, an outcome recorded without the DAG object at hand still names the DAG, and when
two reporters of one external task disagree on its schedule the latest report's schedule is the task's.
Real SQLite and PostgreSQL catalogs; the listener's events are built as the listener builds them.
"""

from __future__ import annotations

import datetime as dt
import logging

import pytest
import sqlalchemy as sa
from airflow.sdk import DAG

from airflow_leastaction import report_completion
from airflow_leastaction.catalog.outcomes import apply
from airflow_leastaction.catalog.schema import task, task_run
from airflow_leastaction.cli import main as cli
from airflow_leastaction.exceptions import InvalidReportError, TaskOwnedByDagError
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.listeners.catalog import task_event
from airflow_leastaction.refs import airflow_task

UTC = dt.UTC
MONDAY = dt.datetime(2026, 11, 23, tzinfo=UTC)
LOAD = airflow_task("orders", "load")


def _Dag(dag_id: str, cron: str) -> DAG:
    return DAG(dag_id, schedule=cron, start_date=MONDAY - dt.timedelta(days=30))


def listener_event(state: str, slot: dt.datetime, *, dag, minute: int = 0, run_id: str = "scheduled__1"):
    event = task_event(state, "orders", "load", slot, dag=dag, run_id=run_id, attempt=1, run_type="scheduled")
    event.at = slot + dt.timedelta(days=1, minutes=minute)
    return event


def row(store, identity=LOAD) -> dict:
    found = store.get_task(identity)
    return dict(found) if found is not None else None


def history(store) -> list[tuple]:
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.select(task_run.c.slot, task_run.c.state, task_run.c.run_id))]


@pytest.fixture
def loaded(store):
    """``orders.load`` has run once: its row belongs to DAG ``orders``."""
    apply(store, listener_event("success", MONDAY, dag=_Dag("orders", "0 0 * * *")))
    before = row(store), history(store)
    assert before[0]["dag_id"] == "orders"
    return before


class TestAReportNamingADagsTask:
    def test_the_command_refuses_it_in_one_line_and_changes_nothing(
        self, store, catalog_url, use_catalog, loaded, capsys
    ):
        use_catalog(catalog_url)
        argv = ["catalog", "report", LOAD.name, "--project", LOAD.project, "--slot", "2026-11-24T00:00:00+00:00"]
        assert cli([*argv, "--cron", "0 * * * *"]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and "DAG 'orders'" in err[0]
        assert (row(store), history(store)) == loaded

    def test_the_python_api_refuses_it_too(self, store, loaded):
        with pytest.raises(TaskOwnedByDagError, match="orders"):
            report_completion(LOAD.name, LOAD.project, MONDAY + dt.timedelta(days=1), store=store)
        assert (row(store), history(store)) == loaded

    def test_the_dags_own_listener_still_updates_its_schedule(self, store, loaded):
        apply(store, listener_event("running", MONDAY + dt.timedelta(days=1), dag=_Dag("orders", "0 6 * * *")))
        assert (row(store)["cron"], row(store)["dag_id"]) == ("0 6 * * *", "orders")

    def test_a_report_cannot_claim_this_deployments_task_before_it_first_runs(self, store):
        with pytest.raises(TaskOwnedByDagError, match="'reports'"):
            report_completion(airflow_task("reports", "build").name, "airflow", MONDAY, store=store)
        assert row(store, airflow_task("reports", "build")) is None


class TestAnOutcomeRecordedWithoutItsDag:
    def test_the_first_outcome_without_the_dag_object_still_names_the_dag(self, store):
        # A state set in the UI: the API server's task instance carries no DAG object.
        apply(store, listener_event("success", MONDAY, dag=None))
        first = row(store)
        assert (first["dag_id"], first["task_id"], first["source"]) == ("orders", "load", "airflow")
        apply(store, listener_event("running", MONDAY + dt.timedelta(days=1), dag=_Dag("orders", "0 0 * * *")))
        assert (row(store)["cron"], row(store)["dag_id"]) == ("0 0 * * *", "orders")

    def test_an_outcome_without_the_dag_object_keeps_the_schedule_the_catalog_has(self, store, loaded):
        apply(store, listener_event("failed", MONDAY + dt.timedelta(days=1), dag=None))
        assert (row(store)["cron"], row(store)["dag_id"], row(store)["state"]) == ("0 0 * * *", "orders", "failed")


class TestTwoReportersDisagreeOnTheSchedule:
    def test_the_latest_reports_schedule_is_the_tasks_and_the_change_is_logged(self, store, caplog):
        raw = TaskIdentity("orders_raw", "sales-platform")
        report_completion(raw.name, raw.project, MONDAY, cron="0 0 * * *", store=store)
        with caplog.at_level(logging.WARNING):
            report_completion(raw.name, raw.project, MONDAY, cron="0 * * * *", run_id="other", store=store)
        assert row(store, raw)["cron"] == "0 * * * *"
        assert "orders_raw" in caplog.text and "'0 0 * * *'" in caplog.text and "'0 * * * *'" in caplog.text


class TestNamesLongerThanTheCatalogHolds:
    @pytest.mark.parametrize(
        ("field", "kwargs"),
        [
            ("task name", {"name": "n" * 251}),
            ("task project", {"project": "p" * 251}),
            ("task account", {"account": "a" * 251}),
            ("run_id", {"run_id": "r" * 251}),
        ],
    )
    def test_are_refused_before_anything_is_written(self, store, field, kwargs):
        args = {"name": "orders_raw", "project": "sales-platform", **kwargs}
        with pytest.raises(InvalidReportError, match=field):
            report_completion(args.pop("name"), args.pop("project"), MONDAY, store=store, **args)
        with store.engine.connect() as conn:
            assert conn.execute(sa.select(sa.func.count()).select_from(task)).scalar() == 0
