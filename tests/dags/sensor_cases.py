"""DAGs for the ParentIntervalSensor integration tests (ids start with ``pis_``)."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, Asset, task

from airflow_leastaction.sensors import ParentIntervalSensor, external_task
from airflow_leastaction.timetables import IntervalCronTimetable

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
DAILY = IntervalCronTimetable("0 0 * * *")
RAW = external_task("pis_raw", "other-team")


def gated(dag_id: str, schedule=DAILY, **sensor_kwargs):
    with DAG(dag_id, schedule=schedule, start_date=START, catchup=False, tags=["test"]) as dag:
        sensor_kwargs.setdefault("parents", [RAW])
        wait = ParentIntervalSensor(task_id="wait", poke_interval=0.2, **sensor_kwargs)

        @task
        def work():
            return "done"

        wait >> work()
    return dag


gated("pis_fail_fast", on_parent_failure="fail", timeout=30)
gated("pis_timeout", timeout=2)
gated("pis_poke", deferrable=False, mode="poke", timeout=30)
gated("pis_no_parents", parents=[])
gated("pis_unknown_conn", catalog_conn_id="no_such_catalog")
gated("pis_no_interval", schedule=None)
# A daily aggregate of an hourly parent: every hourly slot of the day must be done.
gated("pis_whole_day", parents=[external_task("pis_hourly", "other-team", coverage="interval")], timeout=3)
# Asset-triggered runs have no logical date and no data interval, only a run_after.
gated("pis_on_asset", schedule=[Asset("pis_orders_landed")])


with DAG("pis_sensor_then_gate", schedule=DAILY, start_date=START, catchup=False, tags=["test"]):
    from airflow_leastaction.run_conditions import run_condition, success

    wait_raw = ParentIntervalSensor(task_id="wait", parents=[RAW], poke_interval=0.2)

    @task
    def extract():
        return "extracted"

    @task
    def load():
        return "loaded"

    run_condition(load(), success(wait_raw), success(extract()), poll_interval=0.2)


# A sensor and a gate that wait through a catalog outage (tests/integration/catalog/test_catalog_outage_runs.py).
with DAG("pis_outage", schedule=DAILY, start_date=START, catchup=False, tags=["test"]):
    from airflow_leastaction.run_conditions import run_condition, success

    outage_wait = ParentIntervalSensor(task_id="wait", parents=[RAW], poke_interval=0.2, poll_interval=0.2)

    @task
    def extract():
        return "extracted"

    @task
    def load():
        return "loaded"

    run_condition(load(), success(outage_wait), success(extract()), poll_interval=0.2)


# One task gated by two sensors, each waiting on its own parent (tests/integration/sensors/
# test_parent_interval_runs.py::TestOneTaskGatedTwice): each declares the task's parents as the union of
# what both wait on.
with DAG("pis_two_sensors", schedule=DAILY, start_date=START, catchup=False, tags=["test"]):
    wait_raw = ParentIntervalSensor(task_id="wait_raw", parents=[RAW], poke_interval=0.2, timeout=60)
    wait_rates = ParentIntervalSensor(
        task_id="wait_rates", parents=[external_task("pis_rates", "other-team")], poke_interval=0.2, timeout=60
    )

    @task
    def report():
        return "reported"

    [wait_raw, wait_rates] >> report()
