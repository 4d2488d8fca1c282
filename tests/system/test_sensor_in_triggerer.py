"""``ParentIntervalSensor`` started and ended in the triggerer, on the production shape (scheduler,
dag-processor, triggerer, API server, LocalExecutor, PostgreSQL): the sensor's task instance never goes
to a worker, its decisions and their consumption are in the catalog, a failed parent fails it from the
triggerer, and the worker path (``start_from_trigger=False``) still works.

The parent's task holds until the test drops a marker file, so every child sensor is already waiting
when the parent completes.
"""

from __future__ import annotations

import datetime as dt
import textwrap
from pathlib import Path

import pytest
from sqlalchemy import select

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.schema import consumption, gate_decision
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.refs import airflow_task
from tests.helpers.airflow_cluster import AirflowCluster, fresh_pg_database

pytestmark = pytest.mark.postgres

DAY = "2026-11-16T00:00:00Z"
SLOT = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)
DAGS = textwrap.dedent("""
    import datetime as dt
    import os
    import time
    from pathlib import Path

    from airflow.sdk import DAG, task

    from airflow_leastaction.sensors import ParentIntervalSensor, airflow_task
    from airflow_leastaction.timetables import IntervalCronTimetable

    START = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    DAILY = IntervalCronTimetable("0 0 * * *", timezone="UTC")
    MARKERS = Path(os.environ["LA_MARKERS"])

    with DAG("la_parent", schedule=DAILY, start_date=START, catchup=False):
        @task
        def produce():
            while not (MARKERS / "go").exists():
                time.sleep(0.2)
            return "produced"

        produce()

    with DAG("la_broken_parent", schedule=DAILY, start_date=START, catchup=False):
        @task(retries=0)
        def broken():
            raise RuntimeError("the parent breaks")

        broken()

    def child(dag_id, **sensor_kwargs):
        with DAG(dag_id, schedule=DAILY, start_date=START, catchup=False) as dag:
            wait = ParentIntervalSensor(
                task_id="wait", parents=[airflow_task("la_parent", "produce")], poll_interval=1, timeout=900,
                **sensor_kwargs,
            )

            @task
            def work():
                return "done"

            wait >> work()
        return dag

    # Templated: rendered by the triggerer, as Airflow renders a task started there.
    child("la_child", child_interval="{{ data_interval_start }}")
    # On a worker, Airflow 3.3's stale-executor-event race can fail the attempt whose trigger fired: one
    # retry, as the operations guide says for this path.
    child("la_child_worker", start_from_trigger=False, retries=1, retry_delay=dt.timedelta(seconds=3))

    with DAG("la_child_alone", schedule=DAILY, start_date=START, catchup=False):
        ParentIntervalSensor(task_id="wait", parents=[airflow_task("la_parent", "produce")], poll_interval=1)

    # A parent that never reports: the sensor's timeout ends the wait.
    for dag_id, retries in (("la_child_timeout", 0), ("la_child_timeout_retries", 2)):
        with DAG(dag_id, schedule=DAILY, start_date=START, catchup=False):
            ParentIntervalSensor(
                task_id="wait", parents=[airflow_task("la_never", "reports")], poll_interval=1, timeout=3,
                retries=retries,
            )

    with DAG("la_child_fail", schedule=DAILY, start_date=START, catchup=False):
        ParentIntervalSensor(
            task_id="wait", parents=[airflow_task("la_broken_parent", "broken")], poll_interval=1,
            on_parent_failure="fail", retries=0,
        )
""")
CHILDREN = ("la_child", "la_child_worker", "la_child_alone")


@pytest.fixture(scope="module")
def deployment(pg_admin_url, tmp_path_factory):
    airflow_url, drop_airflow = fresh_pg_database(pg_admin_url, "la_e2e_airflow")
    catalog_url, drop_catalog = fresh_pg_database(pg_admin_url, "la_e2e_catalog")
    work = tmp_path_factory.mktemp("sensor_in_triggerer")
    dags, markers = work / "dags", work / "markers"
    dags.mkdir()
    markers.mkdir()
    (dags / "sensor_in_triggerer.py").write_text(DAGS)
    env = {"AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False", "LA_MARKERS": str(markers)}
    cluster = AirflowCluster(dags, sql_alchemy_conn=airflow_url, catalog_url=catalog_url, home=work / "home", env=env)
    try:
        with cluster:
            yield cluster, CatalogStore(get_engine(catalog_url)), markers
    finally:
        drop_airflow()
        drop_catalog()


def task_instance(cluster: AirflowCluster, dag_id: str, run_id: str, task_id: str) -> dict:
    return cluster.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}")


def wait_for_state(cluster: AirflowCluster, dag_id: str, run_id: str, task_id: str, state: str) -> dict:
    return cluster.wait_until(
        lambda: (ti := task_instance(cluster, dag_id, run_id, task_id))["state"] == state and ti,
        300,
        f"{dag_id}.{task_id} to be {state}",
    )


def never_on_a_worker(ti: dict) -> bool:
    """What Airflow records of a worker: the host and process that ran the task, and its queueing."""
    return not ti["hostname"] and ti["pid"] is None and ti["queued_when"] is None


def rows(store: CatalogStore, table, dag_id: str) -> list[dict]:
    with store.engine.connect() as conn:
        return [dict(r) for r in conn.execute(select(table).where(table.c.dag_id == dag_id)).mappings()]


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def released(deployment):
    """Every child waiting on the parent's day, then the parent completing it; the finished runs."""
    cluster, store, markers = deployment
    for dag_id in ("la_parent", *CHILDREN):
        cluster.unpause(dag_id)
    runs = {dag_id: cluster.trigger(dag_id, DAY)["dag_run_id"] for dag_id in CHILDREN}
    for dag_id, run_id in runs.items():
        wait_for_state(cluster, dag_id, run_id, "wait", "deferred")
    parent = cluster.trigger("la_parent", DAY)["dag_run_id"]
    wait_for_state(cluster, "la_parent", parent, "produce", "running")
    (markers / "go").touch()
    finished = {dag_id: cluster.wait_for_run(dag_id, run_id, timeout=300) for dag_id, run_id in runs.items()}
    finished["la_parent"] = cluster.wait_for_run("la_parent", parent, timeout=300)
    produced = task_instance(cluster, "la_parent", parent, "produce")
    for dag_id, run_id in runs.items():
        sensor = task_instance(cluster, dag_id, run_id, "wait")
        # The release latency the issue asks about, for the report; never asserted (timing is not a test).
        print(f"{dag_id}: sensor ended {at(sensor['end_date']) - at(produced['end_date'])} after the parent task")
        if dag_id != "la_child_alone":
            work = task_instance(cluster, dag_id, run_id, "work")
            print(f"{dag_id}: downstream started {at(work['start_date']) - at(produced['end_date'])} after it")
    return cluster, store, runs, finished


def test_the_sensor_starts_and_ends_in_the_triggerer_without_a_worker(released):
    cluster, _store, runs, finished = released
    assert finished["la_child"]["state"] == "success", cluster.describe()
    for dag_id in ("la_child", "la_child_alone"):
        sensor = task_instance(cluster, dag_id, runs[dag_id], "wait")
        assert sensor["state"] == "success"
        assert never_on_a_worker(sensor), sensor
    # The same field on the worker path: a worker ran the sensor.
    assert not never_on_a_worker(task_instance(cluster, "la_child_worker", runs["la_child_worker"], "wait"))


def test_decisions_recorded_from_the_triggerer_are_consumed_by_the_downstream_task(released):
    cluster, store, runs, _finished = released
    sensor = task_instance(cluster, "la_child", runs["la_child"], "wait")
    [decision] = rows(store, gate_decision, "la_child")
    assert decision["result"] == "SATISFIED"
    assert (decision["task_id"], decision["run_id"], decision["attempt"]) == (
        "wait",
        runs["la_child"],
        sensor["try_number"],
    )
    assert decision["dependency"] == airflow_task("la_parent", "produce").key
    assert decision["upstream_slot"] == SLOT and decision["downstream_slot"] == SLOT
    # Judged at the rendered child_interval template.
    assert "the child_interval argument" in decision["reason"]
    [consumed] = rows(store, consumption, "la_child")
    assert (consumed["task_id"], consumed["decision_id"]) == ("work", decision["id"])
    assert task_instance(cluster, "la_child", runs["la_child"], "work")["state"] == "success"


def test_a_sensor_that_gates_nothing_consumes_its_own_decisions_from_the_triggerer(released):
    _cluster, store, runs, _finished = released
    [decision] = rows(store, gate_decision, "la_child_alone")
    assert decision["result"] == "SATISFIED" and decision["run_id"] == runs["la_child_alone"]
    [consumed] = rows(store, consumption, "la_child_alone")
    assert (consumed["task_id"], consumed["attempt"], consumed["decision_id"]) == ("wait", 1, decision["id"])


def test_the_worker_path_still_admits_and_records(released):
    cluster, store, runs, finished = released
    assert finished["la_child_worker"]["state"] == "success"
    sensor = task_instance(cluster, "la_child_worker", runs["la_child_worker"], "wait")
    decisions = rows(store, gate_decision, "la_child_worker")  # one per attempt that judged
    assert {d["result"] for d in decisions} == {"SATISFIED"}
    assert all("the run's data interval start" in d["reason"] for d in decisions)
    [consumed] = rows(store, consumption, "la_child_worker")
    [latest] = [d for d in decisions if d["attempt"] == sensor["try_number"]]
    assert (consumed["task_id"], consumed["decision_id"]) == ("work", latest["id"])


def test_the_timeout_fails_the_sensor_from_the_triggerer_and_is_never_retried(deployment):
    cluster, _store, _markers = deployment
    runs = {}
    for dag_id in ("la_child_timeout", "la_child_timeout_retries"):
        cluster.unpause(dag_id)
        runs[dag_id] = cluster.trigger(dag_id, DAY)["dag_run_id"]
    for dag_id, run_id in runs.items():
        assert cluster.wait_for_run(dag_id, run_id)["state"] == "failed"
    ended_there = task_instance(cluster, "la_child_timeout", runs["la_child_timeout"], "wait")
    assert ended_there["state"] == "failed" and never_on_a_worker(ended_there), ended_there
    assert "parents not satisfied in time: la_never.reports" in trigger_logs(cluster, "la_child_timeout")
    # With retries the triggerer cannot fail it without a retry: a worker does, as Airflow's sensor timeout.
    handed = task_instance(cluster, "la_child_timeout_retries", runs["la_child_timeout_retries"], "wait")
    assert (handed["state"], handed["try_number"]) == ("failed", 1)
    assert not never_on_a_worker(handed), handed


def trigger_logs(cluster: AirflowCluster, dag_id: str) -> str:
    """What the triggers of ``dag_id``'s tasks logged (Airflow keeps it beside each task's log)."""
    return "".join(
        p.read_text(errors="replace")
        for p in sorted((Path(cluster.home) / "logs" / f"dag_id={dag_id}").rglob("*"))
        if p.is_file()
    )


def test_a_failed_parent_fails_the_sensor_from_the_triggerer_when_told_to(deployment):
    cluster, store, _markers = deployment
    for dag_id in ("la_broken_parent", "la_child_fail"):
        cluster.unpause(dag_id)
    parent = cluster.trigger("la_broken_parent", DAY)["dag_run_id"]
    assert cluster.wait_for_run("la_broken_parent", parent)["state"] == "failed"
    child = cluster.trigger("la_child_fail", DAY)["dag_run_id"]
    assert cluster.wait_for_run("la_child_fail", child)["state"] == "failed"
    sensor = task_instance(cluster, "la_child_fail", child, "wait")
    assert sensor["state"] == "failed" and never_on_a_worker(sensor), sensor
    assert rows(store, gate_decision, "la_child_fail") == []
    assert "parent failed: la_broken_parent.broken: slot 2026-11-16 (day) is failed" in trigger_logs(
        cluster, "la_child_fail"
    )
