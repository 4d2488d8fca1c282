"""Dependencies of a whole DAG and backfill runs on a real deployment: scheduler, dag-processor, triggerer
and API server as separate processes (LocalExecutor, PostgreSQL). The scheduler's DAG-run listener writes
the DAG run records and the consumption; the API server skips the tasks of a run its gate does not admit."""

from __future__ import annotations

import textwrap

import pytest
import sqlalchemy as sa

from tests.helpers.airflow_cluster import AirflowCluster, fresh_pg_database

pytestmark = pytest.mark.postgres

DAGS = textwrap.dedent("""
    import pendulum
    from airflow.sdk import DAG, task
    from airflow_leastaction.refs import airflow_dag
    from airflow_leastaction.rows import report_rows_written
    from airflow_leastaction.run_conditions import dag_run_condition, run_condition, success

    START = pendulum.datetime(2026, 1, 1, tz="UTC")

    with DAG("rcp_orders", schedule=None, start_date=START, catchup=False):
        @task
        def load_orders():
            report_rows_written(3)

        load_orders()

    with DAG("rcp_report", schedule=None, start_date=START, catchup=False) as report_dag:
        @task
        def extract():
            return 1

        @task
        def load(x):
            return x

        @task(trigger_rule="all_done")
        def cleanup():
            return "cleaned"

        @task
        def report():
            return "sent"

        loaded = load(extract())
        loaded >> cleanup()
        run_condition(report(), success(loaded))
        dag_run_condition(report_dag, success(airflow_dag("rcp_orders")), max_wait=0)

    with DAG("rcp_breaks", schedule=None, start_date=START, catchup=False):
        @task
        def breaks():
            raise ValueError("the source is gone")

        @task
        def publish():
            return "published"

        run_condition(publish(), success(breaks()))

    with DAG("rcp_daily", schedule="@daily", start_date=START, catchup=False):
        @task
        def daily():
            return "done"

        daily()
""")


@pytest.fixture(scope="module")
def cluster(pg_admin_url, tmp_path_factory):
    airflow_url, drop_airflow = fresh_pg_database(pg_admin_url, "la_rcp_airflow")
    catalog_url, drop_catalog = fresh_pg_database(pg_admin_url, "la_rcp_catalog")
    root = tmp_path_factory.mktemp("rcp-cluster")
    (root / "dags").mkdir()
    (root / "dags" / "rcp_dags.py").write_text(DAGS)
    with AirflowCluster(
        root / "dags",
        sql_alchemy_conn=airflow_url,
        catalog_url=catalog_url,
        home=root / "home",
        # One quick retry absorbs Airflow 3.3's race where a trigger fires just after the
        # deferral, as in the other deployment tests (tests/helpers/example_flows.py).
        env={
            "AIRFLOW__LEASTACTION__POLL_INTERVAL": "0.5",
            "AIRFLOW__CORE__DEFAULT_TASK_RETRIES": "1",
            "AIRFLOW__CORE__DEFAULT_TASK_RETRY_DELAY": "3",
        },
    ) as running:
        running.catalog = sa.create_engine(catalog_url)
        yield running
        running.catalog.dispose()
    drop_airflow()
    drop_catalog()


def run_to_end(cluster, dag_id: str) -> tuple[dict, dict[str, str]]:
    cluster.unpause(dag_id)
    run = cluster.trigger(dag_id)
    done = cluster.wait_for_run(dag_id, run["dag_run_id"])
    return done, {ti["task_id"]: ti["state"] for ti in cluster.task_instances(dag_id, run["dag_run_id"])}


def catalog_rows(cluster, sql: str, **params) -> list[tuple]:
    with cluster.catalog.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.text(sql), params)]


def catalog_states(cluster, dag_id: str, run_id: str) -> dict[str, str]:
    """The state the catalog holds for each task of one run, by task id."""
    rows = catalog_rows(
        cluster,
        "SELECT t.name, r.state FROM la_task_run r JOIN la_task t ON t.id = r.task_pk WHERE r.run_id = :run",
        run=run_id,
    )
    prefix = f"{dag_id}."
    return {name[len(prefix) :]: state for name, state in rows if name.startswith(prefix)}


def assert_the_catalog_agrees_with_airflow(cluster, dag_id: str, run_id: str, states: dict[str, str]) -> None:
    """Every task of the run, whoever set its state (a worker, the scheduler, a gate's trigger), has a slot
    record of this run in that state: the DAG-run listener records what no worker reported when the run
    ends, after the run's state is visible through the API, so the records are waited for."""
    cluster.wait_until(
        lambda: catalog_states(cluster, dag_id, run_id) == states,
        60,
        lambda: (
            f"the catalog to agree with Airflow for {dag_id} {run_id}: airflow {states}, "
            f"catalog {catalog_states(cluster, dag_id, run_id)}"
        ),
        0.5,
    )


class TestPipelineDependenciesOnADeployment:
    def test_an_unmet_pipeline_dependency_skips_every_task_then_a_met_one_runs_and_consumes(self, cluster):
        run, states = run_to_end(cluster, "rcp_report")  # rcp_orders never ran
        assert {t: s for t, s in states.items() if t != "leastaction_run_outcome"} == {
            t: "skipped" for t in ("leastaction_dag_gate", "extract", "load", "cleanup", "report__gate", "report")
        }
        # No worker ran any of them: the gate's trigger skipped the run's tasks.
        assert_the_catalog_agrees_with_airflow(cluster, "rcp_report", run["dag_run_id"], states)
        assert catalog_rows(
            cluster,
            "SELECT r.state FROM la_task_run r JOIN la_task t ON t.id = r.task_pk "
            "WHERE t.name = 'rcp_report::run' AND r.run_id = :run",
            run=run["dag_run_id"],
        ) == [("skipped",)]

        orders, _ = run_to_end(cluster, "rcp_orders")
        assert orders["state"] == "success"
        assert catalog_rows(
            cluster,
            "SELECT r.state, r.rows_written, r.run_type FROM la_task_run r JOIN la_task t "
            "ON t.id = r.task_pk WHERE t.name = 'rcp_orders::run'",
        ) == [("success", 3, "manual")]

        run, states = run_to_end(cluster, "rcp_report")
        assert run["state"] == "success" and states["report"] == "success" and states["cleanup"] == "success"
        decided = catalog_rows(
            cluster,
            "SELECT id, result FROM la_gate_decision WHERE dag_id = 'rcp_report' AND "
            "task_id = 'leastaction_dag_gate' AND run_id = :run",
            run=run["dag_run_id"],
        )
        assert [r[1] for r in decided] == ["SATISFIED"]
        assert catalog_rows(
            cluster,
            "SELECT decision_id FROM la_consumption WHERE dag_id = 'rcp_report' AND task_id = 'leastaction_dag_gate'",
        ) == [(decided[0][0],)]


def task_instance(cluster, dag_id: str, run_id: str, task_id: str) -> dict:
    return cluster.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}")


def never_on_a_worker(ti: dict) -> bool:
    """A task instance the scheduler deferred straight to the triggerer: never queued, no worker host."""
    return ti["queued_when"] is None and not ti["hostname"] and ti["pid"] is None


class TestTheRunOutcomeTaskOnADeployment:
    def test_the_run_outcome_task_starts_and_ends_in_the_triggerer_and_fails_the_run_naming_the_failure(self, cluster):
        run, states = run_to_end(cluster, "rcp_breaks")
        assert run["state"] == "failed"
        assert states == {
            "breaks": "failed",
            "publish__gate": "skipped",
            "publish": "skipped",
            "leastaction_run_outcome": "failed",
        }
        assert_the_catalog_agrees_with_airflow(cluster, "rcp_breaks", run["dag_run_id"], states)
        outcome = task_instance(cluster, "rcp_breaks", run["dag_run_id"], "leastaction_run_outcome")
        assert outcome["try_number"] == 1 and never_on_a_worker(outcome), outcome
        # The task that failed ran on a worker and carries its host: the check tells the two apart.
        assert not never_on_a_worker(task_instance(cluster, "rcp_breaks", run["dag_run_id"], "breaks"))
        summary = cluster.api(
            "GET",
            f"/api/v2/dags/rcp_breaks/dagRuns/{run['dag_run_id']}/taskInstances/leastaction_run_outcome"
            "/xcomEntries/leastaction_run_summary",
            params={"deserialize": "true"},
        )
        assert summary["value"] == {"failed": ["breaks"], "skipped_because_of_failure": ["publish"]}


class TestBackfillRunsOnADeployment:
    def test_the_listener_records_a_backfill_runs_type(self, cluster):
        cluster.unpause("rcp_daily")
        cluster.backfill("rcp_daily", "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z")

        def backfilled():
            found = catalog_rows(
                cluster,
                "SELECT t.name, r.run_type FROM la_task_run r JOIN la_task t ON "
                "t.id = r.task_pk WHERE t.name IN ('rcp_daily.daily', 'rcp_daily::run') AND "
                "r.slot < '2026-01-03' AND r.state = 'success' ORDER BY t.name, r.slot",
            )
            return found if len(found) == 4 else None

        assert {run_type for _, run_type in cluster.wait_until(backfilled, 180, "the backfill's records")} == {
            "backfill"
        }
