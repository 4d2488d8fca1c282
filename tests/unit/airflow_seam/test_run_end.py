"""Which final states of a finished run the catalog still needs, and a mapped task's state as a whole."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_leastaction.airflow_seam.run_end import TaskOutcome, mapped_task_state, outcomes_to_record, run_outcomes
from airflow_leastaction.run_conditions.latest_run import RunRecord

STATES = [None, "scheduled", "running", "up_for_retry", "success", "failed", "skipped", "upstream_failed", "removed"]
SLOT = dt.datetime(2026, 11, 23, tzinfo=dt.UTC)


def record(state: str, run_id: str = "r1") -> RunRecord:
    return RunRecord(1, 1, SLOT, run_id, state, 1 if state == "success" else 0, None, None, None)


@given(st.lists(st.sampled_from(STATES), max_size=6))
def test_a_mapped_task_is_done_only_when_every_map_index_is(states):
    kept = [s for s in states if s != "removed"]
    whole = mapped_task_state(states)
    if not kept or any(s not in {"success", "failed", "skipped", "upstream_failed"} for s in kept):
        assert whole is None
    elif all(s == "success" for s in kept):
        assert whole == "success"
    elif "failed" in kept:
        assert whole == "failed"
    elif "upstream_failed" in kept:
        assert whole == "upstream_failed"
    else:
        assert whole == "skipped"


def test_every_finished_task_and_each_mapped_task_as_a_whole_is_an_outcome():
    final = [
        TaskOutcome("a", -1, "success"),
        TaskOutcome("b", -1, "running"),
        TaskOutcome("m", 0, "success"),
        TaskOutcome("m", 1, "success", attempt=2),
        TaskOutcome("gone", -1, "removed"),
    ]
    assert run_outcomes(final) == [
        TaskOutcome("a", -1, "success"),
        TaskOutcome("m", 0, "success"),
        TaskOutcome("m", 1, "success", 2),
        TaskOutcome("m", -1, "success", 2),
    ]


@pytest.mark.parametrize(
    "outcome, recorded, mapped, wanted",
    [
        (TaskOutcome("t", -1, "skipped"), None, (), True),  # skipped by the scheduler: no record at all
        (TaskOutcome("t", -1, "upstream_failed"), record("success", "r0"), (), True),  # an older run's record
        (TaskOutcome("t", -1, "skipped"), record("skipped"), (), False),  # already there
        (TaskOutcome("t", -1, "failed"), record("running"), (), True),  # the worker died before reporting
        (TaskOutcome("t", -1, "success"), None, (), True),  # completed without a worker (empty task)
        (TaskOutcome("t", -1, "success"), record("running"), (), False),  # the worker's report carries the rows
        (TaskOutcome("m", -1, "success"), record("running"), ("m",), True),  # a mapped task as a whole
        (TaskOutcome("m", -1, "success"), record("success"), ("m",), False),
    ],
)
def test_only_what_the_catalog_lacks_for_this_run_is_recorded(outcome, recorded, mapped, wanted):
    key = (outcome.task_id, outcome.map_index)
    assert (outcomes_to_record([outcome], {key: recorded}, "r1", mapped) == [outcome]) is wanted
