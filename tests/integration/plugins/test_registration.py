"""After ``pip install``, Airflow's own commands see the provider and its plugin."""

from __future__ import annotations

import inspect
import json
import pkgutil
import subprocess
import sys
from importlib import import_module

import airflow_leastaction.triggers
from airflow_leastaction.version_compat import ASSET_EVENT_LISTENER
from tests.helpers.paths import ROOT


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
    # Airflow 3.1 has no on_asset_event_emitted hook: there the asset listener is not registered.
    assert plugin["listeners"] == [
        "airflow_leastaction.listeners.catalog",
        "airflow_leastaction.listeners.run_end",
        "airflow_leastaction.listeners.dag_runs",
        *(["airflow_leastaction.listeners.assets"] if ASSET_EVENT_LISTENER else []),
    ]
    assert plugin["timetables"] == ["airflow_leastaction.timetables.interval.IntervalCronTimetable"]
    assert [app["url_prefix"] for app in plugin["fastapi_apps"]] == ["/leastaction"]


def test_the_provider_declares_its_connection_type_and_config():
    from airflow_leastaction import get_provider_info

    info = get_provider_info()
    assert info["connection-types"][0]["connection-type"] == "leastaction_catalog"
    assert set(info["config"]["leastaction"]["options"]) >= {"catalog_conn_id", "project", "poll_interval", "gates"}


def trigger_modules() -> set[str]:
    """Every module of the package that defines a trigger class."""
    from airflow.triggers.base import BaseTrigger

    found = set()
    for info in pkgutil.iter_modules(airflow_leastaction.triggers.__path__, "airflow_leastaction.triggers."):
        module = import_module(info.name)
        if any(
            issubclass(obj, BaseTrigger) and obj.__module__ == info.name
            for obj in vars(module).values()
            if inspect.isclass(obj)
        ):
            found.add(info.name)
    return found


def test_airflow_lists_every_trigger_of_the_provider_and_the_reference_documents_each():
    modules = trigger_modules()
    assert "airflow_leastaction.triggers.held_work" in modules  # the discovery finds what it should
    listed = {t["class"] for t in airflow_json("providers", "triggers") if t["package_name"] == "airflow-leastaction"}
    assert listed == modules
    reference = (ROOT / "docs" / "reference" / "sensors.md").read_text()
    assert {m for m in modules if f"::: {m}\n" not in reference} == set()


def test_airflow_config_list_shows_every_option_the_provider_reads():
    # An option the provider reads but does not declare is missing from `airflow config list`: an operator
    # cannot see it, nor its default.
    from airflow_leastaction.airflow_seam.api import DEFAULT_API_CONN_ID
    from airflow_leastaction.version_compat import AIRFLOW_V_3_2_PLUS

    # Airflow 3.1 shows the values without being asked (and knows no --show-values).
    show_values = ["--show-values"] if AIRFLOW_V_3_2_PLUS else []
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "airflow",
            "config",
            "list",
            "--section",
            "leastaction",
            "--include-descriptions",
            *show_values,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"airflow_api_conn_id = {DEFAULT_API_CONN_ID}" in out
    assert "Connection to Airflow's public REST API" in out
