"""The interval check, as tables of cases. Pure logic: no Airflow, no database."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from airflow_leastaction.exceptions import InvalidCronError, InvalidTimezoneError
from airflow_leastaction.intervals import (
    check_parent_interval,
    cron_granularity,
    expected_slot,
    parent_interval_satisfied,
    truncate,
)

UTC = dt.timezone.utc
PARIS = ZoneInfo("Europe/Paris")
NEW_YORK = ZoneInfo("America/New_York")


def utc(*args) -> dt.datetime:
    return dt.datetime(*args, tzinfo=UTC)


class TestCronGranularity:
    @pytest.mark.parametrize(
        "cron, granularity",
        [
            ("* * * * *", "minute"),
            ("*/15 * * * *", "minute"),  # a step names many values: not fixed
            ("0,30 * * * *", "minute"),  # a list is not fixed
            ("0-5 * * * *", "minute"),  # a range is not fixed
            ("5 * * * *", "hour"),
            ("0 * * * *", "hour"),
            ("@hourly", "hour"),
            ("0 */6 * * *", "hour"),
            ("0 2 * * *", "day"),
            ("@daily", "day"),
            ("30 23 * * *", "day"),
            ("0 2 * * 1-5", "day"),  # weekdays: dow is a range
            ("0 0 * * 1,4", "day"),
            ("0 0 * * 0", "week"),
            ("@weekly", "week"),
            ("0 6 * * MON", "week"),
            ("0 0 1 * *", "month"),
            ("@monthly", "month"),
            ("0 0 15 * *", "month"),
            ("0 0 1 1 *", "year"),
            ("@yearly", "year"),
            ("0 0 1 */3 *", "month"),  # quarterly: month is a step
            ("0 0 1,15 * *", "day"),
            ("0 0 1 * 1", "week"),  # day-of-month fixed but weekday fixed too
        ],
    )
    def test_granularity_comes_from_the_fields_that_name_one_value(self, cron, granularity):
        assert cron_granularity(cron) == granularity

    @pytest.mark.parametrize("cron", ["", "not a cron", "61 * * * *", "* * * *", "0 0 32 * *", "@fortnightly"])
    def test_invalid_cron_is_rejected_naming_the_expression(self, cron):
        with pytest.raises(InvalidCronError, match="invalid cron expression"):
            cron_granularity(cron)


class TestExpectedSlot:
    @pytest.mark.parametrize(
        "cron, child, tz, expected",
        [
            # Inclusive boundary: a child exactly on a slot expects that slot, not the one before.
            ("0 0 * * *", utc(2026, 11, 28), "UTC", utc(2026, 11, 28)),
            ("0 0 * * *", utc(2026, 11, 28, 0, 0, 1), "UTC", utc(2026, 11, 28)),
            ("0 0 * * *", utc(2026, 11, 27, 23, 59, 59), "UTC", utc(2026, 11, 27)),
            ("0 2 * * *", utc(2026, 11, 28), "UTC", utc(2026, 11, 27, 2)),
            ("0 * * * *", utc(2026, 11, 28, 14, 30), "UTC", utc(2026, 11, 28, 14)),
            ("*/15 * * * *", utc(2026, 11, 28, 14, 44), "UTC", utc(2026, 11, 28, 14, 30)),
            ("0 0 * * 0", utc(2026, 11, 25), "UTC", utc(2026, 11, 22)),  # weekly on Sunday
            ("0 0 1 * *", utc(2026, 11, 28), "UTC", utc(2026, 11, 1)),
            ("0 0 1 1 *", utc(2026, 11, 28), "UTC", utc(2026, 1, 1)),
            # In the parent's timezone: Paris midnight of the 28th is 23:00 UTC on the 27th.
            ("0 0 * * *", utc(2026, 11, 28, 0), "Europe/Paris", utc(2026, 11, 27, 23)),
            ("0 0 * * *", utc(2026, 11, 27, 22, 59), "Europe/Paris", utc(2026, 11, 26, 23)),
        ],
    )
    def test_expected_slot_is_the_latest_parent_slot_at_or_before_the_child(self, cron, child, tz, expected):
        assert expected_slot(cron, child, timezone=tz) == expected

    def test_expected_slot_is_dst_correct_on_the_spring_forward_day(self):
        # New York moves from EST (UTC-5) to EDT (UTC-4) on 2026-03-08: local midnight of the 9th is 04:00 UTC.
        assert expected_slot("0 0 * * *", utc(2026, 3, 9, 4), timezone="America/New_York") == utc(2026, 3, 9, 4)
        assert expected_slot("0 0 * * *", utc(2026, 3, 9, 3, 59), timezone="America/New_York") == utc(2026, 3, 8, 5)

    def test_expected_slot_is_dst_correct_on_the_fall_back_day(self):
        # Europe/Paris leaves CEST on 2026-10-25: local midnight of the 26th is 23:00 UTC on the 25th.
        assert expected_slot("0 0 * * *", utc(2026, 10, 25, 23), timezone="Europe/Paris") == utc(2026, 10, 25, 23)
        assert expected_slot("0 0 * * *", utc(2026, 10, 25, 22), timezone="Europe/Paris") == utc(2026, 10, 24, 22)

    def test_naive_child_interval_is_rejected(self):
        with pytest.raises(ValueError, match="timezone-aware"):
            expected_slot("0 0 * * *", dt.datetime(2026, 11, 28))

    def test_unknown_timezone_is_rejected_naming_it(self):
        with pytest.raises(InvalidTimezoneError, match="Mars/Olympus"):
            expected_slot("0 0 * * *", utc(2026, 11, 28), timezone="Mars/Olympus")


SATISFIED_CASES = [
    # (parent cron, parent timezone, parent completed, child interval, satisfied)
    # Daily parent, daily child.
    ("0 0 * * *", "UTC", utc(2026, 11, 28), utc(2026, 11, 28), True),
    ("0 0 * * *", "UTC", utc(2026, 11, 27), utc(2026, 11, 28), False),
    ("0 0 * * *", "UTC", utc(2026, 11, 29), utc(2026, 11, 28), True),
    # A daily parent at 02:00 covers the next day's midnight child with the previous day's slot.
    ("0 2 * * *", "UTC", utc(2026, 11, 27, 2), utc(2026, 11, 28), True),
    ("0 2 * * *", "UTC", utc(2026, 11, 26, 2), utc(2026, 11, 28), False),
    # Hourly child of a daily parent: every hour of the day needs that day's slot.
    ("0 0 * * *", "UTC", utc(2026, 11, 28), utc(2026, 11, 28, 23), True),
    ("0 0 * * *", "UTC", utc(2026, 11, 27), utc(2026, 11, 28, 5), False),
    # Hourly parent, daily child: the child needs the hour that covers its own start.
    ("0 * * * *", "UTC", utc(2026, 11, 28, 0), utc(2026, 11, 28), True),
    ("0 * * * *", "UTC", utc(2026, 11, 27, 23), utc(2026, 11, 28), False),
    # Hourly parent, hourly child at minute 30.
    ("0 * * * *", "UTC", utc(2026, 11, 28, 14), utc(2026, 11, 28, 14, 30), True),
    ("0 * * * *", "UTC", utc(2026, 11, 28, 13), utc(2026, 11, 28, 14, 30), False),
    # Weekly parent satisfies a daily child for every day of its week.
    ("0 0 * * 0", "UTC", utc(2026, 11, 22), utc(2026, 11, 25), True),
    ("0 0 * * 0", "UTC", utc(2026, 11, 22), utc(2026, 11, 28), True),
    ("0 0 * * 0", "UTC", utc(2026, 11, 22), utc(2026, 11, 29), False),  # next Sunday needs the next slot
    ("0 0 * * 0", "UTC", utc(2026, 11, 15), utc(2026, 11, 25), False),
    # Monthly parent, daily child.
    ("0 0 1 * *", "UTC", utc(2026, 11, 1), utc(2026, 11, 28), True),
    ("0 0 1 * *", "UTC", utc(2026, 10, 1), utc(2026, 11, 28), False),
    # Yearly parent, monthly child.
    ("0 0 1 1 *", "UTC", utc(2026, 1, 1), utc(2026, 11, 1), True),
    ("0 0 1 1 *", "UTC", utc(2025, 1, 1), utc(2026, 11, 1), False),
    # A 15-minute parent is minute-grained: a child is not admitted on data 45 minutes stale.
    ("*/15 * * * *", "UTC", utc(2026, 11, 28, 14, 0), utc(2026, 11, 28, 14, 45), False),
    ("*/15 * * * *", "UTC", utc(2026, 11, 28, 14, 45), utc(2026, 11, 28, 14, 45), True),
    ("*/15 * * * *", "UTC", utc(2026, 11, 28, 14, 30), utc(2026, 11, 28, 14, 44), True),
    # Weekdays parent (range): day-grained; a Saturday child needs Friday's slot.
    ("0 6 * * 1-5", "UTC", utc(2026, 11, 27, 6), utc(2026, 11, 28, 12), True),
    ("0 6 * * 1-5", "UTC", utc(2026, 11, 26, 6), utc(2026, 11, 28, 12), False),
    # Parent timezone: Paris daily parent, UTC child at 23:30 on the 27th is already the 28th in Paris.
    ("0 0 * * *", "Europe/Paris", utc(2026, 11, 27, 23), utc(2026, 11, 27, 23, 30), True),
    ("0 0 * * *", "Europe/Paris", utc(2026, 11, 26, 23), utc(2026, 11, 27, 23, 30), False),
    # DST spring-forward day in New York: the 23-hour day still needs its own slot.
    ("0 0 * * *", "America/New_York", utc(2026, 3, 8, 5), utc(2026, 3, 8, 12), True),
    ("0 0 * * *", "America/New_York", utc(2026, 3, 7, 5), utc(2026, 3, 8, 12), False),
    ("0 0 * * *", "America/New_York", utc(2026, 3, 9, 4), utc(2026, 3, 9, 4), True),
    # DST fall-back hour in New York: 01:00 EDT and 01:00 EST are distinct hourly slots.
    ("0 * * * *", "America/New_York", utc(2026, 11, 1, 5), utc(2026, 11, 1, 6, 10), False),
    ("0 * * * *", "America/New_York", utc(2026, 11, 1, 6), utc(2026, 11, 1, 6, 10), True),
]


class TestParentIntervalSatisfied:
    @pytest.mark.parametrize("cron, tz, completed, child, satisfied", SATISFIED_CASES)
    def test_parent_satisfies_the_child_when_it_finished_the_covering_interval(
        self, cron, tz, completed, child, satisfied
    ):
        assert parent_interval_satisfied(cron, completed, child, timezone=tz) is satisfied

    def test_a_parent_that_never_completed_does_not_satisfy(self):
        check = check_parent_interval("0 0 * * *", None, utc(2026, 11, 28), parent_name="orders_raw")
        assert check.satisfied is False
        assert check.reason == "orders_raw: expected slot 2026-11-28 (day), never completed"

    def test_the_reason_names_the_expected_slot_and_the_completion(self):
        check = check_parent_interval("0 0 * * *", utc(2026, 11, 27), utc(2026, 11, 28), parent_name="orders_raw")
        assert check.reason == "orders_raw: expected slot 2026-11-28 (day), completed up to 2026-11-27"
        assert check.granularity == "day"
        assert check.expected_slot == utc(2026, 11, 28)

    def test_the_reason_reads_in_the_parents_timezone(self):
        check = check_parent_interval("0 0 * * *", utc(2026, 11, 26, 23), utc(2026, 11, 28, 12),
                                      timezone="Europe/Paris", parent_name="orders_raw")
        assert "expected slot 2026-11-28 Europe/Paris (day)" in check.reason
        assert "completed up to 2026-11-27 Europe/Paris" in check.reason


class TestTruncate:
    @pytest.mark.parametrize(
        "value, granularity, tz, expected",
        [
            (utc(2026, 11, 28, 14, 37, 12), "minute", UTC, utc(2026, 11, 28, 14, 37)),
            (utc(2026, 11, 28, 14, 37), "hour", UTC, utc(2026, 11, 28, 14)),
            (utc(2026, 11, 28, 14, 37), "day", UTC, utc(2026, 11, 28)),
            (utc(2026, 11, 28, 14, 37), "week", UTC, utc(2026, 11, 23)),  # ISO weeks start on Monday
            (utc(2026, 11, 28, 14, 37), "month", UTC, utc(2026, 11, 1)),
            (utc(2026, 11, 28, 14, 37), "year", UTC, utc(2026, 1, 1)),
            (utc(2026, 11, 28, 23, 30), "day", PARIS, utc(2026, 11, 28, 23)),  # already the 29th in Paris
            (utc(2026, 3, 8, 12), "day", NEW_YORK, utc(2026, 3, 8, 5)),
        ],
    )
    def test_truncation_happens_in_the_given_timezone(self, value, granularity, tz, expected):
        assert truncate(value, granularity, tz) == expected
