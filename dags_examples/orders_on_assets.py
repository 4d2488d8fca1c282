"""Assets → catalog: ``orders_landing`` updates the asset ``orders_landed``; every asset event is also a
slot record of ``airflow_asset("orders_landed")`` in the catalog.

``orders_on_landing`` is an ordinary asset-triggered DAG, and gates its enrichment on a catalog parent:
the week of FX rates that covers the run, from ``fx_rates_weekly`` (``weekly_parent.py``).
``orders_landed_daily`` depends on the asset through the catalog instead, hour by hour: its day runs once
every hourly landing of that day is in.

Airflow records asset events in the catalog through a listener hook that Airflow 3.2 added, with the
partitioned landing (``CronPartitionTimetable``): on Airflow 3.1 the file defines no DAG and logs why.
"""

from __future__ import annotations

import datetime as dt
import logging

from airflow.sdk import DAG, Asset, task

from airflow_leastaction.assets import airflow_asset, asset_schedule
from airflow_leastaction.sensors import ParentIntervalSensor, airflow_task
from airflow_leastaction.timetables import IntervalCronTimetable
from airflow_leastaction.version_compat import ASSET_EVENT_LISTENER, PARTITIONED_ASSETS, airflow_version

START = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
ORDERS_LANDED = Asset("orders_landed", uri="file:///data/orders/landed", extra=asset_schedule("0 * * * *"))

if ASSET_EVENT_LISTENER and PARTITIONED_ASSETS:
    from airflow.sdk import CronPartitionTimetable

    with DAG(
        "orders_landing",
        schedule=CronPartitionTimetable("0 * * * *", timezone="UTC"),
        start_date=START,
        catchup=False,
        tags=["leastaction", "assets", "example"],
    ):

        @task(outlets=[ORDERS_LANDED])
        def land_orders(outlet_events=None):
            outlet_events[ORDERS_LANDED].extra = {"rows_written": 1200}

        land_orders()

    with DAG("orders_on_landing", schedule=[ORDERS_LANDED], catchup=False, tags=["leastaction", "assets", "example"]):
        wait_rates = ParentIntervalSensor(
            task_id="wait_for_weekly_rates", parents=[airflow_task("fx_rates_weekly", "load_rates")], timeout=3600
        )

        @task
        def enrich_orders(triggering_asset_events=None):
            return f"{len(triggering_asset_events[ORDERS_LANDED])} landing(s) enriched"

        wait_rates >> enrich_orders()

    with DAG(
        "orders_landed_daily",
        schedule=IntervalCronTimetable("0 0 * * *"),
        start_date=START,
        catchup=False,
        tags=["leastaction", "assets", "example"],
    ):
        whole_day = ParentIntervalSensor(
            task_id="wait_for_every_landing", parents=[airflow_asset(ORDERS_LANDED, coverage="interval")], timeout=7200
        )

        @task
        def orders_of_the_day(data_interval_start=None):
            return f"orders of {data_interval_start:%Y-%m-%d}"

        whole_day >> orders_of_the_day()
else:
    logging.getLogger(__name__).warning(
        "Airflow %s: orders_landing, orders_on_landing and orders_landed_daily not defined: asset events reach "
        "the catalog through the on_asset_event_emitted listener hook and the landing is partitioned "
        "(CronPartitionTimetable), both Airflow 3.2",
        ".".join(map(str, airflow_version())),
    )
