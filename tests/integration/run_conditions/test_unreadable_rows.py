"""HAS_DATA on a success whose rows written could not be read: real DAG runs (``dag.test()``) on each
catalog backend. The upstream pushes its count as the XCom; the test makes the listener's read of that XCom
fail for the upstream alone (Airflow's API cannot be made to fail on demand in a real run). The consumer is
never skipped: its gate waits, and at its ``max_wait`` fails, naming the upstream and the error. A readable
0 still skips the consumer, as before."""

from __future__ import annotations

import pytest

from airflow_leastaction.refs import airflow_task
from tests.helpers.run_conditions import day, decisions, states

API_AWAY = "the API server cannot be reached"


@pytest.fixture
def unreadable_up(monkeypatch):
    """The listener's reads of task ``up``'s XCom raise; every other task's read as usual."""
    from airflow_leastaction import rows

    read = rows._read_pushed
    tries = []

    def failing_for_up(ti):
        if ti.task_id == "up":
            tries.append(ti.task_id)
            raise ConnectionError(API_AWAY)
        return read(ti)

    monkeypatch.setattr(rows, "_read_pushed", failing_for_up)
    monkeypatch.setattr(rows, "READ_PAUSE", 0.0)
    return tries


def slot_of_up(store, dag_id: str, n: int):
    _, slots = store.snapshot([(airflow_task(dag_id, "up"), day(n))])
    return [(s.state, s.rows_written, s.rows_error) for s in slots]


def test_a_consumer_of_rows_that_could_not_be_read_is_not_skipped_its_gate_fails_naming_the_error(
    rc_catalog_any, run_dag, unreadable_up, capfd, caplog
):
    run = run_dag("rc_has_data_pushed_five_rows", day(2))
    got = states(run)
    assert got["up"] == "success"
    assert got["child__gate"] == "failed"
    assert got["child"] == "upstream_failed"  # never skipped: the run says something went wrong
    assert len(unreadable_up) == 3  # the read was tried three times before its error was recorded
    [(state, rows_written, rows_error)] = slot_of_up(rc_catalog_any, "rc_has_data_pushed_five_rows", 2)
    assert (state, rows_written) == ("success", None)
    assert rows_error == f"ConnectionError: {API_AWAY}"
    out, err = capfd.readouterr()
    said = out + err + caplog.text
    assert "waited its max_wait for rows written that could not be read" in said
    assert (
        f"up (HAS_DATA): upstream succeeded but its rows written could not be read (ConnectionError: {API_AWAY})"
        in said
    )
    assert decisions(rc_catalog_any, "rc_has_data_pushed_five_rows", "child__gate") == []  # no verdict recorded


def test_a_readable_count_of_zero_still_skips_the_consumer(rc_catalog_any, run_dag):
    run = run_dag("rc_has_data_pushed_zero_rows", day(2))
    assert states(run)["child"] == "skipped"
    assert slot_of_up(rc_catalog_any, "rc_has_data_pushed_zero_rows", 2) == [("success", 0, None)]
    [decision] = decisions(rc_catalog_any, "rc_has_data_pushed_zero_rows", "child__gate")
    assert "wrote 0 rows" in decision["reason"]


def test_a_readable_count_satisfies_has_data_with_no_error_recorded(rc_catalog_any, run_dag):
    run = run_dag("rc_has_data_pushed_five_rows", day(3))
    assert states(run)["child"] == "success"
    assert slot_of_up(rc_catalog_any, "rc_has_data_pushed_five_rows", 3) == [("success", 5, None)]
