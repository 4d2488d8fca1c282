"""Each dbt queue batch a drain builds is an OpenLineage run event (the real client writing to a file),
a child of the drain task's run, naming the models it built as its outputs and in its facet, valid against
the schema shipped in the package."""

from __future__ import annotations

import pytest

from airflow_leastaction.catalog.engine import get_engine
from tests.helpers.dbt_queue import DBT_ENV
from tests.helpers.lineage import ROOT, lineage_env, read_events, run_python, validate

pytestmark = pytest.mark.dbt

QUEUED = {
    "model.field_ops.stg_field_ops__work_orders",
    "model.field_ops.dim_project",
    "model.field_ops.fact_project_labor",
    "model.field_ops.agg_labor_history",
}

RUN_DRAIN = f"""
    import datetime as dt
    from airflow_leastaction.version_compat import dag_bag_class
    DagBag = dag_bag_class()
    bag = DagBag("{ROOT / "dags_examples"}")
    assert not bag.import_errors, bag.import_errors
    when = dt.datetime(2026, 11, 29, 9, tzinfo=dt.timezone.utc)
    assert bag.get_dag("dbt_ingest_work_orders").test(logical_date=when).state == "success"
    assert bag.get_dag("dbt_queue_worker").test(logical_date=when).state == "success"
"""


def test_each_dbt_batch_is_a_run_event_naming_the_models_it_built(airflow_db, dbt_project, sqlite_url, tmp_path):
    get_engine(sqlite_url, migrate=True)
    events = tmp_path / "events.jsonl"
    env = {
        **lineage_env(events, sqlite_url),
        **DBT_ENV,
        "FIELD_OPS_DBT_PROJECT_DIR": str(dbt_project),
        "FIELD_OPS_DRAIN_MAX_WAIT_MINUTES": "0",
    }
    run_python(RUN_DRAIN, env)
    batches = [e for e in read_events(events) if "leastaction_dbtBatch" in e["run"]["facets"]]
    assert batches
    built, reused = set(), set()
    for event in batches:
        facet = event["run"]["facets"]["leastaction_dbtBatch"]
        validate(facet, "LeastActionDbtBatchRunFacet")
        assert event["job"] == {
            **event["job"],
            "namespace": "leastaction-tests",
            "name": "dbt_queue_worker.drain_dbt_queue.dbt_batch",
        }
        parent = event["run"]["facets"]["parent"]
        assert parent["job"]["name"] == "dbt_queue_worker.drain_dbt_queue"
        assert {o["name"] for o in event["outputs"]} == set(facet["built"])
        built |= set(facet["built"])
        reused |= set(facet["reused"])
    # What the ingest queued (its selector's models; views are not queued), each built or reused once.
    assert built | reused == QUEUED and not built & reused
