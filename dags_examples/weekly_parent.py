"""A weekly parent and a daily child: the child asks "have you finished the week that covers my day?"."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, task

from airflow_leastaction.sensors import ParentIntervalSensor, airflow_task
from airflow_leastaction.timetables import IntervalCronTimetable

START = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)  # a Monday

with DAG(
    "fx_rates_weekly",
    schedule=IntervalCronTimetable("0 0 * * 1"),
    start_date=START,
    catchup=False,
    tags=["leastaction"],
):

    @task
    def load_rates(data_interval_start=None):
        return f"rates for the week of {data_interval_start:%Y-%m-%d}"

    load_rates()


with DAG(
    "pricing_daily", schedule=IntervalCronTimetable("0 0 * * *"), start_date=START, catchup=False, tags=["leastaction"]
):
    wait_rates = ParentIntervalSensor(
        task_id="wait_for_weekly_rates",
        parents=[airflow_task("fx_rates_weekly", "load_rates")],
        poke_interval=5,
        timeout=3600,
    )

    @task
    def price(data_interval_start=None):
        return f"prices of {data_interval_start:%Y-%m-%d}"

    wait_rates >> price()
