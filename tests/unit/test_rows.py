"""Reading a task's rows written back from its XCom (``pushed_rows``): "nothing pushed" and "not a count"
are None; a read that raises is retried, then reported as an error, never as None. The task instance is a
stand-in here: a failing XCom read cannot be caused on demand in a real run."""

from __future__ import annotations

import pytest

from airflow_leastaction import rows
from airflow_leastaction.exceptions import RowsUnreadableError


class StandInTI:
    """What ``pushed_rows`` uses of a task instance: its names and ``xcom_pull``, which answers from a list
    (an exception in it is raised)."""

    dag_id, task_id, run_id, map_index = "sales", "load", "manual__1", -1

    def __init__(self, *answers):
        self.answers = list(answers)
        self.pulls = 0

    def xcom_pull(self, **kwargs):
        self.pulls += 1
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer


@pytest.fixture
def pauses():
    waited: list[float] = []
    return waited


@pytest.mark.parametrize(("pushed", "expected"), [(None, None), ([], None), (7, 7), (0, 0), ("lots", None), (-1, None)])
def test_what_was_pushed_is_read_once_a_count_or_none(pushed, expected, pauses):
    ti = StandInTI(pushed)
    assert rows.pushed_rows(ti, pause=pauses.append) == expected
    assert (ti.pulls, pauses) == (1, [])


def test_a_read_that_fails_once_is_retried_after_a_short_pause(pauses):
    ti = StandInTI(ConnectionError("supervisor hiccup"), 12)
    assert rows.pushed_rows(ti, pause=pauses.append) == 12
    assert (ti.pulls, pauses) == (2, [rows.READ_PAUSE])


def test_a_read_that_keeps_failing_is_reported_as_an_error_never_as_no_rows(pauses):
    ti = StandInTI(*[ConnectionError("the API server cannot be reached\nsecond line")] * rows.READ_TRIES)
    with pytest.raises(RowsUnreadableError) as raised:
        rows.pushed_rows(ti, pause=pauses.append)
    assert raised.value.task == "sales.load"
    assert raised.value.why == "ConnectionError: the API server cannot be reached"  # one line
    assert ti.pulls == rows.READ_TRIES == 3
    assert pauses == [rows.READ_PAUSE, 2 * rows.READ_PAUSE]  # backoff doubles


def test_reported_rows_take_the_count_reported_in_this_process_without_reading_the_xcom():
    ti = StandInTI(ConnectionError("never asked"))
    ti.xcom_push = lambda **kwargs: None
    rows.report_rows_written(3, ti=ti)
    assert rows.reported_rows(ti) == 3 and ti.pulls == 0
