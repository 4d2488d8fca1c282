"""A consumer of the partner's feed as Airflow schedules on any asset (no partitions), next to the example
``partner_feed_assets.py`` the test copies beside it: the same bridge, declared the same way."""

from __future__ import annotations

from airflow.sdk import DAG, task

from airflow_leastaction.assets import catalog_asset
from airflow_leastaction.refs import external_task

PARTNER_FEED = catalog_asset(external_task("partner_feed", "partners"))

with DAG("partner_feed_plain", schedule=[PARTNER_FEED], catchup=False):

    @task
    def seen(triggering_asset_events=None):
        return [event.extra["payload"]["revision"] for event in triggering_asset_events[PARTNER_FEED]]

    seen()
