"""Catalog → assets: a partner's system reports each hour it lands to the catalog (``airflow-leastaction
catalog report partner_feed --project partners --slot ...``); ``catalog_asset`` publishes every completed
hour as an asset event with the hour as its partition key, and a repaired hour as a new event.

``partner_feed_hourly`` runs once per hour key, ``partner_feed_daily`` once all 24 hours of a day are in,
both with Airflow's own partition mappers; the DAG file is refused when it is parsed if a mapper cannot
read the keys the catalog writes.
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, DayWindow, RollupMapper, StartOfDayMapper, StartOfHourMapper, task

from airflow_leastaction.assets import catalog_asset, partitioned_on_catalog
from airflow_leastaction.refs import external_task

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
PARTNER_FEED = catalog_asset(external_task("partner_feed", "partners"))

with DAG(
    "partner_feed_hourly",
    schedule=partitioned_on_catalog(PARTNER_FEED, default_partition_mapper=StartOfHourMapper()),
    start_date=START,
    catchup=False,
    tags=["leastaction", "assets", "example"],
):

    @task
    def load_partner_hour(dag_run=None, triggering_asset_events=None):
        revisions = [e.extra["payload"]["revision"] for e in triggering_asset_events[PARTNER_FEED]]
        return f"hour {dag_run.partition_key}: revision {max(revisions)}"

    load_partner_hour()

with DAG(
    "partner_feed_daily",
    schedule=partitioned_on_catalog(
        PARTNER_FEED,
        default_partition_mapper=RollupMapper(upstream_mapper=StartOfDayMapper(), window=DayWindow()),
    ),
    start_date=START,
    catchup=False,
    tags=["leastaction", "assets", "example"],
):

    @task
    def summarise_partner_day(dag_run=None):
        return f"day {dag_run.partition_key}: all 24 hours in"

    summarise_partner_day()
