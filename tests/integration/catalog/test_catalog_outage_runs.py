"""Real runs through a catalog outage: a sensor and a run-condition gate start while the catalog's
PostgreSQL server (the test's own) is stopped; they wait, neither admitting nor failing, and the run
succeeds once the server is back and the parent has finished. What the listener spooled meanwhile is
replayed into the catalog."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from sqlalchemy import select

from airflow_leastaction import report_completion
from airflow_leastaction.catalog.engine import dispose_all, get_engine
from airflow_leastaction.catalog.outcomes import SPOOL_SUFFIX
from airflow_leastaction.catalog.schema import gate_decision, task, task_run
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.triggers.poller import CatalogPoller
from tests.helpers.conditions import run_acting_when
from tests.helpers.own_postgres import OwnPostgres

pytestmark = pytest.mark.postgres

SLOT = dt.datetime(2026, 11, 12, tzinfo=dt.UTC)


@pytest.fixture
def server():
    pg = OwnPostgres()
    pg.start()
    yield pg
    dispose_all()
    pg.remove()


def test_a_run_waits_through_a_catalog_outage_and_succeeds_when_it_returns(
    server, use_catalog, run_dag, tmp_path, monkeypatch
):
    spool = tmp_path / "spool"
    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(spool))
    url = server.create_database("la_outage_run")
    get_engine(url, migrate=True)
    use_catalog(url)
    server.stop()

    def sensor_polls_fail() -> bool:
        # The sensor waits in its trigger (no catalog), the listener spooled the outcomes it could not write.
        failing = any(p.url == url and p.ticks >= 3 for p in list(CatalogPoller._shared.values()))
        return failing and any(spool.glob(f"pending-*{SPOOL_SUFFIX}"))

    def recover():
        server.start()
        report_completion("pis_raw", "other-team", SLOT, cron="0 0 * * *", store=CatalogStore(get_engine(url)))

    run = run_acting_when(lambda: run_dag("pis_outage", SLOT), sensor_polls_fail, recover)
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == "success", states

    store = CatalogStore(get_engine(url))
    with store.engine.connect() as conn:
        decided = {
            (r.task_id, r.result)
            for r in conn.execute(
                select(gate_decision.c.task_id, gate_decision.c.result).where(gate_decision.c.dag_id == "pis_outage")
            )
        }
        finished = {
            r.name: r.state
            for r in conn.execute(
                select(task.c.name, task_run.c.state)
                .join(task_run, task_run.c.task_pk == task.c.id)
                .where(task_run.c.slot == SLOT, task.c.dag_id == "pis_outage")
            )
        }
    assert decided == {("wait", "SATISFIED"), ("load__gate", "SATISFIED")}
    assert {finished.get(f"pis_outage.{t}") for t in ("wait", "extract", "load")} == {"success"}
    assert not any(spool.glob(f"*{SPOOL_SUFFIX}"))  # every spooled outcome was replayed


def test_relaxed_gates_admit_unrecorded_while_the_catalog_is_down(server, use_catalog, run_dag, tmp_path, monkeypatch):
    """``[leastaction] gates = warn`` is the emergency switch: with the catalog down the sensor and the
    gate admit (after the gate's same-run upstreams finished) and nothing is recorded for them."""
    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("AIRFLOW__LEASTACTION__GATES", "warn")
    url = server.create_database("la_outage_warn")
    get_engine(url, migrate=True)
    use_catalog(url)
    server.stop()
    run = run_dag("pis_outage", SLOT)
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == "success", states
    server.start()
    with CatalogStore(get_engine(url)).engine.connect() as conn:
        assert conn.execute(select(gate_decision.c.id)).all() == []


def test_a_stopped_server_is_an_outage_and_schema_errors_and_bugs_are_not(server, sqlite_url):
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    from airflow_leastaction.catalog.engine import is_outage

    engine = get_engine(sqlite_url)
    with pytest.raises(OperationalError) as missing_table, engine.connect() as conn:
        conn.execute(text("SELECT * FROM la_no_such_table"))
    assert not is_outage(missing_table.value)
    assert not is_outage(ValueError("a bug"))
    stopped = get_engine(server.create_database("la_outage_kinds"))
    server.stop()
    try:
        with pytest.raises(OperationalError) as refused, stopped.connect():
            pass
        assert is_outage(refused.value)
    finally:
        server.start()


def spooled(spool, task_id: str) -> bool:
    return any(f".{task_id}" in p.read_text() for p in spool.glob(f"pending-*{SPOOL_SUFFIX}"))


def native_decisions(url) -> list[tuple]:
    with CatalogStore(get_engine(url)).engine.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                select(gate_decision.c.task_id, gate_decision.c.dependency, gate_decision.c.result).where(
                    gate_decision.c.dag_id == "rc_native_outage"
                )
            )
        ]


def test_a_native_condition_waits_for_the_catalog_before_its_task_runs(
    server, use_catalog, run_dag, tmp_path, monkeypatch
):
    spool = tmp_path / "spool"
    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(spool))
    monkeypatch.setenv("RC_MARKERS", str(tmp_path / "markers"))
    url = server.create_database("la_outage_native")
    get_engine(url, migrate=True)
    use_catalog(url)
    server.stop()
    ran_during_outage = []

    def recover():
        # The child's start was spooled (the listener runs before pre-execute), so its hook is waiting now.
        time.sleep(1.0)
        ran_during_outage.append((tmp_path / "markers" / "child").exists())
        server.start()

    run = run_acting_when(lambda: run_dag("rc_native_outage", SLOT), lambda: spooled(spool, "child"), recover)
    assert ran_during_outage == [False]  # the task's own code waited for its admission to be recorded
    assert {ti.task_id: ti.state for ti in run.get_task_instances()}["child"] == "success"
    assert native_decisions(url) == [("child", "task:up", "SATISFIED")]


def test_a_native_condition_runs_unrecorded_under_relaxed_gates_while_the_catalog_is_down(
    server, use_catalog, run_dag, tmp_path, monkeypatch
):
    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("AIRFLOW__LEASTACTION__GATES", "warn")
    monkeypatch.setenv("RC_MARKERS", str(tmp_path / "markers"))
    url = server.create_database("la_outage_native_warn")
    get_engine(url, migrate=True)
    use_catalog(url)
    server.stop()
    run = run_dag("rc_native_outage", SLOT)
    assert {ti.task_id: ti.state for ti in run.get_task_instances()}["child"] == "success"
    assert (tmp_path / "markers" / "child").exists()
    server.start()
    assert native_decisions(url) == []
