"""Property tests of the interval check against an oracle that applies the rule literally.

Random crons come from a grammar that knows which values each field names, so the oracle decides which
fields are fixed without reading cron syntax the way the implementation does. The oracle enumerates the
parent's slots with croniter, places each where Airflow's cron timetables run it, takes the latest slot
at or before the child, and truncates both sides in the parent's zone at the granularity of the
fixed-field rule. Pure logic: no Airflow, no database.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from airflow_leastaction.exceptions import InvalidCronError
from airflow_leastaction.intervals.slots import (
    cron_granularity,
    expected_slot,
    normalize_cron,
    parent_interval_satisfied,
)
from tests.helpers.cron_grammar import (
    MONTHS,
    UTC,
    WEEKDAYS,
    crons,
    parent_slots,
    spelled,
    zones_and_instants,
)


def oracle_expected(cron: str, tz, every_hour: bool, child: dt.datetime) -> dt.datetime:
    """The latest slot at or before the child, from a window of wall-clock time that grows until the
    slot found lies well inside it (a DST change moves a slot by at most a few hours)."""
    wall = child.astimezone(tz).replace(tzinfo=None)
    margin = dt.timedelta(hours=2)  # more than any DST change of ZONES
    back = dt.timedelta(hours=3)
    while True:
        start = wall - back
        before = [s for s in parent_slots(cron, tz, every_hour, start, wall + margin) if s <= child]
        if before and max(before).astimezone(tz).replace(tzinfo=None) >= start + margin:
            return max(before)
        back *= 4


def unit(instant: dt.datetime, granularity: str, tz):
    """The granularity unit holding ``instant`` in ``tz``, as a value that orders like time."""
    local = instant.astimezone(tz)
    if granularity == "minute":
        return instant - dt.timedelta(seconds=local.second, microseconds=local.microsecond)
    if granularity == "hour":
        return instant - dt.timedelta(minutes=local.minute, seconds=local.second, microseconds=local.microsecond)
    if granularity == "day":
        return local.date()
    if granularity == "week":
        return local.date() - dt.timedelta(days=local.weekday())
    if granularity == "month":
        return local.year, local.month
    return local.year


# Enough wall-clock time around a slot to hold its neighbours, without enumerating days of minutes.
NEIGHBOURHOOD = {
    "minute": dt.timedelta(hours=1),
    "hour": dt.timedelta(days=1),
    "day": dt.timedelta(days=4),
    "week": dt.timedelta(days=22),
    "month": dt.timedelta(days=100),
    "year": dt.timedelta(days=800),
}


def around(cron: str, tz, every_hour: bool, instant: dt.datetime, span: dt.timedelta) -> list[dt.datetime]:
    wall = instant.astimezone(tz).replace(tzinfo=None)
    return parent_slots(cron, tz, every_hour, wall - span, wall + span)


# -- the properties -----------------------------------------------------------------------------------
ISSUE_DST_CASE = ("30 1 * * *", "day", False)


@settings(max_examples=100, deadline=None, database=None)
@given(cron=crons(), where=zones_and_instants(), pick=st.integers(-2, 2), jitter=st.integers(-90, 90))
@example(cron=ISSUE_DST_CASE, where=("America/New_York", dt.datetime(2026, 11, 1, 6, 10, tzinfo=UTC)), pick=0, jitter=0)
@example(cron=ISSUE_DST_CASE, where=("America/New_York", dt.datetime(2026, 11, 1, 6, 10, tzinfo=UTC)), pick=1, jitter=0)
@example(
    cron=("30 2 * * *", "day", False),
    where=("America/New_York", dt.datetime(2026, 3, 8, 7, 10, tzinfo=UTC)),
    pick=1,
    jitter=0,
)
@example(cron=("0 0 * * WED", "week", False), where=("UTC", dt.datetime(2026, 11, 29, tzinfo=UTC)), pick=0, jitter=0)
@example(cron=("0 0 1 JUL *", "year", False), where=("UTC", dt.datetime(2027, 6, 30, tzinfo=UTC)), pick=0, jitter=0)
def test_the_check_agrees_with_the_rule_applied_literally(cron, where, pick, jitter):
    text, granularity, every_hour = cron
    zone, child = where
    tz = ZoneInfo(zone)
    assert cron_granularity(text) == granularity
    expected = oracle_expected(text, tz, every_hour, child)
    assert expected_slot(text, child, timezone=zone) == expected
    # The parent completed up to a slot near the expected one, a little before or after it.
    nearby = around(text, tz, every_hour, expected, NEIGHBOURHOOD[granularity])
    index = nearby.index(expected) + pick
    completed = (nearby[index] if 0 <= index < len(nearby) else expected) + dt.timedelta(minutes=jitter)
    literal = unit(completed, granularity, tz) >= unit(expected, granularity, tz)
    assert parent_interval_satisfied(text, completed, child, timezone=zone) is literal


@settings(max_examples=60, deadline=None, database=None)
@given(cron=crons(), where=zones_and_instants())
@example(cron=("0 0 1 * 1", "day", False), where=("UTC", dt.datetime(2026, 6, 1, tzinfo=UTC)))
@example(cron=("*/15 * * * 1", "minute", False), where=("UTC", dt.datetime(2026, 6, 1, tzinfo=UTC)))
@example(cron=("0 * * * *", "hour", True), where=("America/New_York", dt.datetime(2026, 11, 1, 6, tzinfo=UTC)))
def test_no_two_parent_slots_share_a_granularity_unit(cron, where):
    """The granularity is the coarsest unit the parent's slots are distinct in, never coarser: a child
    is never admitted on a parent slot older than the one that covers it."""
    text, granularity, every_hour = cron
    zone, instant = where
    tz = ZoneInfo(zone)
    slots = around(text, tz, every_hour, instant, NEIGHBOURHOOD[granularity])
    units = [unit(s, granularity, tz) for s in slots]
    assert len(set(units)) == len(units), list(zip(slots, units, strict=True))


# -- ranges that start and end on one value ------------------------------------------------------------
FIELDS = [("minute", 0, 59, None), ("hour", 0, 23, None), ("day-of-month", 1, 28, None), ("month", 1, 12, MONTHS)]
FIELDS.append(("day-of-week", 0, 6, WEEKDAYS))


@st.composite
def one_value_ranges(draw):
    """A cron with one field holding a range whose two ends name one value, however each end is spelled."""
    index = draw(st.integers(0, 4))
    name, lo, hi, names = FIELDS[index]
    value = draw(st.integers(lo, hi))
    ends = [spelled(draw, value, names, lo) for _ in range(2)]
    if name == "day-of-week" and value == 0:
        ends = [draw(st.sampled_from([e, "7"])) for e in ends]  # 7 is Sunday too
        assume(not (ends[0] != "7" and ends[1] == "7"))  # Sunday to 7 is the whole week, not one day
    ends = [draw(st.sampled_from([e, f"0{e}"])) if e.isdigit() and len(e) == 1 else e for e in ends]
    term = "-".join(ends) + draw(st.sampled_from(["", "", "/2", "/5"]))
    field = draw(st.sampled_from([term, f"{term},{spelled(draw, lo, names, lo)}", f"{hi},{term}"]))
    fields = ["0", "0", "*", "*", "*"]
    fields[index] = field
    return " ".join(fields), name, ends[0]


@settings(max_examples=200, deadline=None, database=None)
@given(case=one_value_ranges())
def test_a_range_that_names_one_value_is_rejected_naming_its_field(case):
    # croniter would read it as the whole field: "0 3-3 * * *" every hour, "0 0 * JUL-JUL *" every month.
    cron, field, single = case
    try:
        normalize_cron(cron)
    except InvalidCronError as e:
        assert f"the {field} field's range " in str(e) and str(e).endswith(f"write the single value {single}")
    else:
        raise AssertionError(f"{cron!r} was accepted")
