"""Runs Airflow makes without a logical date, made the way Airflow makes them: the scheduler creating an
asset-triggered run from an asset event, and a manual trigger through the REST API with no logical date.
Each child is gated on a daily parent; it is judged at its run_after, the instant the listener records it at.
"""

from __future__ import annotations

import datetime as dt
import textwrap

import pytest
from sqlalchemy import select

from airflow_leastaction import report_completion
from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.schema import gate_decision, task, task_run
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.refs import airflow_task
from tests.helpers.airflow_cluster import AirflowCluster, fresh_pg_database

pytestmark = pytest.mark.postgres

UTC = dt.UTC
DAGS = textwrap.dedent("""
    import datetime as dt

    from airflow.sdk import DAG, Asset, task

    from airflow_leastaction.sensors import ParentIntervalSensor, external_task

    LANDED = Asset("la_orders_landed")
    PARENT = external_task("la_daily_parent", "other-team")
    START = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)

    with DAG("la_producer", schedule=None, start_date=START, catchup=False):
        @task(outlets=[LANDED])
        def land():
            return "landed"

        land()

    for dag_id, schedule in (("la_asset_child", [LANDED]), ("la_manual_child", None)):
        with DAG(dag_id, schedule=schedule, start_date=START, catchup=False):
            wait = ParentIntervalSensor(task_id="wait", parents=[PARENT], poll_interval=1, timeout=600)

            @task
            def work():
                return "done"

            wait >> work()
""")


@pytest.fixture(scope="module")
def deployment(pg_admin_url, tmp_path_factory):
    airflow_url, drop_airflow = fresh_pg_database(pg_admin_url, "la_e2e_airflow")
    catalog_url, drop_catalog = fresh_pg_database(pg_admin_url, "la_e2e_catalog")
    work = tmp_path_factory.mktemp("no_logical_date")
    dags = work / "dags"
    dags.mkdir()
    (dags / "no_logical_date.py").write_text(DAGS)
    # The scheduler's job schedule stays on: it is what turns asset events into runs. No DAG here has a
    # time-based schedule, so runs come from the tests only.
    cluster = AirflowCluster(dags, sql_alchemy_conn=airflow_url, catalog_url=catalog_url, home=work / "home")
    try:
        with cluster:
            store = CatalogStore(get_engine(catalog_url))
            report_parent_days(store)
            yield cluster, store
    finally:
        drop_airflow()
        drop_catalog()


def report_parent_days(store: CatalogStore) -> None:
    """The daily parent finished yesterday, today and tomorrow (UTC): whatever instant the runs get."""
    today = dt.datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    for days in (-1, 0, 1):
        report_completion(
            "la_daily_parent", "other-team", today + dt.timedelta(days=days), cron="0 0 * * *", store=store
        )


def decisions_of(store: CatalogStore, dag_id: str) -> list[dict]:
    with store.engine.connect() as conn:
        return [dict(r) for r in conn.execute(select(gate_decision).where(gate_decision.c.dag_id == dag_id)).mappings()]


def recorded_slots(store: CatalogStore, dag_id: str, task_id: str) -> list[dt.datetime]:
    identity = airflow_task(dag_id, task_id)
    with store.engine.connect() as conn:
        return list(
            conn.execute(
                select(task_run.c.slot)
                .join(task, task.c.id == task_run.c.task_pk)
                .where(task.c.name == identity.name, task.c.project == identity.project)
            ).scalars()
        )


def assert_judged_at_run_after(store: CatalogStore, run: dict) -> None:
    assert run["state"] == "success" and run["logical_date"] is None and run["data_interval_start"] is None
    run_after = dt.datetime.fromisoformat(run["run_after"].replace("Z", "+00:00"))
    [decision] = decisions_of(store, run["dag_id"])
    assert decision["result"] == "SATISFIED"
    assert decision["upstream_slot"] == run_after.replace(hour=0, minute=0, second=0, microsecond=0)
    assert f"(judged at {run_after.isoformat()}, the run's run_after (it has no logical date))" in decision["reason"]
    assert recorded_slots(store, run["dag_id"], "work") == [run_after]


def test_an_asset_triggered_run_is_judged_at_its_run_after(deployment):
    cluster, store = deployment
    for dag_id in ("la_producer", "la_asset_child"):
        cluster.unpause(dag_id)
    producer = cluster.trigger("la_producer")
    cluster.wait_for_run("la_producer", producer["dag_run_id"])
    [run] = cluster.wait_for_runs("la_asset_child", 1, timeout=300)
    assert run["run_type"] == "asset_triggered"
    assert_judged_at_run_after(store, run)


def test_a_manual_run_without_a_logical_date_is_judged_at_its_run_after(deployment):
    cluster, store = deployment
    cluster.unpause("la_manual_child")
    created = cluster.trigger("la_manual_child")  # the REST API's logical_date: null
    run = cluster.wait_for_run("la_manual_child", created["dag_run_id"], timeout=300)
    assert run["run_type"] == "manual"
    assert_judged_at_run_after(store, run)
