"""A catalog outage in a real deployment: separate scheduler, dag-processor, API server and triggerer
processes, Airflow's database on the shared PostgreSQL server, the catalog on a PostgreSQL server of
the test's own that is stopped and started again.

A sensor and a run-condition gate defer while no triggerer runs; the catalog stops; a triggerer starts
during the outage and a plain task finishes (its outcome is spooled). Nothing is admitted, nothing
fails and nothing is handed to a worker while the catalog is down; once it is back and the parent has
finished, both waits are released, every run succeeds, and the spooled outcome reaches the catalog.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select

from airflow_leastaction.catalog.schema import gate_decision, task, task_run
from airflow_leastaction.catalog.store import CatalogStore, TaskMeta
from airflow_leastaction.identity import TaskIdentity
from tests.helpers.airflow_cluster import AirflowCluster, fresh_pg_database
from tests.helpers.own_postgres import OwnPostgres

pytestmark = pytest.mark.postgres

DAGS = Path(__file__).resolve().parent / "outage_dags"
DAY = "2026-11-20T00:00:00+00:00"
PARENT_SLOT = dt.datetime.fromisoformat(DAY)
PARENT = TaskIdentity("outage_parent", "other-team")
RUN_TIMEOUT = 300


@pytest.fixture
def deployment(pg_admin_url, tmp_path):
    catalog_server = OwnPostgres()
    catalog_server.start()
    catalog_url = catalog_server.create_database("la_catalog")
    airflow_url, drop_airflow = fresh_pg_database(pg_admin_url, "la_e2e_outage")
    cluster = AirflowCluster(
        DAGS,
        sql_alchemy_conn=airflow_url,
        catalog_url=catalog_url,
        home=tmp_path / "home",
        components=("scheduler", "dag-processor", "api-server"),
        env={"AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False"},
    )
    try:
        with cluster:
            yield cluster, catalog_server, catalog_url
    finally:
        catalog_server.remove()
        drop_airflow()


def states(cluster: AirflowCluster, dag_id: str, run_id: str) -> dict[str, str]:
    return {ti["task_id"]: ti["state"] for ti in cluster.task_instances(dag_id, run_id)}


def trigger_logs(cluster: AirflowCluster) -> str:
    """What the triggers logged (Airflow keeps it beside each task's log)."""
    return "".join(p.read_text(errors="replace") for p in sorted((cluster.home / "logs").rglob("*.log.trigger.*")))


def test_waits_survive_a_catalog_outage_and_a_triggerer_started_during_it(deployment):
    cluster, catalog_server, catalog_url = deployment
    engine = create_engine(catalog_url)
    # The parent is running: the sensor waits for its slot, the gate for its run in progress.
    CatalogStore(engine).record_running(
        PARENT, PARENT_SLOT, meta=TaskMeta(cron="0 0 * * *", source="external"), run_id="parent-run"
    )
    runs = {}
    for dag_id in ("outage_sensor", "outage_gate"):
        cluster.unpause(dag_id)
        runs[dag_id] = cluster.trigger(dag_id, DAY)["dag_run_id"]
    waiting = {"outage_sensor": "wait", "outage_gate": "after_gate__gate"}
    cluster.wait_until(
        lambda: all(states(cluster, d, runs[d]).get(t) == "deferred" for d, t in waiting.items()),
        RUN_TIMEOUT,
        "the sensor and the gate to defer",
    )

    engine.dispose()
    catalog_server.stop()
    cluster.unpause("outage_plain")
    plain_run = cluster.trigger("outage_plain", DAY)["dag_run_id"]
    assert cluster.wait_for_run("outage_plain", plain_run, RUN_TIMEOUT)["state"] == "success"
    cluster._procs.append(cluster._spawn("triggerer", [sys.executable, "-m", "airflow", "triggerer"]))
    cluster.wait_until(
        lambda: all(
            said in trigger_logs(cluster)
            for said in ("unreachable (snapshot poll)", "cannot look, waiting for the catalog")
        ),
        RUN_TIMEOUT,
        "the triggerer to find the catalog down",
    )
    # No false admit, no false fail: both are still waiting in the triggerer.
    for dag_id, task_id in waiting.items():
        assert states(cluster, dag_id, runs[dag_id])[task_id] == "deferred"

    catalog_server.start()
    cluster.run_leastaction(
        "catalog",
        "report",
        "outage_parent",
        "--project",
        "other-team",
        "--slot",
        DAY,
        "--cron",
        "0 0 * * *",
        "--run-id",
        "parent-run",
    )
    for dag_id, run_id in runs.items():
        run = cluster.wait_for_run(dag_id, run_id, RUN_TIMEOUT)
        assert run["state"] == "success", states(cluster, dag_id, run_id)
    # Started in the triggerer during the outage, the gate waited there: no worker ever ran it.
    gate_logs = (cluster.home / "logs" / "dag_id=outage_gate").rglob("task_id=after_gate__gate/attempt=*")
    assert sorted(p.name for p in gate_logs if ".trigger." not in p.name) == []
    said = trigger_logs(cluster)
    assert said.count("not admitted yet: catalog unreachable") == 1, said  # once per change, not per poll
    assert said.count("cannot look, waiting for the catalog") == said.count("can look again") == 1, said

    with engine.connect() as conn:
        decided = set(conn.execute(select(gate_decision.c.dag_id, gate_decision.c.result)).all())
        finished = {
            r.name: r.state
            for r in conn.execute(select(task.c.name, task_run.c.state).join(task_run, task_run.c.task_pk == task.c.id))
        }
    engine.dispose()
    assert decided == {("outage_sensor", "SATISFIED"), ("outage_gate", "SATISFIED")}
    # The plain task finished during the outage: its spooled outcome was replayed.
    assert finished["outage_plain.plain"] == "success"
