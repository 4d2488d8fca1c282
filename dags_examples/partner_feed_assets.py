"""Catalog → assets: a partner's system reports each hour it lands to the catalog (``airflow-leastaction
catalog report partner_feed --project partners --slot ...``); ``catalog_asset`` publishes every completed
hour as an asset event with the hour as its partition key, and a repaired hour as a new event.

``partner_feed_hourly`` runs once per hour key, ``partner_feed_daily`` once all 24 hours of a day are in,
both with Airflow's own partition mappers; the DAG file is refused when it is parsed if a mapper cannot
read the keys the catalog writes.

Partition-aware DAGs need Airflow 3.2, the daily roll-up (``RollupMapper``) 3.3: on an older Airflow the
file defines the DAGs that Airflow can run and logs one line naming those it leaves out.
"""

from __future__ import annotations

import datetime as dt
import logging

from airflow.sdk import DAG, task

from airflow_leastaction.assets import catalog_asset, partitioned_on_catalog
from airflow_leastaction.refs import external_task
from airflow_leastaction.version_compat import PARTITION_ROLLUPS, PARTITIONED_ASSETS, airflow_version

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
PARTNER_FEED = catalog_asset(external_task("partner_feed", "partners"))

if PARTITIONED_ASSETS:
    from airflow.sdk import StartOfHourMapper

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

if PARTITION_ROLLUPS:
    from airflow.sdk import DayWindow, RollupMapper, StartOfDayMapper

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
else:
    logging.getLogger(__name__).warning(
        "Airflow %s: %s not defined: %s",
        ".".join(map(str, airflow_version())),
        "partner_feed_daily" if PARTITIONED_ASSETS else "partner_feed_hourly and partner_feed_daily",
        "the daily roll-up needs RollupMapper (Airflow 3.3)"
        + ("" if PARTITIONED_ASSETS else ", the hourly DAG partition-aware DAGs (Airflow 3.2)"),
    )
