"""The example DAGs' flows and what they must show, shared by the end-to-end tests of each executor.

A test module defines a module-scoped ``cluster`` fixture (an :class:`AirflowCluster` running
``dags_examples`` with a copy of the dbt project) and subclasses these classes as ``Test...``; pytest then
runs every check against that module's deployment. Outcomes are read through Airflow's REST API and
the plugin's API, as an operator would.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.airflow_cluster import AirflowCluster, fresh_pg_database

EXAMPLES = Path(__file__).resolve().parents[2] / "dags_examples"

DAYS = ("2026-11-16T00:00:00Z", "2026-11-17T00:00:00Z", "2026-11-18T00:00:00Z")
TRIO = ("orders_raw", "orders_enriched", "orders_daily_report")
RUN_TIMEOUT = 420


@contextlib.contextmanager
def example_deployment(pg_admin_url: str, work: Path, *, dags_folder: Path = EXAMPLES, settings=None, **kwargs):
    """A started cluster on fresh PostgreSQL databases (Airflow's and the catalog's), running the examples
    with their own copy of the dbt project under ``work``. ``settings(airflow_url)`` returns extra
    environment (it may name Airflow's database, as Celery's result backend does); ``kwargs`` go to the
    cluster."""
    airflow_url, drop_airflow = fresh_pg_database(pg_admin_url, "la_e2e_airflow")
    catalog_url, drop_catalog = fresh_pg_database(pg_admin_url, "la_e2e_catalog")
    # The dbt example appends to its CSV sources: it gets a copy of the project.
    dbt_project = work / "dbt_project"
    shutil.copytree(EXAMPLES / "dbt_project", dbt_project, ignore=shutil.ignore_patterns("target", "logs"))
    env = {
        # Runs come from the tests only, not from the wall clock.
        "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False",
        # Airflow 3.3's scheduler can fail a task whose trigger fired before the executor reported the
        # deferral's exit (a busy scheduler loop makes that likely); one quick retry, as in production.
        "AIRFLOW__CORE__DEFAULT_TASK_RETRIES": "1",
        "AIRFLOW__CORE__DEFAULT_TASK_RETRY_DELAY": "3",
        "FIELD_OPS_DBT_PROJECT_DIR": str(dbt_project),
        "FIELD_OPS_DATA_DIR": str(dbt_project / "data"),
        "FIELD_OPS_DUCKDB_PATH": str(work / "field_ops.duckdb"),
        **(settings(airflow_url) if settings else {}),
    }
    # The queue builds tables, not views: the project is deployed once (one dbt build), as a release would.
    subprocess.run(
        [str(Path(sys.executable).with_name("dbt")), "build", "--quiet", "--project-dir", ".", "--profiles-dir", "."],
        cwd=dbt_project,
        env={**os.environ, **env},
        check=True,
        capture_output=True,
        timeout=300,
    )
    cluster = AirflowCluster(
        dags_folder, sql_alchemy_conn=airflow_url, catalog_url=catalog_url, home=work / "home", env=env, **kwargs
    )
    try:
        with cluster:
            yield cluster
    finally:
        drop_airflow()
        drop_catalog()


def finished_runs(cluster: AirflowCluster, dag_ids, count: int) -> dict[str, list[dict]]:
    return {dag_id: cluster.wait_for_runs(dag_id, count, RUN_TIMEOUT) for dag_id in dag_ids}


def task_states(cluster: AirflowCluster, dag_id: str, run_id: str) -> dict[str, str]:
    return {ti["task_id"]: ti["state"] for ti in cluster.task_instances(dag_id, run_id)}


def task_instance(cluster: AirflowCluster, dag_id: str, logical_date: str, task_id: str) -> dict:
    run = next(r for r in cluster.runs(dag_id) if r["logical_date"].startswith(logical_date[:19]))
    return next(ti for ti in cluster.task_instances(dag_id, run["dag_run_id"]) if ti["task_id"] == task_id)


def plugin(cluster: AirflowCluster, view: str, **params) -> dict:
    return cluster.api("GET", f"/leastaction/api/{view}", params={"limit": 500, **params})


class BackfillTrioFlow:
    """A three-day backfill of a parent owned by another team and two generations of children."""

    @pytest.fixture(scope="class")
    def trio_runs(self, cluster):
        # Children first, parents last: each child slot must wait for its parent's slot, not for the order
        # the backfills were created in. The first day runs alone: slots before a parent's first slot
        # record are judged by its watermark (docs/interval-dependencies.md), so a new parent whose very
        # first completions arrive out of order (likely with several workers) would release the earlier
        # days of its children early. Once the parents have records, the other days run in parallel and
        # in any order.
        for dag_id in reversed(TRIO):
            cluster.wait_for_dag(dag_id)
            cluster.backfill(dag_id, DAYS[0], DAYS[0])
        for dag_id in reversed(TRIO):
            cluster.unpause(dag_id)
        finished_runs(cluster, TRIO, 1)
        for dag_id in reversed(TRIO):
            cluster.wait_for_backfills(dag_id)
            cluster.backfill(dag_id, DAYS[1], DAYS[-1])
        return finished_runs(cluster, TRIO, len(DAYS))

    def test_every_slot_of_every_dag_succeeds(self, trio_runs):
        for dag_id, runs in trio_runs.items():
            assert sorted(r["logical_date"][:10] for r in runs) == [d[:10] for d in DAYS], dag_id
            assert {r["state"] for r in runs} == {"success"}, dag_id

    def test_each_child_slot_runs_after_its_parents_slot(self, cluster, trio_runs):
        chain = (("orders_raw", "load_orders"), ("orders_enriched", "enrich"), ("orders_daily_report", "build_report"))
        for day in DAYS:
            for (parent, parent_task), (child, child_task) in itertools.pairwise(chain):
                upper = task_instance(cluster, parent, day, parent_task)
                lower = task_instance(cluster, child, day, child_task)
                done, started = (
                    dt.datetime.fromisoformat(upper["end_date"]),
                    dt.datetime.fromisoformat(lower["start_date"]),
                )
                assert started >= done, f"{child} {day} started before {parent} finished: {upper} {lower}"

    def test_gate_decisions_select_the_parent_slot_that_covers_the_child(self, cluster, trio_runs):
        decisions = plugin(cluster, "decisions", dag_id="orders_daily_report", result="SATISFIED")["items"]
        by_slot = {d["downstream_slot"][:10]: d for d in decisions}
        assert sorted(by_slot) == [d[:10] for d in DAYS]
        for slot, decision in by_slot.items():
            selected = (decision["upstream_slot"] or "")[:10], decision["upstream_revision"]
            assert selected == (slot, 1), decision

    def test_successful_children_consume_their_decisions(self, cluster, trio_runs):
        records = plugin(cluster, "consumption", dag_id="orders_enriched")["items"]
        assert sorted(r["downstream_slot"][:10] for r in records) == [d[:10] for d in DAYS]
        assert {(r["upstream_name"], r["upstream_project"], r["upstream_revision"], r["stale"]) for r in records} == {
            ("orders_raw", "sales-platform", 1, False)
        }

    def test_catalog_holds_one_completed_slot_per_day(self, cluster, trio_runs):
        tasks = {t["name"]: t for t in plugin(cluster, "catalog")["items"]}
        assert {"orders_raw", "orders_enriched.enrich", "orders_daily_report.build_report"} <= set(tasks)
        assert tasks["orders_daily_report.build_report"]["state"] == "success"


class RunConditionFlow:
    @pytest.fixture(scope="class")
    def pipeline_run(self, cluster):
        dag_id = "run_conditions_pipeline"
        cluster.wait_for_dag(dag_id)
        cluster.backfill(dag_id, DAYS[0], DAYS[0])
        cluster.unpause(dag_id)
        (run,) = finished_runs(cluster, [dag_id], 1)[dag_id]
        return run

    def test_run_succeeds_with_the_failure_path_skipped(self, cluster, pipeline_run):
        states = task_states(cluster, "run_conditions_pipeline", pipeline_run["dag_run_id"])
        assert pipeline_run["state"] == "success", states
        assert states["alert_on_failure"] == "skipped"
        for task_id in ("publish_changes", "daily_summary", "reconcile", "cleanup"):
            assert states[task_id] == "success", (task_id, states)

    def test_every_dependency_judged_is_recorded_with_a_reason(self, cluster, pipeline_run):
        decisions = plugin(cluster, "decisions", dag_id="run_conditions_pipeline")["items"]
        judged = {(d["task_id"], d["dependency_type"], d["result"]) for d in decisions}
        assert any(t.startswith("alert_on_failure") and r == "UNSATISFIED" for t, _, r in judged), judged
        assert any(t.startswith("publish_changes") and k == "HAS_DATA" and r == "SATISFIED" for t, k, r in judged), (
            judged
        )
        assert all(d["reason"] for d in decisions)


class DbtQueueFlow:
    @pytest.fixture(scope="class")
    def queue(self, cluster):
        ingests = ("dbt_ingest_work_orders", "dbt_ingest_time_entries")
        for dag_id in ingests:
            cluster.wait_for_dag(dag_id)
            cluster.backfill(dag_id, DAYS[-1], DAYS[-1])
            cluster.unpause(dag_id)
        finished_runs(cluster, ingests, 1)
        drains = [
            cluster.wait_for_run(dag_id, run["dag_run_id"], RUN_TIMEOUT) for dag_id, run in self.start_drains(cluster)
        ]
        return drains, plugin(cluster, "queue", environment="field_ops")

    DRAIN_DAGS = ("dbt_queue_worker",)

    def start_drains(self, cluster) -> list[tuple[str, dict]]:
        """Trigger one run of each drain DAG at once (they compete for the environment's lease)."""
        for dag_id in self.DRAIN_DAGS:
            cluster.unpause(dag_id)
        return [(dag_id, cluster.trigger(dag_id)) for dag_id in self.DRAIN_DAGS]

    def test_overlapping_requests_build_in_one_batch(self, queue):
        drains, view = queue
        assert {d["state"] for d in drains} == {"success"}, drains
        assert [b["status"] for b in view["batches"]] == ["success"], view["batches"]
        assert view["active"] == []

    def test_both_requests_are_in_the_event_history(self, queue):
        _, view = queue
        selectors = {e["selector"] for e in view["events"]}
        assert selectors == {"source:field_ops.work_orders+", "source:field_ops.time_entries+"}
        shared = {e["unique_id"] for e in view["events"] if e["selector"].endswith("work_orders+")} & {
            e["unique_id"] for e in view["events"] if e["selector"].endswith("time_entries+")
        }
        assert shared, "the two selectors were expected to overlap on some models"
