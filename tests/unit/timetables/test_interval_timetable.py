"""IntervalCronTimetable on its own: what it tells the UI, how it round-trips, and the intervals it gives."""

from __future__ import annotations

import datetime as dt

import pendulum
import pytest
from airflow.timetables.base import DataInterval

from airflow_leastaction.exceptions import InvalidCronError, InvalidTimezoneError
from airflow_leastaction.timetables import IntervalCronTimetable


def test_the_summary_names_the_cron_the_granularity_children_are_judged_at_and_the_zone():
    assert IntervalCronTimetable("0 2 * * *", "Europe/Paris").summary == "0 2 * * * (day, Europe/Paris)"
    assert IntervalCronTimetable("0 0 * * WED").summary == "0 0 * * WED (week, UTC)"
    assert IntervalCronTimetable("@monthly").summary == "0 0 1 * * (month, UTC)"


def test_it_serializes_to_what_it_is_rebuilt_from():
    table = IntervalCronTimetable("30 1 * * *", "America/New_York")
    again = IntervalCronTimetable.deserialize(table.serialize())
    assert table.serialize() == {"expression": "30 1 * * *", "timezone": "America/New_York"}
    assert (again.summary, again.serialize()) == (table.summary, table.serialize())


@pytest.mark.parametrize(
    "cron, fault",
    [
        ("0 0 * *", "expected 5 fields"),
        ("H 0 * * *", "hashed (H) and random (R) fields"),
        ("0 0 31 2 *", "never occurs"),
        ("0 3-3 * * *", "the hour field's range 3-3 starts and ends on one value"),
    ],
)
def test_a_bad_cron_is_refused_when_the_dag_is_parsed_naming_the_cron(cron, fault):
    with pytest.raises(InvalidCronError) as raised:
        IntervalCronTimetable(cron)
    assert cron in str(raised.value) and fault in str(raised.value)


def test_an_unknown_timezone_is_refused_when_the_dag_is_parsed():
    with pytest.raises(InvalidTimezoneError, match="Mars/Olympus"):
        IntervalCronTimetable("0 0 * * *", "Mars/Olympus")


def test_a_manual_run_on_a_slot_covers_the_interval_that_starts_there():
    table = IntervalCronTimetable("0 2 * * *", "UTC")
    on_slot = pendulum.datetime(2026, 11, 20, 2, 0, tz="UTC")
    assert table.infer_manual_data_interval(run_after=on_slot) == DataInterval(
        start=on_slot, end=pendulum.datetime(2026, 11, 21, 2, 0, tz="UTC")
    )


def test_a_manual_run_between_slots_gets_the_last_complete_interval_as_airflows_cron_timetable_does():
    table = IntervalCronTimetable("0 2 * * *", "UTC")
    between = pendulum.datetime(2026, 11, 20, 13, 0, tz="UTC")
    interval = table.infer_manual_data_interval(run_after=between)
    assert (interval.start, interval.end) == (
        dt.datetime(2026, 11, 19, 2, tzinfo=dt.UTC),
        dt.datetime(2026, 11, 20, 2, tzinfo=dt.UTC),
    )
