"""The catalog listener in real DAG runs: outcomes mirrored per slot, and a catalog outage survived."""

from __future__ import annotations

import datetime as dt
import json

import pytest
import sqlalchemy as sa

from airflow_leastaction.catalog.engine import dispose_all
from airflow_leastaction.catalog.outcomes import spool_dir
from airflow_leastaction.cli import main as cli
from airflow_leastaction.identity import TaskIdentity

UTC = dt.UTC
MONDAY = dt.datetime(2026, 11, 23, tzinfo=UTC)
RATES = TaskIdentity("fx_rates_weekly.load_rates", "airflow")


@pytest.fixture
def spool(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(tmp_path / "spool"))
    return tmp_path / "spool"


class TestListenerMirrorsOutcomes:
    def test_success_records_the_slot_the_schedule_and_the_watermark(
        self, store, catalog_url, use_catalog, spool, run_dag
    ):
        use_catalog(catalog_url)
        assert run_dag("fx_rates_weekly", MONDAY).state == "success"
        row = store.get_task(RATES)
        assert (row["cron"], row["timezone"], row["state"]) == ("0 0 * * 1", "UTC", "success")
        assert row["prev_interval_start"] == MONDAY
        assert (row["dag_id"], row["task_id"]) == ("fx_rates_weekly", "load_rates")

    def test_running_the_slot_again_publishes_the_next_revision(self, store, catalog_url, use_catalog, spool, run_dag):
        use_catalog(catalog_url)
        run_dag("fx_rates_weekly", MONDAY)
        run_dag("fx_rates_weekly", MONDAY)
        tasks, slots = store.snapshot([(RATES, MONDAY)])
        assert [(s.slot, s.output_revision, s.state) for s in slots] == [(MONDAY, 2, "success")]


@pytest.mark.postgres
class TestCatalogOutage:
    def _set_connections(self, pg_admin_url: str, url: str, allowed: bool):
        name = sa.engine.make_url(url).database
        admin = sa.create_engine(pg_admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(allowed).lower()}'))
            if not allowed:
                conn.execute(
                    sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"), {"n": name}
                )
        admin.dispose()
        dispose_all()

    def test_the_listener_survives_a_catalog_outage_without_failing_the_task_or_losing_the_record(
        self, pg_url, pg_admin_url, use_catalog, spool, run_dag
    ):
        from airflow_leastaction.catalog.engine import get_engine
        from airflow_leastaction.catalog.store import CatalogStore

        get_engine(pg_url, migrate=True)
        use_catalog(pg_url)
        self._set_connections(pg_admin_url, pg_url, allowed=False)
        try:
            run = run_dag("fx_rates_weekly", MONDAY)
            assert run.state == "success"  # the outage did not fail the user's task
            spooled = [
                json.loads(line) for f in spool_dir().glob("pending-*.jsonl") for line in f.read_text().splitlines()
            ]
            # The task's events (the DAG run's own success is spooled beside them).
            mine = [e for e in spooled if TaskIdentity.from_dict(e["identity"]) == RATES]
            assert sorted(e["state"] for e in mine) == ["running", "success"], [e["identity"] for e in spooled]
        finally:
            self._set_connections(pg_admin_url, pg_url, allowed=True)

        assert cli(["catalog", "replay"]) == 0
        store = CatalogStore(get_engine(pg_url))
        row = store.get_task(RATES)
        assert (row["state"], row["prev_interval_start"]) == ("success", MONDAY)
        assert list(spool_dir().glob("pending-*.jsonl")) == []
        assert cli(["catalog", "replay"]) == 0  # nothing left, nothing applied twice
        _, slots = store.snapshot([(RATES, MONDAY)])
        assert [s.output_revision for s in slots] == [1]

    def test_the_next_outcome_after_an_outage_delivers_the_spooled_backlog_first(
        self, pg_url, pg_admin_url, use_catalog, spool, run_dag
    ):
        from airflow_leastaction.catalog.engine import get_engine
        from airflow_leastaction.catalog.store import CatalogStore

        get_engine(pg_url, migrate=True)
        use_catalog(pg_url)
        self._set_connections(pg_admin_url, pg_url, allowed=False)
        try:
            assert run_dag("fx_rates_weekly", MONDAY).state == "success"
        finally:
            self._set_connections(pg_admin_url, pg_url, allowed=True)
        assert run_dag("fx_rates_weekly", MONDAY + dt.timedelta(days=7)).state == "success"
        row = CatalogStore(get_engine(pg_url)).get_task(RATES)
        assert row["prev_interval_start"] == MONDAY + dt.timedelta(days=7)
        assert list(spool_dir().glob("*.jsonl")) == []
