"""One catalog setting: every component resolves the catalog the same way.

``[leastaction] catalog_conn_id`` names the catalog of the listener, sensors, gates, triggers, hook, CLI,
UI and dbt queue alike; an undefined connection is an error naming the setting, and only a deployment
that configures nothing falls back to ``[leastaction] catalog_url`` or the embedded SQLite file.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import subprocess
import sys
from types import SimpleNamespace

import pytest
from sqlalchemy import select

from airflow_leastaction.catalog.engine import aresolve_url, dispose_all, resolve_url
from airflow_leastaction.catalog.schema import gate_decision, task, task_run
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.cli import build_parser
from airflow_leastaction.cli import main as cli_main
from airflow_leastaction.dbt.queue_store import QueueStore
from airflow_leastaction.exceptions import UnknownConnectionError
from airflow_leastaction.hooks.catalog import CatalogHook
from airflow_leastaction.operators.run_condition import RunConditionGate
from airflow_leastaction.sensors.parent_interval import ParentIntervalSensor
from airflow_leastaction.triggers.parent_interval import ParentIntervalTrigger
from airflow_leastaction.www.render import catalog_reads

UTC = dt.UTC


@pytest.fixture
def team_setting(monkeypatch, tmp_path):
    """A deployment whose catalog is ``[leastaction] catalog_conn_id = team_catalog``; the default
    connection id is not defined and AIRFLOW_HOME is empty, so a fallback would show as a new file."""
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("AIRFLOW_CONN_LEASTACTION_CATALOG_DEFAULT", raising=False)
    monkeypatch.setenv("AIRFLOW__LEASTACTION__CATALOG_CONN_ID", "team_catalog")
    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(tmp_path / "spool"))

    def point(url: str | None):
        dispose_all()
        if url is None:
            monkeypatch.delenv("AIRFLOW_CONN_TEAM_CATALOG", raising=False)
        else:
            monkeypatch.setenv(
                "AIRFLOW_CONN_TEAM_CATALOG", json.dumps({"conn_type": "leastaction_catalog", "extra": {"url": url}})
            )

    yield point
    dispose_all()


def _sensor():
    return ParentIntervalSensor(task_id="wait", parents=[])


def _gate():
    return RunConditionGate(task_id="g", gated_task_id="t", dependencies=[])


def _ui_catalog_url():
    # The UI's dependency holds one connection for a request's reads: enter it as FastAPI does, then close it.
    reads = catalog_reads(SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace())))
    try:
        return next(reads).engine.url
    finally:
        reads.close()


# How each component finds its catalog, as its own code does it.
COMPONENTS = {
    "listener": lambda: CatalogStore().engine.url,
    "sensor": lambda: _sensor()._store().engine.url,
    "gate": lambda: CatalogStore(conn_id=_gate().catalog_conn_id).engine.url,
    "sensor trigger": lambda: asyncio.run(
        aresolve_url(
            ParentIntervalTrigger(
                parents=[], child_interval="2026-11-28T00:00:00+00:00", catalog_conn_id=_sensor().catalog_conn_id
            ).catalog_conn_id
        )
    ),
    "hook": lambda: CatalogHook().get_store().engine.url,
    "ui": _ui_catalog_url,
    "dbt queue": lambda: QueueStore(conn_id=None).engine.url,
    "cli": lambda: (
        CatalogStore(
            conn_id=build_parser().parse_args(["catalog", "show", "orders", "--project", "sales"]).conn_id
        ).engine.url
    ),
}


@pytest.mark.parametrize("component", sorted(COMPONENTS))
def test_every_component_resolves_the_catalog_the_setting_names(component, team_setting, catalog_url, tmp_path):
    team_setting(catalog_url)
    resolved = COMPONENTS[component]()
    assert str(resolved) == str(CatalogStore(conn_id="team_catalog").engine.url)
    assert not (tmp_path / "home" / "leastaction").exists()


@pytest.mark.parametrize("component", sorted(COMPONENTS))
def test_an_undefined_catalog_connection_is_an_error_naming_the_setting(component, team_setting, tmp_path):
    team_setting(None)
    with pytest.raises(UnknownConnectionError, match=r"\[leastaction\] catalog_conn_id = 'team_catalog'"):
        COMPONENTS[component]()
    assert not (tmp_path / "home" / "leastaction").exists()


def test_the_default_id_passed_explicitly_does_not_fall_back_while_the_setting_names_another(team_setting):
    team_setting(None)
    with pytest.raises(UnknownConnectionError, match="'leastaction_catalog_default' is not defined"):
        resolve_url("leastaction_catalog_default")


def test_a_deployment_that_configures_nothing_uses_the_embedded_sqlite_file(monkeypatch, tmp_path):
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path))
    monkeypatch.delenv("AIRFLOW_CONN_LEASTACTION_CATALOG_DEFAULT", raising=False)
    monkeypatch.delenv("AIRFLOW__LEASTACTION__CATALOG_CONN_ID", raising=False)
    dispose_all()
    try:
        assert (
            CatalogHook().get_url()
            == _sensor()._store().engine.url.render_as_string()
            == (f"sqlite:///{tmp_path}/leastaction/catalog.db")
        )
    finally:
        dispose_all()


def test_catalog_url_is_read_from_the_config_file(tmp_path):
    """``[leastaction] catalog_url`` in airflow.cfg, not only the environment variable, moves the
    catalog of a deployment without a catalog connection."""
    home = tmp_path / "home"
    home.mkdir()
    target = f"sqlite:///{tmp_path}/shared/catalog.db"
    (home / "airflow.cfg").write_text(f"[leastaction]\ncatalog_url = {target}\n")
    env = {
        k: v
        for k, v in __import__("os").environ.items()
        if not k.startswith(("AIRFLOW__LEASTACTION__", "AIRFLOW_CONN_"))
    }
    env["AIRFLOW_HOME"] = str(home)
    env["AIRFLOW_CONFIG"] = str(home / "airflow.cfg")
    out = subprocess.run(
        [sys.executable, "-c", "from airflow_leastaction.catalog.engine import resolve_url; print(resolve_url())"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip().splitlines()[-1] == target


def test_a_real_run_reads_and_writes_the_catalog_the_setting_names(
    team_setting, catalog_url, run_dag, tmp_path, capsys
):
    """The CLI reports the parent, the sensor and the gate judge it, the listener records the run, all in
    the one catalog the setting names; no second catalog appears under AIRFLOW_HOME."""
    team_setting(catalog_url)
    slot = dt.datetime(2026, 11, 21, tzinfo=UTC)
    assert (
        cli_main(
            [
                "catalog",
                "report",
                "pis_raw",
                "--project",
                "other-team",
                "--slot",
                slot.isoformat(),
                "--cron",
                "0 0 * * *",
            ]
        )
        == 0
    )
    assert run_dag("pis_sensor_then_gate", slot).state == "success"
    store = CatalogStore(conn_id="team_catalog")
    with store.engine.connect() as conn:
        decided = {
            r.task_id
            for r in conn.execute(
                select(gate_decision.c.task_id).where(gate_decision.c.dag_id == "pis_sensor_then_gate")
            )
        }
        ran = {
            r.name
            for r in conn.execute(
                select(task.c.name).join(task_run, task_run.c.task_pk == task.c.id).where(task_run.c.slot == slot)
            )
        }
    assert decided == {"wait", "load__gate"}
    assert {"pis_sensor_then_gate.extract", "pis_sensor_then_gate.load"} <= ran
    assert not (tmp_path / "home" / "leastaction").exists()
