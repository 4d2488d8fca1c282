"""Consumers of a partner's feed, a catalog task published as an asset: one on the asset as Airflow
schedules on any asset, one partition-aware (a run per hour key)."""

from __future__ import annotations

from airflow.sdk import DAG, StartOfHourMapper, task

from airflow_leastaction.assets import catalog_asset, partitioned_on_catalog
from airflow_leastaction.refs import external_task

FEED = catalog_asset(external_task("feed", "partners"))

with DAG("feed_plain", schedule=[FEED], catchup=False):

    @task
    def seen(triggering_asset_events=None):
        return [event.extra["payload"]["revision"] for event in triggering_asset_events[FEED]]

    seen()

with DAG(
    "feed_hourly", schedule=partitioned_on_catalog(FEED, default_partition_mapper=StartOfHourMapper()), catchup=False
):

    @task
    def hour(dag_run=None):
        return dag_run.partition_key

    hour()
