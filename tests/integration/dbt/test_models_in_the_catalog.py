"""dbt models as catalog tasks: each pass, built or reused, completes its slot, so a ParentIntervalSensor in a
real ``dag.test()`` run can wait on a model; failures fail the slot; the model declares its inputs."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.schema import gate_decision, task, task_run
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.dbt.queue_store import QueueStore
from airflow_leastaction.identity import TaskIdentity
from tests.helpers.dbt_queue import LOADERS, ROOT, hour, land, make_worker, request

pytestmark = [pytest.mark.dbt, pytest.mark.slow]
DIM = TaskIdentity("dim_project", "field_ops")


@pytest.fixture
def cases(airflow_db, catalog_url, use_catalog):
    from airflow_leastaction.version_compat import dag_bag_class

    DagBag = dag_bag_class()

    use_catalog(catalog_url)
    bag = DagBag(str(ROOT / "tests" / "dags" / "dbt_queue_cases.py"))
    assert not bag.import_errors, bag.import_errors
    return bag


def slots_of(engine, identity: TaskIdentity) -> dict:
    with engine.connect() as conn:
        rows = conn.execute(
            select(task_run.c.slot, task_run.c.state, task_run.c.output_revision, task_run.c.run_id)
            .join(task, task.c.id == task_run.c.task_pk)
            .where(task.c.name == identity.name, task.c.project == identity.project)
        ).all()
    return {r.slot: (r.state, r.output_revision, r.run_id) for r in rows}


def test_a_reused_model_completes_its_slot_and_is_a_valid_parent_for_a_sensor_in_a_real_run(
    cases, catalog_url, runner, plans
):
    queue = QueueStore(get_engine(catalog_url))
    catalog = CatalogStore(queue.engine)
    for loader in LOADERS:
        land(catalog, loader, 0)
    request(queue, plans["A"], 0)
    request(queue, plans["B"], 0)
    make_worker(queue, runner).drain()
    first = next(r for r in queue.history("field_ops") if r["unique_id"] == "model.field_ops.dim_project")
    assert slots_of(queue.engine, DIM) == {hour(0): ("success", 1, f"dbt-build:{first['id']}")}
    row = catalog.get_task(DIM)
    assert row["source"] == "dbt" and row["dag_id"] is None
    assert sorted(p["name"] for p in json.loads(row["parents"])) == [
        "reference_data",
        "stg_field_ops__time_entries",
        "stg_field_ops__work_orders",
    ]

    request(queue, plans["A"], 1)  # nothing new landed: the next hour's request reuses every model
    request(queue, plans["B"], 1)
    report = make_worker(queue, runner).drain().as_dict()
    assert "model.field_ops.dim_project" in report["reused"] and report["built"] == []
    # The reuse completes the hour's slot as an output of the build it stands on.
    assert slots_of(queue.engine, DIM)[hour(1)] == ("success", 1, f"dbt-build:{first['id']}")

    run = cases.get_dag("dq_reads_dim_project").test(logical_date=hour(1))
    assert run.state == "success"
    with queue.engine.connect() as conn:
        decision = conn.execute(
            select(gate_decision).where(gate_decision.c.dag_id == "dq_reads_dim_project")
        ).mappings().one()  # fmt: skip
    assert (decision["dependency"], decision["result"]) == ("catalog:field_ops/dim_project", "SATISFIED")
    assert (decision["upstream_slot"], decision["upstream_revision"]) == (hour(1), 1)


def test_a_model_that_failed_fails_its_slot_and_its_downstream_slot_says_upstream_failed(
    sqlite_url, runner, plans, dbt_project
):
    queue = QueueStore(get_engine(sqlite_url, migrate=True))
    sql = dbt_project / "models" / "marts" / "fact_project_labor.sql"
    sql.write_text(sql.read_text().replace("sum(t.hours) as hours", "sum(t.no_such_column) as hours"))
    request(queue, plans["A"], 3)
    make_worker(queue, runner).drain()
    assert slots_of(queue.engine, TaskIdentity("fact_project_labor", "field_ops"))[hour(3)][0] == "failed"
    assert slots_of(queue.engine, TaskIdentity("agg_labor_history", "field_ops"))[hour(3)][0] == "upstream_failed"
    assert slots_of(queue.engine, DIM)[hour(3)][0] == "success"
