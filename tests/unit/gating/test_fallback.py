"""The fallback's deadline rule against an oracle that reads the local clock minute by minute, and its
parse-time checks. Pure logic: no Airflow, no database.

The rule, in the words DAG authors are given: the deadline is an offset from the run's slot on the DAG's
local clock, or a time of day ("06:00 local on the slot's day"); it is the first instant, at or after the
slot, at which the DAG's local clock reads that time or later. The oracle walks forward from the slot one
minute at a time and stops at the first minute whose local reading is at or past the target: no fold, no
offset arithmetic, so it cannot share a mistake with the implementation.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from airflow_leastaction.exceptions import InvalidFallbackError
from airflow_leastaction.gating.engine import DependencyType
from airflow_leastaction.gating.fallback import Fallback, check_fallback, fallback_deadline

UTC = dt.UTC
#: Zones whose clocks change on whole minutes (every zone since 1980 does), north and south, half hours.
ZONES = ["UTC", "Europe/Paris", "America/New_York", "Australia/Sydney", "Asia/Kolkata", "Australia/Lord_Howe"]


def oracle(at, slot: dt.datetime, zone: str) -> dt.datetime:
    tz = ZoneInfo(zone)
    local = slot.astimezone(tz)
    wall = dt.datetime(local.year, local.month, local.day, local.hour, local.minute)
    target = wall + at if isinstance(at, dt.timedelta) else dt.datetime.combine(wall.date(), at)
    instant = slot
    while True:
        reading = instant.astimezone(tz)
        if dt.datetime(reading.year, reading.month, reading.day, reading.hour, reading.minute) >= target:
            return instant
        instant += dt.timedelta(minutes=1)


slots = st.datetimes(
    min_value=dt.datetime(2020, 1, 1), max_value=dt.datetime(2035, 12, 31), timezones=st.just(UTC)
).map(lambda d: d.replace(second=0, microsecond=0))
offsets = st.integers(min_value=0, max_value=30 * 60).map(lambda m: dt.timedelta(minutes=m))
times_of_day = st.times().map(lambda t: t.replace(second=0, microsecond=0))


@settings(max_examples=300, deadline=None)
@given(at=st.one_of(offsets, times_of_day), slot=slots, zone=st.sampled_from(ZONES))
# New York springs forward at 02:00 local on 2026-03-08 (07:00 UTC): 02:30 is never read; the clock
# reads 03:00 at the jump.
@example(at=dt.time(2, 30), slot=dt.datetime(2026, 3, 8, 5, 0, tzinfo=UTC), zone="America/New_York")
# ... and falls back at 02:00 EDT on 2026-11-01: 01:30 is read twice, first at 05:30 UTC.
@example(at=dt.time(1, 30), slot=dt.datetime(2026, 11, 1, 4, 0, tzinfo=UTC), zone="America/New_York")
# A slot in the repeated hour (01:30 EST, the second reading): 10 minutes later is 01:40 EST, not the
# 01:40 EDT that came before the slot.
@example(at=dt.timedelta(minutes=10), slot=dt.datetime(2026, 11, 1, 6, 30, tzinfo=UTC), zone="America/New_York")
# Six hours after a midnight slot on the day Paris springs forward: 06:00 local, five hours later.
@example(at=dt.timedelta(hours=6), slot=dt.datetime(2026, 3, 28, 23, 0, tzinfo=UTC), zone="Europe/Paris")
# Lord Howe moves its clocks by half an hour.
@example(at=dt.time(2, 15), slot=dt.datetime(2026, 10, 3, 13, 0, tzinfo=UTC), zone="Australia/Lord_Howe")
def test_the_deadline_is_the_first_instant_at_or_after_the_slot_whose_local_clock_reads_it(at, slot, zone):
    assert fallback_deadline(at, slot, zone) == oracle(at, slot, zone)


@pytest.mark.parametrize(
    "at, slot, zone, expected",
    [
        pytest.param(
            dt.time(6),
            "2026-11-28T05:00:00+00:00",
            "America/New_York",
            "2026-11-28T11:00:00+00:00",
            id="06:00 local on the slot's day",
        ),
        pytest.param(
            dt.time(6),
            "2026-03-08T05:00:00+00:00",
            "America/New_York",
            "2026-03-08T10:00:00+00:00",
            id="06:00 local on the day the clocks spring forward: five hours after midnight",
        ),
        pytest.param(
            dt.timedelta(hours=6),
            "2026-11-01T04:00:00+00:00",
            "America/New_York",
            "2026-11-01T11:00:00+00:00",
            id="an offset on the day the clocks fall back: seven hours",
        ),
        pytest.param(
            dt.time(2, 30),
            "2026-03-08T05:00:00+00:00",
            "America/New_York",
            "2026-03-08T07:00:00+00:00",
            id="a time the clocks skip is reached when they jump past it",
        ),
        pytest.param(
            dt.time(6),
            "2026-11-28T14:00:00+00:00",
            "UTC",
            "2026-11-28T14:00:00+00:00",
            id="a time of day already past at the slot is the slot",
        ),
        pytest.param(
            dt.timedelta(0),
            "2026-11-28T00:00:00+00:00",
            "Europe/Paris",
            "2026-11-28T00:00:00+00:00",
            id="no offset is the slot",
        ),
    ],
)
def test_deadline_examples(at, slot, zone, expected):
    assert fallback_deadline(at, dt.datetime.fromisoformat(slot), zone) == dt.datetime.fromisoformat(expected)


SUCCESS, FAILURE, ALWAYS = DependencyType.SUCCESS, DependencyType.FAILURE, DependencyType.ALWAYS


class TestFallbackDeclaration:
    def test_a_time_of_day_is_read_from_text(self):
        assert Fallback("06:00", 3).at == dt.time(6)

    def test_it_travels_as_a_dict(self):
        for fallback in (Fallback("06:30", 2, "rerun"), Fallback(dt.timedelta(hours=5, minutes=3), 1)):
            assert Fallback.from_dict(fallback.as_dict()) == fallback

    @pytest.mark.parametrize(
        "kwargs, words",
        [
            ({"at": "six", "require": 1}, "expected a timedelta after the slot or a local time of day"),
            ({"at": dt.timedelta(hours=-1), "require": 1}, "cannot be negative"),
            ({"at": "06:00", "require": 0}, "require=0"),
            ({"at": "06:00", "require": True}, "require=True"),
            ({"at": "06:00", "require": 1, "on_late_arrival": "retry"}, "on_late_arrival='retry'"),
        ],
    )
    def test_bad_values_are_refused_where_the_fallback_is_attached(self, kwargs, words):
        fallback = Fallback(**kwargs)
        assert words in fallback.problem
        with pytest.raises(InvalidFallbackError, match="DAG 'report_daily' task 'report': ") as raised:
            check_fallback("report_daily", "report", fallback, [SUCCESS], dt.timedelta(hours=8))
        assert words in str(raised.value)


class TestParseTimeChecks:
    def check(self, fallback, types=(SUCCESS,) * 4, limit=dt.timedelta(hours=8)):
        return check_fallback("report_daily", "report", fallback, list(types), limit)

    def test_a_sound_fallback_passes(self):
        assert self.check(Fallback("06:00", 3)) == Fallback("06:00", 3)

    def test_no_fallback_is_nothing_to_check(self):
        assert self.check(None) is None

    def test_require_above_the_number_of_dependencies_names_the_task(self):
        with pytest.raises(InvalidFallbackError, match="DAG 'report_daily' task 'report': fallback require=5"):
            self.check(Fallback("06:00", 5))

    @pytest.mark.parametrize("typ", [FAILURE, ALWAYS])
    def test_a_fallback_on_a_failure_or_always_dependency_is_refused(self, typ):
        with pytest.raises(InvalidFallbackError, match=f"task 'report': a fallback cannot stand in for {typ.value}"):
            self.check(Fallback("06:00", 1), types=(SUCCESS, typ))

    def test_a_deadline_after_max_wait_is_refused(self):
        with pytest.raises(InvalidFallbackError, match=r"task 'report': the fallback deadline .* is after max_wait"):
            self.check(Fallback(dt.timedelta(hours=9), 3))

    def test_a_time_of_day_counts_from_midnight_against_the_limit(self):
        with pytest.raises(InvalidFallbackError, match="after timeout"):
            check_fallback("d", "wait", Fallback("06:00", 1), [SUCCESS], dt.timedelta(hours=5), "timeout")

    def test_not_a_fallback_is_refused(self):
        with pytest.raises(InvalidFallbackError, match="expected Fallback"):
            self.check({"at": "06:00"})
