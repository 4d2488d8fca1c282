"""Fallbacks and the re-run planner on a real deployment (scheduler, dag-processor, triggerer, API server,
LocalExecutor, PostgreSQL for Airflow and the catalog), one deployment for every scenario of this module.

- A report of four feeds, ALL with ``require=3``, admitted degraded at its deadline while the Italian feed
  is late, its decisions and consumption exact; the late feed's arrival re-runs it once through Airflow's
  API (``on_late_arrival="rerun"``), after which it is no longer stale.
- The deadline met exactly once across a triggerer killed before it and restarted after it.
- ``airflow-leastaction plan --apply`` over a diamond of DAGs brings every consumer run to the new revision,
  wave after wave.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest
from sqlalchemy import select

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.schema import consumption, gate_decision, late_arrival
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.refs import airflow_task
from tests.helpers.airflow_cluster import ADMIN_PASSWORD, ADMIN_USER, AirflowCluster, fresh_pg_database

pytestmark = pytest.mark.postgres

DAGS = Path(__file__).parent / "deadline_dags"
REPORT = "sys_country_report"
DEADLINE = dt.timedelta(seconds=75)
DAYS = ("2026-11-16T00:00:00+00:00", "2026-11-17T00:00:00+00:00")


@pytest.fixture(scope="module")
def deployment(pg_admin_url, tmp_path_factory):
    airflow_url, drop_airflow = fresh_pg_database(pg_admin_url, "la_e2e_airflow")
    catalog_url, drop_catalog = fresh_pg_database(pg_admin_url, "la_e2e_catalog")
    work = tmp_path_factory.mktemp("deadlines")
    dags, markers = work / "dags", work / "markers"
    shutil.copytree(DAGS, dags, ignore=shutil.ignore_patterns("__pycache__"))
    markers.mkdir()
    cluster = AirflowCluster(dags, sql_alchemy_conn=airflow_url, catalog_url=catalog_url, home=work / "home")
    api = {"conn_type": "http", "host": cluster.base_url, "login": ADMIN_USER, "password": ADMIN_PASSWORD}
    cluster.env.update(
        {
            "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False",
            "LA_MARKERS": str(markers),
            "AIRFLOW_CONN_LEASTACTION_AIRFLOW_API_DEFAULT": json.dumps(api),
        }
    )
    cluster.environ.update(cluster.env)
    try:
        with cluster:
            yield cluster, CatalogStore(get_engine(catalog_url)), markers
    finally:
        drop_airflow()
        drop_catalog()


def rows(store: CatalogStore, table, **where) -> list[dict]:
    with store.engine.connect() as conn:
        query = select(table).where(*(table.c[k] == v for k, v in where.items())).order_by(table.c.id)
        return [dict(r) for r in conn.execute(query).mappings()]


def ti(cluster: AirflowCluster, run_id: str, task_id: str, dag_id: str = REPORT) -> dict:
    return cluster.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}")


def wait_for(cluster: AirflowCluster, run_id: str, task_id: str, state: str, try_number: int = 1) -> dict:
    return cluster.wait_until(
        lambda: (
            (found := ti(cluster, run_id, task_id))["state"] == state and found["try_number"] >= try_number and found
        ),
        300,
        f"{task_id} of {run_id} to be {state} (try {try_number})",
    )


def start_report(cluster: AirflowCluster) -> tuple[str, dt.datetime]:
    """A run whose slot is now: its fallback's deadline is 75 seconds away."""
    slot = dt.datetime.now(dt.UTC).replace(microsecond=0)
    run = cluster.trigger(REPORT, slot.isoformat())
    return run["dag_run_id"], slot


def results(decisions: list[dict]) -> dict[str, str]:
    return {d["dependency"]: d["result"] for d in decisions}


DEGRADED = {
    "task:land_fr": "SATISFIED",
    "task:land_de": "SATISFIED",
    "task:land_es": "SATISFIED",
    "task:land_it": "MISSING",
}


class TestDegradedReport:
    @pytest.fixture(scope="class")
    def degraded(self, deployment):
        cluster, store, markers = deployment
        cluster.unpause(REPORT)
        run_id, slot = start_report(cluster)
        wait_for(cluster, run_id, "report", "success")
        return run_id, slot

    def test_it_is_admitted_degraded_at_its_deadline(self, deployment, degraded):
        _, store, _ = deployment
        run_id, slot = degraded
        decisions = rows(store, gate_decision, dag_id=REPORT, run_id=run_id, task_id="report__gate")
        assert results(decisions) == DEGRADED
        assert {d["attempt"] for d in decisions} == {1}
        assert all(d["decided_at"] >= slot + DEADLINE for d in decisions)
        (missing,) = [d for d in decisions if d["result"] == "MISSING"]
        it = store.get_task(airflow_task(REPORT, "land_it"))
        assert (missing["upstream_task_pk"], missing["upstream_slot"], missing["upstream_revision"]) == (
            it["id"],
            slot,
            0,
        )

    def test_its_consumption_says_it_ran_without_the_late_feed(self, deployment, degraded):
        _, store, _ = deployment
        run_id, _ = degraded
        consumed = rows(store, consumption, dag_id=REPORT, run_id=run_id, task_id="report")
        assert results(consumed) == DEGRADED
        assert {c["upstream_revision"] for c in consumed if c["result"] == "MISSING"} == {0}

    def test_the_late_feed_reruns_it_once_and_it_catches_up(self, deployment, degraded):
        cluster, store, markers = deployment
        run_id, _ = degraded
        (markers / f"it-{run_id}").touch()
        rerun = wait_for(cluster, run_id, "report", "success", try_number=2)
        cluster.wait_for_run(REPORT, run_id)
        assert rerun["try_number"] == 2  # once
        (audit,) = rows(store, late_arrival, dag_id=REPORT, run_id=run_id)
        assert audit["state"] == "rerun", audit
        assert "cleared 2 task instance(s) (report__gate, report)" in audit["detail"]
        decisions = rows(store, gate_decision, dag_id=REPORT, run_id=run_id, task_id="report__gate", attempt=2)
        assert [d["result"] for d in decisions] == ["SATISFIED"] * 4
        assert [s for s in store.audit.stale_consumers(REPORT) if s["run_id"] == run_id] == []
        assert ti(cluster, run_id, "report")["try_number"] == 2


class TestTriggererRestart:
    def test_the_deadline_is_met_exactly_once_across_a_triggerer_restart(self, deployment):
        cluster, store, markers = deployment
        cluster.unpause(REPORT)
        run_id, slot = start_report(cluster)
        for country in ("fr", "de", "es"):
            wait_for(cluster, run_id, f"land_{country}", "success")
        wait_for(cluster, run_id, "report__gate", "deferred")
        assert rows(store, gate_decision, dag_id=REPORT, run_id=run_id) == []
        cluster.kill("triggerer")
        cluster.wait_until(
            lambda: dt.datetime.now(dt.UTC) > slot + DEADLINE + dt.timedelta(seconds=5), 200, "the deadline"
        )
        cluster.restart("triggerer")
        wait_for(cluster, run_id, "report", "success")
        decisions = rows(store, gate_decision, dag_id=REPORT, run_id=run_id, task_id="report__gate")
        assert results(decisions) == DEGRADED
        assert len(decisions) == 4 and {d["attempt"] for d in decisions} == {1}
        assert ti(cluster, run_id, "report__gate")["try_number"] == 1
        (markers / f"it-{run_id}").touch()
        cluster.wait_for_run(REPORT, run_id)


class TestPlanApply:
    DIAMOND = ("plan_raw", "plan_left", "plan_right", "plan_report")
    TASKS = {"plan_raw": "load", "plan_left": "enrich", "plan_right": "score", "plan_report": "build"}

    def revisions(self, store: CatalogStore) -> dict[tuple[str, str], int]:
        out = {}
        for dag_id, task_id in self.TASKS.items():
            identity = airflow_task(dag_id, task_id)
            _, slots = store.snapshot([(identity, dt.datetime.fromisoformat(d)) for d in DAYS])
            out.update({(dag_id, s.slot.isoformat()): s.output_revision for s in slots})
        return out

    def test_apply_brings_every_consumer_to_the_new_revision_wave_by_wave(self, deployment):
        cluster, store, _ = deployment
        for dag_id in reversed(self.DIAMOND):
            cluster.wait_for_dag(dag_id)
            cluster.backfill(dag_id, DAYS[0], DAYS[-1])
        for dag_id in self.DIAMOND:
            cluster.unpause(dag_id)
        for dag_id in self.DIAMOND:
            runs = cluster.wait_for_runs(dag_id, len(DAYS), 400)
            assert {r["state"] for r in runs} == {"success"}, (dag_id, runs)
            cluster.wait_for_backfills(dag_id)
        assert set(self.revisions(store).values()) == {1}
        done = cluster.run_leastaction(
            "plan", "--task", "airflow/plan_raw.load", "--from", DAYS[0], "--to", DAYS[-1], "--apply", timeout=900
        )
        out = done.stdout
        assert "8 task runs in 3 waves" in out, out
        waves = [line for line in out.splitlines() if line.startswith("wave ") and "backfilling" in line]
        assert waves == [
            "wave 1: backfilling plan_raw",
            "wave 2: backfilling plan_left, plan_right",
            "wave 3: backfilling plan_report",
        ], out
        assert set(self.revisions(store).values()) == {2}, self.revisions(store)
        assert [s for s in store.audit.stale_consumers() if s["dag_id"] in self.DIAMOND] == []
        backfills = {
            b["dag_id"]: b
            for d in self.DIAMOND
            for b in cluster.api("GET", "/api/v2/backfills", params={"dag_id": d})["backfills"]
            if b["reprocess_behavior"] == "completed"
        }
        assert backfills["plan_left"]["created_at"] >= backfills["plan_raw"]["completed_at"]
        assert backfills["plan_report"]["created_at"] >= max(
            backfills["plan_left"]["completed_at"], backfills["plan_right"]["completed_at"]
        )
