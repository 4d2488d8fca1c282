"""A daily report that needs four country feeds: it runs when all four have landed, or at 06:00 Rome time
with at least three, saying which one it ran without, and runs once more when the late feed lands.

The Italian feed is slow on purpose (``COUNTRY_REPORT_LATE_SECONDS``, 20 by default): the report is
admitted *degraded* at its deadline (in a backfill of past days the deadline has already passed, so as
soon as three feeds are in), its gate records ``land_it`` MISSING, and when ``land_it`` lands the run is
cleared and the report re-runs once with all four, through Airflow's API (the connection
``leastaction_airflow_api_default``; without it, ``airflow-leastaction stale`` lists the report as having
run without ``land_it``).
"""

from __future__ import annotations

import datetime as dt
import os
import time

from airflow.sdk import DAG, task

from airflow_leastaction.rows import report_rows_written
from airflow_leastaction.run_conditions import Fallback, run_condition, success
from airflow_leastaction.timetables import IntervalCronTimetable

START = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
COUNTRIES = ("fr", "de", "es", "it")
LATE = "it"

with DAG(
    "country_report",
    schedule=IntervalCronTimetable("0 0 * * *", "Europe/Rome"),
    start_date=START,
    catchup=False,
    max_active_runs=3,
    tags=["leastaction"],
):
    feeds = []
    for country in COUNTRIES:

        @task(task_id=f"land_{country}")
        def land(country: str = country, data_interval_start=None):
            if country == LATE:
                time.sleep(float(os.environ.get("COUNTRY_REPORT_LATE_SECONDS", "20")))
            report_rows_written(100)
            return f"{country} orders of {data_interval_start:%Y-%m-%d}"

        feeds.append(land())

    @task
    def report(data_interval_start=None):
        return f"the country report of {data_interval_start:%Y-%m-%d}"

    run_condition(
        report(),
        *(success(f) for f in feeds),
        fallback=Fallback(at="06:00", require=3, on_late_arrival="rerun"),
    )
