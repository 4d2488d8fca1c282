"""The Airflow plugin: registers the catalog listener, the timetable and the UI."""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from airflow_leastaction.listeners import catalog as catalog_listener
from airflow_leastaction.listeners import dag_runs as dag_run_listener
from airflow_leastaction.listeners import run_end as run_end_listener
from airflow_leastaction.timetables.interval import IntervalCronTimetable
from airflow_leastaction.www.asgi import LeastActionApp
from airflow_leastaction.www.views import EXTERNAL_VIEWS, URL_PREFIX


class LeastActionPlugin(AirflowPlugin):
    name = "leastaction"
    listeners = [catalog_listener, run_end_listener, dag_run_listener]
    timetables = [IntervalCronTimetable]
    fastapi_apps = [{"app": LeastActionApp(), "url_prefix": URL_PREFIX, "name": "LeastAction"}]
    external_views = EXTERNAL_VIEWS
