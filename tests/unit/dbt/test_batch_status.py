"""A batch's status: one closed set, written as the batch table stores it, and how a finished batch ended."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_leastaction.dbt.schema import BatchStatus, dbt_batch
from airflow_leastaction.lineage.facets import batch_run_state


def test_a_batch_is_running_or_ended_success_partial_failed_or_abandoned():
    assert [s.value for s in BatchStatus] == ["running", "success", "partial", "failed", "abandoned"]


def test_every_status_fits_the_batch_tables_status_column():
    width = dbt_batch.c.status.type.length
    assert all(len(s.value) <= width for s in BatchStatus)


@given(st.integers(0, 50).flatmap(lambda asked: st.tuples(st.integers(0, asked), st.just(asked))))
def test_a_batch_succeeds_when_it_built_every_model_fails_when_none_and_is_partial_between(case):
    built, asked = case
    expected = "success" if built == asked else ("failed" if built == 0 else "partial")
    assert BatchStatus.of(built, asked) == expected


@pytest.mark.parametrize(
    ("status", "state"),
    [("success", "COMPLETE"), ("abandoned", "ABORT"), ("partial", "FAIL"), ("failed", "FAIL"), ("running", "FAIL")],
)
def test_every_status_has_its_lineage_run_state(status, state):
    assert batch_run_state(BatchStatus(status)).name == state
