"""After ``pip install``, Airflow's own commands see the provider and its plugin."""

from __future__ import annotations

import json
import subprocess
import sys


def airflow_json(*args: str):
    out = subprocess.run(
        [sys.executable, "-m", "airflow", *args, "-o", "json"], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout[out.stdout.index("[") :])


def test_airflow_providers_list_shows_the_provider():
    providers = {p["package_name"]: p for p in airflow_json("providers", "list")}
    assert providers["airflow-leastaction"]["version"]


def test_airflow_plugins_shows_the_listener_the_timetable_and_the_ui():
    plugin = next(p for p in airflow_json("plugins") if p["name"] == "leastaction")
    assert plugin["listeners"] == [
        "airflow_leastaction.listeners.catalog",
        "airflow_leastaction.listeners.run_end",
        "airflow_leastaction.listeners.dag_runs",
    ]
    assert plugin["timetables"] == ["airflow_leastaction.timetables.interval.IntervalCronTimetable"]
    assert [app["url_prefix"] for app in plugin["fastapi_apps"]] == ["/leastaction"]


def test_the_provider_declares_its_connection_type_and_config():
    from airflow_leastaction import get_provider_info

    info = get_provider_info()
    assert info["connection-types"][0]["connection-type"] == "leastaction_catalog"
    assert set(info["config"]["leastaction"]["options"]) >= {"catalog_conn_id", "project", "poll_interval", "gates"}
