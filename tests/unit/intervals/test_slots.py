"""The interval check, as tables of cases. Pure logic: no Airflow, no database."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from airflow_leastaction.exceptions import InvalidCronError, InvalidTimezoneError
from airflow_leastaction.intervals.slots import (
    check_parent_interval,
    cron_granularity,
    expected_slot,
    normalize_cron,
    parent_interval_satisfied,
    slot_window,
    truncate,
)

UTC = dt.UTC
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
            # Cron reads a restricted day-of-month and day-of-week as "either": the 1st or any Monday,
            # two slots in one week whenever the 1st is not a Monday.
            ("0 0 1 * 1", "day"),
            ("0 0 1 1 1", "day"),
            # Coarse fields cannot make up for fine ones: every 15 minutes on Mondays is minute-grained.
            ("*/15 * * * 1", "minute"),
            ("0 */6 1 1 *", "hour"),
            ("0 0 * 1 *", "day"),  # every day of January
        ],
    )
    def test_granularity_comes_from_the_fields_that_name_one_value(self, cron, granularity):
        assert cron_granularity(cron) == granularity

    @pytest.mark.parametrize(
        "cron, granularity",
        [
            # The letters of names are not cron syntax: W in WED, L in JUL, S in SAT.
            ("0 0 * * WED", "week"),
            ("0 0 * * wed", "week"),
            ("0 0 * * Wed", "week"),
            ("0 0 * * SAT", "week"),
            ("0 0 * * sun", "week"),
            ("0 0 1 JUL *", "year"),
            ("0 0 1 jul *", "year"),
            ("0 0 1 Jul *", "year"),
            ("0 0 15 DEC *", "year"),
            ("0 0 1 APR,JUL *", "month"),
            ("0 0 * * MON-FRI", "day"),
            ("0 0 * * SAT,sun", "day"),
            # One value, whatever the spelling.
            ("0 0 * * 7", "week"),  # Sunday, like 0
            ("0 0 * * 0,7", "week"),  # Sunday twice is still one day
            ("0 0 */31 * *", "month"),  # only the 1st
            ("59/15 * * * *", "hour"),  # croniter: only minute 59
            ("0 0 1 DEC/3 *", "year"),  # only December
            ("0 0 * * 0-7", "day"),  # Sunday through to Sunday: the whole week
            ("0 0 * * SUN-7", "day"),
        ],
    )
    def test_a_field_is_fixed_when_it_names_exactly_one_value_whatever_its_spelling(self, cron, granularity):
        assert cron_granularity(cron) == granularity

    @pytest.mark.parametrize(
        "cron, granularity",
        [
            ("0 0 L * *", "month"),  # the last day of each month
            ("0 0 l * *", "month"),
            ("0 0 L FEB *", "year"),
            ("0 0 1,L * *", "day"),  # two days a month
            ("0 0 15W * *", "month"),  # the weekday nearest the 15th: one day a month
            ("0 0 W15 * *", "month"),
            ("0 0 15w 6 *", "year"),
            ("0 0 * * FRI#3", "week"),  # the third Friday: one weekday, at most one a week
            ("0 0 * * 5#3", "week"),
            ("0 0 * * L5", "week"),  # the last Friday of the month
            ("0 0 * * 1#1,1#3", "week"),  # first and third Monday: never two in one week
            ("0 0 ? * MON", "week"),  # ? is *
            ("0 0 1 * ?", "month"),
            ("0 0 ? * ?", "day"),
        ],
    )
    def test_last_weekday_nth_and_question_mark_forms_get_the_granularity_of_the_days_they_name(
        self, cron, granularity
    ):
        assert cron_granularity(cron) == granularity

    @pytest.mark.parametrize(
        "cron, why",
        [
            ("H * * * *", "hashed"),  # croniter needs a hash id; its slots would depend on it
            ("R 0 * * *", "random"),
            ("r(0-5) * * * *", "random"),
            ("0 0 31 2 *", "never occurs"),
            ("0 0 30 FEB *", "never occurs"),
            ("0 0 LW * *", "croniter cannot parse"),
            ("0 0 * * 5L", "croniter cannot parse"),
            ("0 0 L-3 * *", "croniter cannot parse"),
            ("0 0 * * 1#6", "croniter cannot parse"),
            # Found by the property tests: croniter parses these mixes of day forms but finds no slot.
            ("0 0 L * 0#1", "finds no slot"),
            ("0 * 1W * 7", "finds no slot"),
            ("0 0 1 * L5", "finds no slot"),
        ],
    )
    def test_forms_without_fixed_slots_are_rejected_saying_why(self, cron, why):
        with pytest.raises(InvalidCronError, match=why):
            cron_granularity(cron)

    @pytest.mark.parametrize(
        "cron, field, single",
        [
            ("0 3-3 * * *", "hour", "3"),  # croniter would run it every hour
            ("5-5 * * * *", "minute", "5"),
            ("0 0 15-15 * *", "day-of-month", "15"),
            ("0 0 1 JUL-JUL *", "month", "JUL"),
            ("0 0 1 jul-Jul *", "month", "jul"),
            ("0 0 1 7-JUL *", "month", "7"),
            ("0 0 * * 1-1", "day-of-week", "1"),
            ("0 0 * * MON-1", "day-of-week", "MON"),
            ("0 0 * * 7-0", "day-of-week", "7"),  # 7 and 0 are both Sunday
            ("0 0 * * sun-SUN", "day-of-week", "sun"),
            ("0 03-3 * * *", "hour", "03"),
            ("0 1,3-3 * * *", "hour", "3"),  # one term of a list
            ("0 3-3/2 * * *", "hour", "3"),  # croniter would step through every hour: 0, 2, 4...
        ],
    )
    def test_a_range_that_starts_and_ends_on_one_value_is_rejected_naming_the_field(self, cron, field, single):
        with pytest.raises(InvalidCronError, match=rf"the {field} field's range .* starts and ends on one value") as e:
            normalize_cron(cron)
        assert str(e.value).startswith(f"invalid cron expression {cron!r}: ")
        assert str(e.value).endswith(f"; write the single value {single}")

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

    @pytest.mark.parametrize(
        "cron, child, expected",
        [
            # New York falls back on 2026-11-01: 01:00-01:59 happens in EDT (05:00-05:59 UTC), then in EST
            # (06:00-06:59 UTC). Airflow runs a 01:30 slot at the second occurrence, 01:30 EST = 06:30 UTC.
            # A child at 06:10 UTC (01:10 EST) comes before it: the latest slot is the previous day's.
            ("30 1 * * *", utc(2026, 11, 1, 6, 10), utc(2026, 10, 31, 5, 30)),
            ("30 1 * * *", utc(2026, 11, 1, 5, 50), utc(2026, 10, 31, 5, 30)),  # 01:50 EDT
            ("30 1 * * *", utc(2026, 11, 1, 6, 30), utc(2026, 11, 1, 6, 30)),
            ("30 1 * * *", utc(2026, 11, 1, 6, 40), utc(2026, 11, 1, 6, 30)),
            # 00:30 is not repeated; a child in the repeated hour still needs that day's slot.
            ("30 0 * * *", utc(2026, 11, 1, 6, 10), utc(2026, 11, 1, 4, 30)),
            # Crons that fire every hour have a slot in both occurrences of the repeated hour.
            ("0 * * * *", utc(2026, 11, 1, 5, 50), utc(2026, 11, 1, 5)),
            ("0 * * * *", utc(2026, 11, 1, 6, 10), utc(2026, 11, 1, 6)),
            ("30 * * * *", utc(2026, 11, 1, 6, 10), utc(2026, 11, 1, 5, 30)),
            # Hourly on Saturdays only: the child on Sunday 01:10 EST, after the change, needs 23:00 EDT.
            ("0 * * * SAT", utc(2026, 11, 1, 6, 10), utc(2026, 11, 1, 3)),
            # Spring forward on 2026-03-08: 02:00-02:59 is skipped; Airflow runs 02:30 at 03:30 EDT (07:30
            # UTC). A child at 03:10 EDT comes before it, so the latest slot is the previous day's.
            ("30 2 * * *", utc(2026, 3, 8, 7, 10), utc(2026, 3, 7, 7, 30)),
            ("30 2 * * *", utc(2026, 3, 8, 7, 40), utc(2026, 3, 8, 7, 30)),
            ("30 2 * * *", utc(2026, 3, 9, 6, 40), utc(2026, 3, 9, 6, 30)),
            ("30 * * * *", utc(2026, 3, 8, 7, 10), utc(2026, 3, 8, 6, 30)),  # 01:30 EST
            ("0,30 2,3 * * *", utc(2026, 3, 8, 7, 10), utc(2026, 3, 8, 7)),  # 02:00 and 03:00 are both 07:00 UTC
        ],
    )
    def test_the_latest_slot_is_found_by_instant_across_a_dst_change(self, cron, child, expected):
        assert expected_slot(cron, child, timezone="America/New_York") == expected

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
    # DST repeated hour in New York: a 01:30 parent's slot of 2026-11-01 runs at 01:30 EST (06:30 UTC).
    ("30 1 * * *", "America/New_York", utc(2026, 10, 31, 5, 30), utc(2026, 11, 1, 6, 10), True),
    ("30 1 * * *", "America/New_York", utc(2026, 10, 30, 5, 30), utc(2026, 11, 1, 6, 10), False),
    ("30 1 * * *", "America/New_York", utc(2026, 10, 31, 5, 30), utc(2026, 11, 1, 6, 40), False),
    ("30 1 * * *", "America/New_York", utc(2026, 11, 1, 6, 30), utc(2026, 11, 1, 6, 40), True),
    # DST skipped hour in New York: a 02:30 parent's slot of 2026-03-08 runs at 03:30 EDT (07:30 UTC).
    ("30 2 * * *", "America/New_York", utc(2026, 3, 7, 7, 30), utc(2026, 3, 8, 7, 10), True),
    ("30 2 * * *", "America/New_York", utc(2026, 3, 7, 7, 30), utc(2026, 3, 8, 7, 40), False),
    ("30 2 * * *", "America/New_York", utc(2026, 3, 8, 7, 30), utc(2026, 3, 8, 7, 40), True),
    # Names are values, not syntax: a Wednesday parent is weekly, a 1 July parent yearly.
    ("0 0 * * WED", "UTC", utc(2026, 11, 25), utc(2026, 11, 29), True),
    ("0 0 * * WED", "UTC", utc(2026, 11, 18), utc(2026, 11, 29), False),
    ("0 0 1 JUL *", "UTC", utc(2026, 7, 1), utc(2027, 6, 30), True),
    ("0 0 1 JUL *", "UTC", utc(2025, 7, 1), utc(2026, 8, 1), False),
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
        check = check_parent_interval(
            "0 0 * * *", utc(2026, 11, 26, 23), utc(2026, 11, 28, 12), timezone="Europe/Paris", parent_name="orders_raw"
        )
        assert "expected slot 2026-11-28 Europe/Paris (day)" in check.reason
        assert "completed up to 2026-11-27 Europe/Paris" in check.reason

    def test_the_two_instants_of_a_repeated_hour_get_their_own_answers_in_either_order(self):
        # 01:30 in New York on 2026-11-01 happens twice (EDT, then EST): equal as aware times in their own
        # zone, an hour apart as instants. The answer is remembered per instant, never per wall clock.
        first = dt.datetime(2026, 11, 1, 1, 30, tzinfo=NEW_YORK)
        second = first.replace(fold=1)
        completed = utc(2026, 11, 1, 5)  # the hourly parent finished 05:00 UTC, i.e. 01:00 EDT
        for order in ((first, second), (second, first)):
            answers = {
                child.fold: check_parent_interval("0 * * * *", completed, child, parent_name="hourly")
                for child in order
            }
            assert answers[0].satisfied is True and answers[0].expected_slot == utc(2026, 11, 1, 5)
            assert answers[1].satisfied is False and answers[1].expected_slot == utc(2026, 11, 1, 6)

    def test_the_two_instants_of_a_repeated_hour_get_their_own_slot_windows_in_either_order(self):
        first = dt.datetime(2026, 11, 1, 1, 30, tzinfo=NEW_YORK)  # 05:30 UTC (EDT)
        second = first.replace(fold=1)  # 06:30 UTC (EST)
        for order in ((first, second), (second, first)):
            starts = {when.fold: slot_window(when, "hour", NEW_YORK)[0] for when in order}
            assert starts == {0: utc(2026, 11, 1, 5), 1: utc(2026, 11, 1, 6)}


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
