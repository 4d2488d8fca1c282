"""The Airflow plugin: registers the catalog and asset listeners, the timetable and the UI."""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from airflow_leastaction.listeners import assets as asset_listener
from airflow_leastaction.listeners import catalog as catalog_listener
from airflow_leastaction.listeners import dag_runs as dag_run_listener
from airflow_leastaction.listeners import run_end as run_end_listener
from airflow_leastaction.timetables.interval import IntervalCronTimetable
from airflow_leastaction.version_compat import ASSET_EVENT_LISTENER, say_once
from airflow_leastaction.www.asgi import LeastActionApp
from airflow_leastaction.www.views import EXTERNAL_VIEWS, URL_PREFIX


def _listeners() -> list:
    found = [catalog_listener, run_end_listener, dag_run_listener]
    if ASSET_EVENT_LISTENER:
        found.append(asset_listener)
    else:
        say_once("asset events are not recorded in the catalog: Airflow calls no listener with the event before 3.2")
    return found


class LeastActionPlugin(AirflowPlugin):
    name = "leastaction"
    listeners = _listeners()
    timetables = [IntervalCronTimetable]
    fastapi_apps = [{"app": LeastActionApp(), "url_prefix": URL_PREFIX, "name": "LeastAction"}]
    external_views = EXTERNAL_VIEWS
