"""Each dbt queue batch a drain builds is an OpenLineage run event (the real client writing to a file),
a child of the drain task's run, naming the models it built as its outputs and in its facet, valid against
the schema shipped in the package."""

from __future__ import annotations

import pytest

from airflow_leastaction.catalog.engine import get_engine
from tests.helpers.dbt_queue import DBT_ENV
from tests.helpers.lineage import ROOT, lineage_env, read_events, run_python, validate

pytestmark = pytest.mark.dbt

FACT = "model.field_ops.fact_project_labor"
QUEUED = {
    "model.field_ops.stg_field_ops__work_orders",
    "model.field_ops.dim_project",
    "model.field_ops.fact_project_labor",
    "model.field_ops.agg_labor_history",
}

RUN_DRAIN = """
    import datetime as dt
    from airflow_leastaction.version_compat import dag_bag_class
    DagBag = dag_bag_class()
    bag = DagBag("{dags}")
    assert not bag.import_errors, bag.import_errors
    when = dt.datetime(2026, 11, 29, 9, tzinfo=dt.timezone.utc)
    assert bag.get_dag("dbt_ingest_work_orders").test(logical_date=when).state == "success"
    drains = DagBag("{drains}") if "{drains}" else bag
    assert drains.get_dag("{drain}").test(logical_date=when).state == "{drain_state}"
"""


def drained_batches(dbt_project, sqlite_url, tmp_path, drain="dbt_queue_worker", drains="", ends="success") -> list:
    """The example ingest DAG and a drain DAG (the example's, or one of the file ``drains``) run, the drain
    ending ``ends``, the provider writing events to a file: the batch events."""
    get_engine(sqlite_url, migrate=True)
    events = tmp_path / "events.jsonl"
    env = {
        **lineage_env(events, sqlite_url),
        **DBT_ENV,
        "FIELD_OPS_DBT_PROJECT_DIR": str(dbt_project),
        "FIELD_OPS_DRAIN_MAX_WAIT_MINUTES": "0",
    }
    script = RUN_DRAIN.format(dags=ROOT / "dags_examples", drains=drains, drain=drain, drain_state=ends)
    run_python(script, env, timeout=1800)  # a bound for a hung run only: it runs dbt several times
    return [e for e in read_events(events) if "leastaction_dbtBatch" in e["run"]["facets"]]


def test_each_dbt_batch_is_a_run_event_naming_the_models_it_built(airflow_db, dbt_project, sqlite_url, tmp_path):
    batches = drained_batches(dbt_project, sqlite_url, tmp_path)
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
        assert event["eventType"] == "COMPLETE" and "errorMessage" not in event["run"]["facets"]
        built |= set(facet["built"])
        reused |= set(facet["reused"])
    # What the ingest queued (its selector's models; views are not queued), each built or reused once.
    assert built | reused == QUEUED and not built & reused


def test_a_dbt_batch_with_a_failed_model_is_a_fail_event_with_dbts_error(airflow_db, dbt_project, sqlite_url, tmp_path):
    sql = dbt_project / "models" / "marts" / "fact_project_labor.sql"
    sql.write_text(sql.read_text().replace("sum(t.hours) as hours", "sum(t.no_such_column) as hours"))
    # A drain that does not retry its task (the example's waits out a retry delay): it fails, the model failed.
    batches = drained_batches(
        dbt_project,
        sqlite_url,
        tmp_path,
        "dq_drain_nothing_held",
        str(ROOT / "tests" / "dags" / "dbt_queue_cases.py"),
        ends="failed",
    )
    failing = [e for e in batches if FACT in e["run"]["facets"]["leastaction_dbtBatch"]["failed"]]
    assert [e["eventType"] for e in failing] == ["FAIL"]
    error = failing[0]["run"]["facets"]["errorMessage"]
    assert error["message"].startswith(f"dbt batch {failing[0]['run']['facets']['leastaction_dbtBatch']['batchId']} ")
    head, detail = error["message"].split("\n", 1)
    assert FACT in head.split("; failed: ")[1] and "no_such_column" in detail  # the model, then dbt's error
    assert FACT not in {o["name"] for o in failing[0]["outputs"]}
