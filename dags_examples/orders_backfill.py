"""The backfill trio: a parent owned by another team, and two children gated on it interval by interval.

``orders_raw`` belongs to another team's project (``sales-platform``): it publishes each completed day
to the catalog as that team's system would, with ``report_completion``. ``orders_enriched`` waits for
the day of ``orders_raw`` that covers its own; ``orders_daily_report`` waits for ``orders_enriched``.
Re-running a range (a 90-day backfill, upstream first for each day) needs no special mode: each child
slot waits for its parent's slot, and with ``wait_for_new_output`` a re-run child waits for the
re-run parent's new revision instead of consuming the old one again.
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, task

from airflow_leastaction import report_completion
from airflow_leastaction.sensors import ParentIntervalSensor, airflow_task, external_task
from airflow_leastaction.timetables import IntervalCronTimetable

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
DAILY = IntervalCronTimetable("0 0 * * *", timezone="UTC")

with DAG("orders_raw", schedule=DAILY, start_date=START, catchup=False, tags=["leastaction", "backfill"]):

    @task
    def load_orders(data_interval_start=None, run_id=None):
        rows = 1000 + data_interval_start.day  # stands in for the other team's landing job
        report_completion(
            "orders_raw", "sales-platform", data_interval_start, cron="0 0 * * *", rows_written=rows, run_id=run_id
        )
        return rows

    load_orders()


with DAG("orders_enriched", schedule=DAILY, start_date=START, catchup=False, tags=["leastaction", "backfill"]):
    wait_raw = ParentIntervalSensor(
        task_id="wait_for_orders_raw",
        parents=[external_task("orders_raw", "sales-platform")],
        wait_for_new_output=True,
        poke_interval=5,
        timeout=6 * 3600,
    )

    @task
    def enrich(data_interval_start=None):
        return f"enriched orders of {data_interval_start:%Y-%m-%d}"

    wait_raw >> enrich()


with DAG("orders_daily_report", schedule=DAILY, start_date=START, catchup=False, tags=["leastaction", "backfill"]):
    wait_enriched = ParentIntervalSensor(
        task_id="wait_for_orders_enriched",
        parents=[airflow_task("orders_enriched", "enrich")],
        wait_for_new_output=True,
        poke_interval=5,
        timeout=6 * 3600,
    )

    @task
    def build_report(data_interval_start=None):
        return f"report for {data_interval_start:%Y-%m-%d}"

    wait_enriched >> build_report()
