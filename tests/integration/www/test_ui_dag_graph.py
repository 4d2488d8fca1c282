"""A DAG's dependencies as its tab draws them, read from the example DAGs as Airflow serializes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_leastaction.version_compat import dag_bag_class, dag_serializer_class
from airflow_leastaction.www.dag_graph import JudgedRun, build
from airflow_leastaction.www.declared import gates_of, parse_tasks

EXAMPLES = Path(__file__).resolve().parents[3] / "dags_examples"


@pytest.fixture(scope="module")
def serialized():
    """Every example DAG, serialized by Airflow as its DAG processor stores it."""
    bag = dag_bag_class()(str(EXAMPLES))
    assert not bag.import_errors, bag.import_errors
    serializer = dag_serializer_class()
    return {dag_id: serializer.to_dict(dag) for dag_id, dag in bag.dags.items()}


def graph_of(serialized, dag_id, decisions=None, *, internal=False):
    tasks = parse_tasks(serialized[dag_id])
    return build(tasks, gates_of(tasks), JudgedRun({}, decisions or {}), None, dag_id=dag_id, internal=internal)


def typed(graph):
    return sorted((e.parent, e.child, e.kind) for e in graph.typed_edges)


def test_run_conditions_are_drawn_into_the_task_they_admit_with_their_type(serialized):
    graph = graph_of(serialized, "run_conditions_pipeline")
    assert typed(graph) == [
        ("catalog:airflow/fx_rates_weekly.load_rates", "task:reconcile", "SUCCESS"),
        ("task:extract_east", "task:daily_summary", "SUCCESS"),
        ("task:extract_south", "task:daily_summary", "SUCCESS"),
        ("task:extract_west", "task:daily_summary", "SUCCESS"),
        ("task:load_orders", "task:alert_on_failure", "FAILURE"),
        ("task:load_orders", "task:publish_changes", "HAS_DATA"),
        ("task:load_orders", "task:reconcile", "SUCCESS"),
        ("task:load_refunds", "task:reconcile", "SUCCESS"),
    ]
    assert graph.nodes["task:reconcile"].condition == "N = 2 of 3"
    assert graph.nodes["task:daily_summary"].condition == "ANY of 3"
    # Gates and the run-outcome task are plumbing: hidden unless asked for.
    assert not any(k.endswith("__gate") or "leastaction_run_outcome" in k for k in graph.nodes)
    assert graph.hidden == 5
    shown = graph_of(serialized, "run_conditions_pipeline", internal=True)
    assert "task:reconcile__gate" in shown.nodes and shown.hidden == 0
    # Each box fits its label: nothing is cut at these lengths.
    assert all(n.box.shown == (n.box.lines[0], n.box.lines[1]) for n in graph.nodes.values())


def test_a_native_condition_is_drawn_from_the_decisions_it_recorded_in_the_judged_run(serialized):
    plain = graph_of(serialized, "run_conditions_pipeline")
    assert ("task:daily_summary", "task:cleanup", "airflow") in {(e.parent, e.child, e.kind) for e in plain.edges}
    row = {"dependency": "task:daily_summary", "dependency_type": "ALWAYS", "result": "SATISFIED", "reason": "ok"}
    judged = graph_of(serialized, "run_conditions_pipeline", {"cleanup": [row]})
    assert ("task:daily_summary", "task:cleanup", "ALWAYS") in typed(judged)
    assert len(judged.typed_edges) == 9


def test_a_sensors_parents_are_drawn_into_the_sensor(serialized):
    graph = graph_of(serialized, "orders_enriched")
    assert typed(graph) == [("catalog:sales-platform/orders_raw", "task:wait_for_orders_raw", "interval")]
    assert ("task:wait_for_orders_raw", "task:enrich", "airflow") in {(e.parent, e.child, e.kind) for e in graph.edges}


def test_dbt_requests_and_builds_are_drawn_through_the_queue(serialized):
    enqueue = graph_of(serialized, "dbt_ingest_work_orders")
    assert [(e.parent, e.kind) for e in enqueue.typed_edges] == [("task:enqueue_dbt_models", "requests")]
    worker = graph_of(serialized, "dbt_queue_worker")
    assert typed(worker) == [("dbt:field_ops", "task:drain_dbt_queue", "builds")]
