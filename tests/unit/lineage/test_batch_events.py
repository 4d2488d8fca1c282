"""A dbt batch's OpenLineage run state: COMPLETE only when it built everything; FAIL when a model failed or
was not built; ABORT when its worker lost the environment; an error facet says what went wrong."""

from __future__ import annotations

import json

import pytest
from openlineage.client.event_v2 import Job
from openlineage.client.facet_v2 import parent_run
from openlineage.client.serde import Serde

from airflow_leastaction.lineage.facets import batch_event, batch_run_state

A, B = "model.shop.a", "model.shop.b"
PARENT = parent_run.ParentRunFacet(
    run=parent_run.Run(runId="01890000-0000-7000-8000-000000000000"),
    job=parent_run.Job(namespace="ns", name="dag.drain"),
)
JOB = Job(namespace="ns", name="dag.drain.dbt_batch")


def batch(status: str, outcomes: dict[str, str], settled: dict[str, str], message: str | None = None) -> dict:
    return {"batch_id": "b-1", "status": status, "outcomes": outcomes, "settled": settled, "reused": [],
            "message": message}  # fmt: skip


def emitted(report_batch: dict) -> dict:
    return json.loads(Serde.to_json(batch_event(report_batch, "prod", PARENT, JOB)))


@pytest.mark.parametrize(
    ("status", "state"),
    [("success", "COMPLETE"), ("partial", "FAIL"), ("failed", "FAIL"), ("abandoned", "ABORT"), ("new", "FAIL")],
)
def test_only_a_batch_that_built_everything_completes(status, state):
    assert batch_run_state(status).value == state


def test_a_batch_with_a_failed_model_is_a_fail_event_naming_the_model_and_dbts_error():
    event = emitted(batch("partial", {A: "success", B: "error"}, {A: "done", B: "failed"}, f"{B}: relation missing"))
    assert event["eventType"] == "FAIL"
    error = event["run"]["facets"]["errorMessage"]
    assert error["message"] == f"dbt batch b-1 partial; failed: {B}; not built: {B}\n{B}: relation missing"
    assert error["programmingLanguage"] == "python"
    assert [o["name"] for o in event["outputs"]] == [A]  # what it did build is still an output


def test_an_abandoned_batch_is_an_abort_event_naming_what_it_did_not_build():
    event = emitted(batch("abandoned", {A: "success", B: "not_run"}, {A: "done", B: "pending"}, "lease lost"))
    assert event["eventType"] == "ABORT"
    assert event["run"]["facets"]["errorMessage"]["message"] == f"dbt batch b-1 abandoned; not built: {B}\nlease lost"


def test_a_batch_that_built_everything_completes_without_an_error_facet():
    event = emitted(batch("success", {A: "success"}, {A: "done"}))
    assert event["eventType"] == "COMPLETE" and "errorMessage" not in event["run"]["facets"]
