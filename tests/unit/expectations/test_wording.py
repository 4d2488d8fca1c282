"""An expectation in one line and as JSON. Pure logic: no Airflow, no database."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from airflow_leastaction.expectations.estimate import Expectation
from airflow_leastaction.expectations.wording import expectation_json, expectation_line

UTC = dt.UTC
SLOT = dt.datetime(2024, 3, 4, tzinfo=UTC)
NOW = SLOT + dt.timedelta(hours=1)


def found(status, median=None, p90=None, reason="", path=()) -> Expectation:
    return Expectation("a/b@x", "a/b", SLOT, status, median, p90, path, reason, 7, 1)


@pytest.mark.parametrize(
    ("expectation", "zone", "line"),
    [
        (
            found("waiting", SLOT + dt.timedelta(hours=5, minutes=40), SLOT + dt.timedelta(hours=6, minutes=10),
                  "waiting on ingest/orders (usually done 04:55, not started)"),
            UTC,
            "expected 05:40, p90 06:10, waiting on ingest/orders (usually done 04:55, not started)",
        ),
        (
            found("running", SLOT + dt.timedelta(hours=5, minutes=40), SLOT + dt.timedelta(hours=30), "running"),
            ZoneInfo("Europe/Paris"),
            "expected 06:40, p90 03-05 07:00, running",
        ),
        (found("no_estimate", reason="no estimate: 2 runs"), UTC, "no estimate: 2 runs"),
        (found("complete", SLOT, SLOT, "done at 00:00"), UTC, "done at 00:00"),
    ],
)  # fmt: skip
def test_the_line_leads_with_the_expected_times_unless_there_are_none(expectation, zone, line):
    assert expectation_line(expectation, zone, NOW) == line


def test_the_json_names_instants_in_utc_and_the_critical_path_by_task_and_slot():
    paris = ZoneInfo("Europe/Paris")
    median = dt.datetime(2024, 3, 4, 6, 40, tzinfo=paris)
    got = expectation_json(found("waiting", median, median, "r", ("x/y@2024-03-04T00:00:00+00:00",)))
    assert got == {
        "task": "a/b",
        "slot": "2024-03-04T00:00:00+00:00",
        "status": "waiting",
        "median": "2024-03-04T05:40:00+00:00",
        "p90": "2024-03-04T05:40:00+00:00",
        "reason": "r",
        "critical_path": [{"task": "x/y", "slot": "2024-03-04T00:00:00+00:00"}],
        "runs": 7,
        "skewed": 1,
    }
