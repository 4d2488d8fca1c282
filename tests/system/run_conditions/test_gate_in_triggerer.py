"""Run-condition gates that start and end in the triggerer, on a real deployment: scheduler, dag-processor,
triggerer and API server as separate processes (LocalExecutor, PostgreSQL for Airflow and the catalog).

By default a gate never goes to a worker: the scheduler defers it straight to its trigger, which judges,
records the decisions in the catalog and ends the task (success: the gated task runs and consumes them;
skipped: Airflow's trigger rule skips the gated task). ``start_from_trigger=False`` keeps the worker path.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import sqlalchemy as sa

from airflow_leastaction.version_compat import TRIGGERER_STARTS_TASKS
from tests.helpers.airflow_cluster import AirflowCluster, fresh_pg_database

pytestmark = pytest.mark.postgres

DAG_ID = "gt_gates"

DAGS = textwrap.dedent("""
    import pendulum
    from airflow.sdk import DAG, task
    from airflow_leastaction.refs import airflow_task
    from airflow_leastaction.run_conditions import failure, run_condition, success

    with DAG("gt_gates", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False):
        @task
        def up():
            return 1

        @task
        def admitted():
            return "ran"

        @task
        def skipped():
            return "never"

        @task
        def either():
            return "ran"

        @task
        def dormant():
            return "never"

        @task
        def on_worker():
            return "ran"

        @task
        def skipped_on_worker():
            return "never"

        loaded = up()
        run_condition(admitted(), success(loaded))
        run_condition(skipped(), failure(loaded))
        # A dependency in another DAG that never ran: the trigger reads its consumed revisions too.
        run_condition(either(), success(loaded), success(airflow_task("gt_elsewhere", "never")), when="ANY")
        run_condition(dormant(), success(loaded), active=False)
        run_condition(on_worker(), success(loaded), start_from_trigger=False)
        run_condition(skipped_on_worker(), failure(loaded), start_from_trigger=False)
""")

IN_TRIGGERER = ("admitted__gate", "skipped__gate", "either__gate", "dormant__gate")
ON_WORKER = ("on_worker__gate", "skipped_on_worker__gate")


def run_to_end(pg_admin_url, home, env: dict[str, str] | None = None):
    """One run of the DAG to its end on a fresh deployment; yields (run id, Airflow DB url, catalog url, the
    deployment's AIRFLOW_HOME)."""
    airflow_url, drop_airflow = fresh_pg_database(pg_admin_url, "la_gt_airflow")
    catalog_url, drop_catalog = fresh_pg_database(pg_admin_url, "la_gt_catalog")
    dags = home / "dags"
    dags.mkdir()
    (dags / "gt_gates.py").write_text(DAGS)
    cluster = AirflowCluster(
        dags,
        sql_alchemy_conn=airflow_url,
        catalog_url=catalog_url,
        home=home / "home",
        env={"AIRFLOW__LEASTACTION__POLL_INTERVAL": "0.5", **(env or {})},
    )
    try:
        with cluster:
            cluster.wait_for_dag(DAG_ID)
            cluster.unpause(DAG_ID)
            run = cluster.trigger(DAG_ID)
            cluster.wait_for_run(DAG_ID, run["dag_run_id"], timeout=240)
            yield run["dag_run_id"], airflow_url, catalog_url, cluster.home
    finally:
        drop_airflow()
        drop_catalog()


@pytest.fixture(scope="module")
def finished_run(pg_admin_url, tmp_path_factory):
    yield from run_to_end(pg_admin_url, tmp_path_factory.mktemp("gate-in-triggerer"))


@pytest.fixture(scope="module")
def relaxed_run(pg_admin_url, tmp_path_factory):
    yield from run_to_end(
        pg_admin_url, tmp_path_factory.mktemp("gate-relaxed"), {"AIRFLOW__LEASTACTION__GATES": "warn"}
    )


def rows(url: str, sql: str, **params) -> list[dict]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(sa.text(sql), params)]
    finally:
        engine.dispose()


def task_instances(finished_run) -> dict[str, dict]:
    run_id, airflow_url, _, _ = finished_run
    found = rows(
        airflow_url,
        "SELECT task_id, state, try_number, hostname, pid, queued_dttm, queued_by_job_id "
        "FROM task_instance WHERE dag_id = :dag AND run_id = :run",
        dag=DAG_ID,
        run=run_id,
    )
    return {r["task_id"]: r for r in found}


def decisions(finished_run, task_id: str) -> list[tuple]:
    run_id, _, catalog_url, _ = finished_run
    found = rows(
        catalog_url,
        "SELECT dependency, result, attempt FROM la_gate_decision WHERE dag_id = :dag AND run_id = :run "
        "AND task_id = :task ORDER BY dependency",
        dag=DAG_ID,
        run=run_id,
        task=task_id,
    )
    return [(r["dependency"], r["result"], r["attempt"]) for r in found]


def consumed(finished_run, task_id: str) -> list[tuple]:
    run_id, _, catalog_url, _ = finished_run
    found = rows(
        catalog_url,
        "SELECT dependency, attempt FROM la_consumption WHERE dag_id = :dag AND run_id = :run AND task_id = :task "
        "ORDER BY dependency",
        dag=DAG_ID,
        run=run_id,
        task=task_id,
    )
    return [(r["dependency"], r["attempt"]) for r in found]


class TestGatesStartAndEndInTheTriggerer:
    @pytest.mark.skipif(not TRIGGERER_STARTS_TASKS, reason="Airflow before 3.3 never starts a task in the triggerer")
    @pytest.mark.parametrize("gate", IN_TRIGGERER)
    def test_a_gate_started_in_the_triggerer_never_goes_to_a_worker(self, finished_run, gate):
        ti = task_instances(finished_run)[gate]
        assert ti["queued_dttm"] is None and ti["queued_by_job_id"] is None
        assert not ti["hostname"] and ti["pid"] is None
        assert ti["try_number"] == 1

    @pytest.mark.skipif(TRIGGERER_STARTS_TASKS, reason="Airflow 3.3 starts these gates in the triggerer")
    @pytest.mark.parametrize("gate", IN_TRIGGERER)
    def test_before_3_3_a_gate_left_at_its_default_starts_on_a_worker_and_says_why(self, finished_run, gate):
        ti = task_instances(finished_run)[gate]
        assert ti["queued_dttm"] is not None and ti["hostname"] and ti["pid"] is not None
        # Said once by each worker process that ran it, which parsed the DAG file (five gates and the
        # run-outcome task asked to start in the triggerer); the trigger's own logs are apart.
        run_id, _, _, home = finished_run
        folder = Path(home) / "logs" / f"dag_id={DAG_ID}" / f"run_id={run_id}" / f"task_id={gate}"
        attempts = [p for p in folder.glob("attempt=*.log") if ".trigger." not in p.name]
        assert attempts, folder
        for log in attempts:
            assert log.read_text(errors="replace").count("cannot start a task in the triggerer") == 1, log

    @pytest.mark.parametrize("gate", ON_WORKER)
    def test_a_gate_with_start_from_trigger_false_runs_on_a_worker(self, finished_run, gate):
        ti = task_instances(finished_run)[gate]
        assert ti["queued_dttm"] is not None and ti["hostname"] and ti["pid"] is not None

    def test_an_admitting_gate_records_satisfied_decisions_for_its_attempt_and_the_gated_task_consumes_them(
        self, finished_run
    ):
        tis = task_instances(finished_run)
        assert (tis["admitted__gate"]["state"], tis["admitted"]["state"]) == ("success", "success")
        attempt = tis["admitted__gate"]["try_number"]
        assert decisions(finished_run, "admitted__gate") == [("task:up", "SATISFIED", attempt)]
        assert consumed(finished_run, "admitted") == [("task:up", tis["admitted"]["try_number"])]

    def test_a_skipping_gate_records_unsatisfied_decisions_and_the_gated_task_is_skipped(self, finished_run):
        tis = task_instances(finished_run)
        assert (tis["skipped__gate"]["state"], tis["skipped"]["state"]) == ("skipped", "skipped")
        attempt = tis["skipped__gate"]["try_number"]
        assert decisions(finished_run, "skipped__gate") == [("task:up", "UNSATISFIED", attempt)]
        assert consumed(finished_run, "skipped") == []

    def test_an_any_gate_with_a_dependency_in_another_dag_admits_from_the_triggerer(self, finished_run):
        tis = task_instances(finished_run)
        assert (tis["either__gate"]["state"], tis["either"]["state"]) == ("success", "success")
        found = decisions(finished_run, "either__gate")
        assert ("task:up", "SATISFIED", 1) in found and len(found) == 2
        assert consumed(finished_run, "either") == [("task:up", 1)]

    def test_an_inactive_task_is_skipped_by_its_gate_in_the_triggerer_without_judging(self, finished_run):
        tis = task_instances(finished_run)
        assert (tis["dormant__gate"]["state"], tis["dormant"]["state"]) == ("skipped", "skipped")
        assert decisions(finished_run, "dormant__gate") == []

    def test_the_worker_path_admits_and_skips_as_before(self, finished_run):
        tis = task_instances(finished_run)
        assert (tis["on_worker__gate"]["state"], tis["on_worker"]["state"]) == ("success", "success")
        assert (tis["skipped_on_worker__gate"]["state"], tis["skipped_on_worker"]["state"]) == ("skipped", "skipped")
        # A gate on the worker path is exposed to Airflow 3.3's stale-executor-event race (see the
        # operations guide): a quick trigger can fail its first try, and its built-in retry judges again.
        # A try the race fails while its trigger waits never reaches execute_complete and records nothing.
        # The try that ended the gate recorded its decision, and every try that judged judged alike.
        for gate, result in (("on_worker__gate", "SATISFIED"), ("skipped_on_worker__gate", "UNSATISFIED")):
            tries = tis[gate]["try_number"]
            found = decisions(finished_run, gate)
            attempts = [attempt for _, _, attempt in found]
            assert ("task:up", result, tries) in found
            assert {(dep, res) for dep, res, _ in found} == {("task:up", result)}
            assert len(attempts) == len(set(attempts)) and set(attempts) <= set(range(1, tries + 1))
        assert consumed(finished_run, "on_worker") == [("task:up", tis["on_worker"]["try_number"])]

    def test_the_run_end_records_the_final_state_of_gates_no_worker_ran(self, finished_run):
        run_id, _, catalog_url, _ = finished_run
        found = rows(
            catalog_url,
            "SELECT t.task_id, r.state FROM la_task_run r JOIN la_task t ON t.id = r.task_pk "
            "WHERE t.dag_id = :dag AND r.run_id = :run",
            dag=DAG_ID,
            run=run_id,
        )
        states = {r["task_id"]: r["state"] for r in found}
        assert {g: states.get(g) for g in IN_TRIGGERER} == {
            "admitted__gate": "success",
            "skipped__gate": "skipped",
            "either__gate": "success",
            "dormant__gate": "skipped",
        }


class TestRelaxedGatesHandTheDecisionToAWorker:
    def test_a_gate_started_in_the_triggerer_resumes_on_a_worker_that_admits_and_records_bypassed(self, relaxed_run):
        tis = task_instances(relaxed_run)
        gate = tis["skipped__gate"]
        assert gate["queued_dttm"] is not None and gate["hostname"]  # resumed at execute_complete
        assert (gate["state"], tis["skipped"]["state"]) == ("success", "success")
        assert decisions(relaxed_run, "skipped__gate") == [("task:up", "BYPASSED", gate["try_number"])]
        assert consumed(relaxed_run, "skipped") == []
