"""ANY on a real deployment: scheduler, dag-processor, triggerer and API server as separate processes
(LocalExecutor, PostgreSQL). The gate defers (no worker slot) while it waits, and the gated task starts
as soon as one upstream succeeded, while the others still run."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from harness.airflow_cluster import fresh_pg_database

from bench.bench_gate import latency_cluster, start_latency

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.integration]


@pytest.fixture(scope="module")
def cluster(pg_admin_url, tmp_path_factory):
    airflow_url, drop_airflow = fresh_pg_database(pg_admin_url, "la_rc_airflow")
    catalog_url, drop_catalog = fresh_pg_database(pg_admin_url, "la_rc_catalog")
    with latency_cluster(tmp_path_factory.mktemp("rc-cluster"), airflow_url, catalog_url) as running:
        running.catalog_url = catalog_url
        yield running
    drop_airflow()
    drop_catalog()


def gate_states(cluster, run_id: str, seen: set) -> bool:
    """Record the gate's states while the run goes on; done once the gated task has started."""
    states = {ti["task_id"]: ti["state"] for ti in cluster.task_instances("bench_gate_any", run_id)}
    seen.add(states.get("child__gate"))
    return states.get("child") not in (None, "scheduled", "queued")


class TestAnyOnARealDeployment:
    def test_any_waits_deferred_and_starts_before_the_slow_upstreams_finish(self, cluster):
        cluster.wait_for_dag("bench_gate_any")
        cluster.unpause("bench_gate_any")
        _, info = start_latency(cluster, "bench_gate_any", watch=gate_states)
        times = info["times"]
        assert "deferred" in info["seen"]  # waiting in the triggerer, not on a worker
        assert times["child"][0] == "success"
        assert times["child"][1] < times["slow_a"][2] and times["child"][1] < times["slow_b"][2]
        engine = sa.create_engine(cluster.catalog_url)
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT dependency, result FROM la_gate_decision WHERE dag_id = "
                                        "'bench_gate_any' ORDER BY dependency")).fetchall()
            eaten = conn.execute(sa.text("SELECT dependency FROM la_consumption WHERE dag_id = 'bench_gate_any'"
                                         )).scalars().all()
        engine.dispose()
        assert [tuple(r) for r in rows] == [("task:first", "SATISFIED"), ("task:slow_a", "UNSATISFIED"),
                                            ("task:slow_b", "UNSATISFIED")]
        assert eaten == ["task:first"]
