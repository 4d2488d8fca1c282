"""ANY on a real deployment: scheduler, dag-processor, triggerer and API server as separate processes
(LocalExecutor, PostgreSQL). The gate defers (no worker slot) while it waits, and the gated task starts
as soon as one upstream succeeded, while the others still run."""

from __future__ import annotations

import textwrap

import pytest
import sqlalchemy as sa

from tests.helpers.airflow_cluster import fresh_pg_database
from tests.helpers.gate_latency import latency_cluster, start_latency, task_times

pytestmark = pytest.mark.postgres


FAILURE_DAG = textwrap.dedent("""
    import time
    import pendulum
    from airflow.sdk import DAG, task
    from airflow_leastaction.run_conditions import failure, run_condition, success

    with DAG("rc_cluster_failure", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
             catchup=False):
        @task
        def load():
            raise RuntimeError("load fails on purpose")

        @task
        def other():
            time.sleep(6)

        @task
        def report():
            return "never"

        @task
        def alert():
            return "paged"

        loaded = load()
        other()
        run_condition(report(), success(loaded))
        run_condition(alert(), failure(loaded))
""")


@pytest.fixture(scope="module")
def cluster(pg_admin_url, tmp_path_factory):
    airflow_url, drop_airflow = fresh_pg_database(pg_admin_url, "la_rc_airflow")
    catalog_url, drop_catalog = fresh_pg_database(pg_admin_url, "la_rc_catalog")
    with latency_cluster(
        tmp_path_factory.mktemp("rc-cluster"), airflow_url, catalog_url, {"rc_cluster_failure.py": FAILURE_DAG}
    ) as running:
        running.catalog_url = catalog_url
        yield running
    drop_airflow()
    drop_catalog()


def audit_of(cluster, dag_id: str) -> tuple[list[tuple], list[tuple]]:
    """The run's decisions (task, dependency, result) by dependency, and its consumption (task, dependency)."""
    engine = sa.create_engine(cluster.catalog_url)
    try:
        with engine.connect() as conn:
            decided = conn.execute(
                sa.text(
                    "SELECT task_id, dependency, result FROM la_gate_decision WHERE dag_id = :dag ORDER BY dependency"
                ),
                {"dag": dag_id},
            ).fetchall()
            eaten = conn.execute(
                sa.text("SELECT task_id, dependency FROM la_consumption WHERE dag_id = :dag ORDER BY dependency"),
                {"dag": dag_id},
            ).fetchall()
    finally:
        engine.dispose()
    return [tuple(r) for r in decided], [tuple(r) for r in eaten]


def any_shape_ran(cluster, dag_id: str) -> dict:
    """One run of an ANY shape; its task times, after checking the child started before the slow upstreams ended."""
    cluster.wait_for_dag(dag_id)
    cluster.unpause(dag_id)
    latency, info = start_latency(cluster, dag_id)
    assert latency is not None, info
    times = info["times"]
    assert times["child"][0] == "success"
    assert times["child"][1] < times["slow_a"][2] and times["child"][1] < times["slow_b"][2]
    return info


class TestAnyOnARealDeployment:
    def test_any_waits_deferred_and_starts_before_the_slow_upstreams_finish(self, cluster):
        info = any_shape_ran(cluster, "bench_gate_any")
        assert "deferred" in info["seen"]  # waiting in the triggerer, not on a worker
        decided, eaten = audit_of(cluster, "bench_gate_any")
        assert decided == [
            ("child__gate", "task:first", "SATISFIED"),
            ("child__gate", "task:slow_a", "UNSATISFIED"),
            ("child__gate", "task:slow_b", "UNSATISFIED"),
        ]
        assert eaten == [("child", "task:first")]

    def test_a_native_any_starts_by_its_trigger_rule_and_records_its_decisions_when_it_starts(self, cluster):
        info = any_shape_ran(cluster, "bench_gate_any_native")
        assert "child__gate" not in info["times"]  # no gate task: the trigger rule starts the child
        decided, eaten = audit_of(cluster, "bench_gate_any_native")
        # Judged when the task's own process starts it, from the states at that instant: the driver releases
        # the slow upstreams once Airflow marks the child running, so either may have finished by then.
        found = {dep: result for task_id, dep, result in decided if task_id == "child"}
        assert len(decided) == 3 and found["task:first"] == "SATISFIED"
        assert {found["task:slow_a"], found["task:slow_b"]} <= {"SATISFIED", "UNSATISFIED"}
        assert eaten == sorted(("child", d) for d, r in found.items() if r == "SATISFIED")

    def test_a_failure_waits_for_the_run_then_skips_its_dependents_runs_the_alert_and_fails_the_run(self, cluster):
        cluster.wait_for_dag("rc_cluster_failure")
        cluster.unpause("rc_cluster_failure")
        run = cluster.trigger("rc_cluster_failure")
        seen: set = set()

        def watch():
            seen.add(
                next(
                    (
                        ti["state"]
                        for ti in cluster.task_instances("rc_cluster_failure", run["dag_run_id"])
                        if ti["task_id"] == "report__gate"
                    ),
                    None,
                )
            )
            return "skipped" in seen

        cluster.wait_until(watch, 120, "report__gate skipped", 0.3)
        assert cluster.wait_for_run("rc_cluster_failure", run["dag_run_id"])["state"] == "failed"
        times = task_times(cluster, "rc_cluster_failure", run["dag_run_id"])
        assert "deferred" in seen
        assert {t: times[t][0] for t in ("load", "other", "report", "alert", "leastaction_run_outcome")} == {
            "load": "failed",
            "other": "success",
            "report": "skipped",
            "alert": "success",
            "leastaction_run_outcome": "failed",
        }
        assert times["report__gate"][2] >= times["other"][2]  # not skipped while `other` still ran
