"""Airflow as separate processes on PostgreSQL, with the catalog on PostgreSQL too."""

from __future__ import annotations

import textwrap

import pytest
import sqlalchemy as sa

from harness.airflow_cluster import AirflowCluster, fresh_pg_database

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.integration]

SMOKE_DAG = textwrap.dedent(
    """
    import pendulum
    from airflow.sdk import DAG, task

    with DAG("cluster_smoke", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False):
        @task
        def load():
            return 1

        load()
    """
)


@pytest.fixture(scope="module")
def databases(pg_admin_url):
    airflow_url, drop_airflow = fresh_pg_database(pg_admin_url, "la_e2e_airflow")
    catalog_url, drop_catalog = fresh_pg_database(pg_admin_url, "la_e2e_catalog")
    yield airflow_url, catalog_url
    drop_airflow()
    drop_catalog()


class TestAirflowCluster:
    def test_task_outcome_reaches_the_postgres_catalog_and_shutdown_leaves_no_process(self, databases, tmp_path):
        dags = tmp_path / "dags"
        dags.mkdir()
        (dags / "cluster_smoke.py").write_text(SMOKE_DAG)
        airflow_url, catalog_url = databases
        cluster = AirflowCluster(dags, sql_alchemy_conn=airflow_url, catalog_url=catalog_url, home=tmp_path / "home")
        with cluster:
            cluster.unpause("cluster_smoke")
            run = cluster.trigger("cluster_smoke")
            assert cluster.wait_for_run("cluster_smoke", run["dag_run_id"])["state"] == "success"
        engine = sa.create_engine(catalog_url)
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT t.name, r.state, r.output_revision FROM la_task t "
                                        "JOIN la_task_run r ON r.task_pk = t.id")).fetchall()
        engine.dispose()
        assert [tuple(r) for r in rows] == [("cluster_smoke.load", "success", 1)]
        assert cluster.leftover_pids() == []
