"""A DAG for the OpenLineage tests (ids start with ``lin_``): a sensor admits ``work`` on a catalog parent
outside Airflow."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, task

from airflow_leastaction.sensors import ParentIntervalSensor, external_task
from airflow_leastaction.timetables import IntervalCronTimetable

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)

with DAG("lin_gated", schedule=IntervalCronTimetable("0 0 * * *"), start_date=START, catchup=False, tags=["test"]):
    wait = ParentIntervalSensor(task_id="wait", parents=[external_task("lin_raw", "other-team")], poke_interval=0.2)

    @task
    def work():
        return "done"

    wait >> work()
