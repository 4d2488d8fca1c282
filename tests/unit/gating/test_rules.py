"""The ALL/ANY/N rule and the HAS_DATA rule of the shared gate engine: one definition each."""

import pytest

from airflow_leastaction.exceptions import CountWithoutNError, InvalidCountError, RunConditionError
from airflow_leastaction.gating.engine import RunCondition, check_condition
from airflow_leastaction.gating.has_data import has_data


@pytest.mark.parametrize(
    ("kind", "count", "total", "error"),
    [
        ("SOME", None, 2, RunConditionError),
        ("ANY", 1, 2, CountWithoutNError),
        ("N", None, 2, InvalidCountError),
        ("N", 0, 2, InvalidCountError),
        ("N", True, 2, InvalidCountError),
        ("N", 3, 2, InvalidCountError),
    ],
)
def test_a_bad_run_condition_is_rejected_naming_the_dag_and_task(kind, count, total, error):
    with pytest.raises(error, match="DAG 'sales' task 'report'"):
        check_condition("sales", "report", kind, count, total)


@pytest.mark.parametrize(
    ("kind", "count", "total", "expected"),
    [(None, None, 0, ("ALL", None)), ("any", None, 3, ("ANY", None)), ("N", 2, 2, ("N", 2))],
)
def test_a_valid_run_condition_is_returned_upper_cased(kind, count, total, expected):
    assert check_condition("sales", "report", kind, count, total) == expected


def test_a_run_condition_built_directly_follows_the_same_rule():
    assert RunCondition("n", 2) == RunCondition("N", 2)
    with pytest.raises(CountWithoutNError, match="run condition: a count"):
        RunCondition("ALL", 2)


@pytest.mark.parametrize(("rows", "missing"), [(None, "reported no rows written"), (0, "wrote 0 rows"), (1, None)])
def test_has_data_needs_at_least_one_row_written(rows, missing):
    check = has_data(rows)
    assert (None if check.met else check.what) == missing
