"""DAGs for tests/system/test_catalog_outage_cluster.py: a sensor and a gate waiting on a parent owned by
another team, and a plain task whose outcome the listener spools while the catalog is down."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, task

from airflow_leastaction.refs import external_task
from airflow_leastaction.run_conditions import run_condition, success
from airflow_leastaction.sensors import ParentIntervalSensor
from airflow_leastaction.timetables import IntervalCronTimetable

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
DAILY = IntervalCronTimetable("0 0 * * *")
PARENT = external_task("outage_parent", "other-team")

with DAG("outage_sensor", schedule=DAILY, start_date=START, catchup=False):
    wait = ParentIntervalSensor(task_id="wait", parents=[PARENT])

    @task
    def after_sensor():
        return "done"

    wait >> after_sensor()

with DAG("outage_gate", schedule=DAILY, start_date=START, catchup=False):

    @task
    def after_gate():
        return "done"

    run_condition(after_gate(), success(PARENT))

with DAG("outage_plain", schedule=DAILY, start_date=START, catchup=False):

    @task
    def plain():
        return "done"

    plain()
