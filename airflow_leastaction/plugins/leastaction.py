"""The Airflow plugin: registers the catalog listener, the timetable and the UI."""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from airflow_leastaction.listeners import catalog as catalog_listener
from airflow_leastaction.timetables.interval import IntervalCronTimetable


class LeastActionPlugin(AirflowPlugin):
    name = "leastaction"
    listeners = [catalog_listener]
    timetables = [IntervalCronTimetable]
