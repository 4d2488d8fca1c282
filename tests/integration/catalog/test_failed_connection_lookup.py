"""A secrets backend that fails while the catalog connection is looked up is an error, never "no
connection defined": the command line exits 1 with one line, the listener spools the outcomes (nothing
reaches the catalog a deployment without a connection would use), and the gates wait, saying why, until
the look-up succeeds. Only a connection that every backend answers it does not hold means the fallback.

The backend is a real class configured as Airflow's ``[secrets] backend`` and ``[workers] secrets_backend``
(:mod:`tests.helpers.secrets_backends`); its store is away while a file exists.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import subprocess
import sys

import pytest
from sqlalchemy import select

from airflow_leastaction import report_completion
from airflow_leastaction.catalog.engine import dispose_all, get_engine
from airflow_leastaction.catalog.outcomes import SPOOL_SUFFIX
from airflow_leastaction.catalog.schema import task, task_run
from airflow_leastaction.catalog.store import CatalogStore, TaskMeta
from tests.helpers.conditions import run_acting_when
from tests.helpers.crash import ROOT
from tests.helpers.secrets_backends import HELD, RemoteStoreBackend, configured

SLOT = dt.datetime(2026, 11, 12, tzinfo=dt.UTC)
REPORT = ["catalog", "report", "orders_raw", "--project", "p", "--slot", "2026-11-28T00:00:00+00:00"]


def catalog_connection(url: str) -> dict:
    return {"leastaction_catalog_default": {"conn_type": "leastaction_catalog", "extra": {"url": url}}}


def cli(args: list[str], env: dict[str, str], home) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "AIRFLOW_CONN_"))}
    clean.update(env, AIRFLOW_HOME=str(home), PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "airflow_leastaction.cli", *args],
        env=clean,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


class TestCommandLine:
    def test_report_exits_1_with_one_line_when_the_secrets_backend_fails(self, tmp_path):
        down = tmp_path / "secrets-down"
        down.touch()
        done = cli(REPORT, configured(down), tmp_path)
        assert done.returncode == 1, done.stderr
        errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
        assert "cannot read connection 'leastaction_catalog_default'" in errors[0]
        assert "RemoteStoreBackend failed: the secrets store did not answer" in errors[0]
        assert not (tmp_path / "leastaction" / "catalog.db").exists()  # nothing written to the embedded catalog

    def test_a_connection_every_backend_answers_it_lacks_is_the_embedded_catalog(self, tmp_path):
        done = cli(REPORT, configured(tmp_path / "never-down"), tmp_path)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "leastaction" / "catalog.db").exists()

    def test_report_reaches_the_connection_the_backend_holds(self, tmp_path, sqlite_url):
        get_engine(sqlite_url, migrate=True)
        done = cli(REPORT, configured(tmp_path / "never-down", catalog_connection(sqlite_url)), tmp_path)
        assert done.returncode == 0, done.stderr
        with get_engine(sqlite_url).connect() as conn:
            assert conn.execute(select(task.c.name)).scalars().all() == ["orders_raw"]
        assert not (tmp_path / "leastaction" / "catalog.db").exists()


@pytest.fixture
def remote_store(monkeypatch, tmp_path):
    """This process's Airflow reads connections through the test's secrets backend, its store away."""
    try:
        from airflow.sdk.configuration import clear_secrets_backends_cache
    except ImportError:  # Airflow 3.1 builds the backends again for each look-up: nothing is cached

        def clear_secrets_backends_cache() -> None:
            pass

    down = tmp_path / "secrets-down"
    down.touch()
    monkeypatch.delenv("AIRFLOW_CONN_LEASTACTION_CATALOG_DEFAULT", raising=False)
    for key, value in configured(down).items():
        monkeypatch.setenv(key, value)
    clear_secrets_backends_cache()
    dispose_all()
    yield down
    clear_secrets_backends_cache()
    dispose_all()


def test_a_run_spools_and_waits_while_the_secrets_backend_fails_and_uses_the_catalog_once_it_answers(
    remote_store, catalog_url, run_dag, tmp_path, monkeypatch
):
    spool = tmp_path / "spool"
    fallback = tmp_path / "fallback" / "catalog.db"
    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(spool))
    monkeypatch.setenv("AIRFLOW__LEASTACTION__CATALOG_URL", f"sqlite:///{fallback}")
    get_engine(catalog_url, migrate=True)
    refused_before = RemoteStoreBackend.refused

    def outcomes_spooled_and_gates_refused() -> bool:
        return any(spool.glob(f"pending-*{SPOOL_SUFFIX}")) and RemoteStoreBackend.refused >= refused_before + 6

    def store_answers():
        os.environ[HELD] = json.dumps(catalog_connection(catalog_url))
        remote_store.unlink()
        report_completion("pis_raw", "other-team", SLOT, cron="0 0 * * *", store=CatalogStore(get_engine(catalog_url)))

    run = run_acting_when(lambda: run_dag("pis_outage", SLOT), outcomes_spooled_and_gates_refused, store_answers)
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    # The sensor and the gate waited through the failed look-ups (the parent is only reported once the
    # store answers): neither admitted nor failed meanwhile.
    assert run.state == "success", states
    assert not fallback.exists()  # no outcome, no gate ever used the catalog of a deployment without one
    with get_engine(catalog_url).connect() as conn:
        finished = dict(
            conn.execute(
                select(task.c.name, task_run.c.state)
                .join(task_run, task_run.c.task_pk == task.c.id)
                .where(task_run.c.slot == SLOT, task.c.dag_id == "pis_outage")
            ).all()
        )
    assert {finished.get(f"pis_outage.{t}") for t in ("wait", "extract", "load")} == {"success"}


async def test_a_waiting_sensor_says_the_look_up_failed_and_is_admitted_once_the_store_answers(
    remote_store, catalog_url, tmp_path, monkeypatch, capfd
):
    from airflow_leastaction.identity import TaskIdentity
    from airflow_leastaction.triggers.parent_interval import ParentIntervalTrigger

    store = CatalogStore(get_engine(catalog_url, migrate=True))
    raw = TaskIdentity("orders_raw", "sales-platform")
    store.record_success(raw, SLOT, run_id="today", meta=TaskMeta(cron="0 0 * * *"))
    refused_before = RemoteStoreBackend.refused
    fallback = tmp_path / "fallback" / "catalog.db"
    monkeypatch.setenv("AIRFLOW__LEASTACTION__CATALOG_URL", f"sqlite:///{fallback}")
    trigger = ParentIntervalTrigger(parents=[raw.as_dict()], child_interval=SLOT.isoformat(), poll_interval=0.05)
    event = asyncio.ensure_future(anext(trigger.run()))

    async def asked_again():  # with back-off, while it waits
        while RemoteStoreBackend.refused < refused_before + 4 and not event.done():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(asked_again(), timeout=120)
    assert not event.done() and not fallback.exists()
    os.environ[HELD] = json.dumps(catalog_connection(catalog_url))
    remote_store.unlink()
    assert (await asyncio.wait_for(event, timeout=120)).payload["status"] == "admitted"
    out = capfd.readouterr().out  # what a trigger logs goes through Airflow's own handler
    assert out.count("waiting for the catalog connection: cannot read connection 'leastaction_catalog_default'") == 1
    assert "catalog connection read after" in out
