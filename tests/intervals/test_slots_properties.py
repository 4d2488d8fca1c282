"""Property tests of the interval check against an oracle that applies the rule literally.

Random crons come from a grammar that knows which values each field names, so the oracle decides which
fields are fixed without reading cron syntax the way the implementation does. The oracle enumerates the
parent's slots with croniter, places each where Airflow's cron timetables run it, takes the latest slot
at or before the child, and truncates both sides in the parent's zone at the granularity of the
fixed-field rule. Pure logic: no Airflow, no database.
"""

from __future__ import annotations

import datetime as dt
from functools import cache
from zoneinfo import ZoneInfo

from croniter import croniter
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from airflow_leastaction.exceptions import InvalidCronError
from airflow_leastaction.intervals.slots import (
    cron_granularity,
    expected_slot,
    normalize_cron,
    parent_interval_satisfied,
)

UTC = dt.UTC
ZONES = [
    "UTC",
    "Europe/Paris",
    "Europe/London",
    "America/New_York",
    "Australia/Sydney",  # southern hemisphere: falls back in April
    "America/Sao_Paulo",  # changed at midnight until 2019: a skipped and a repeated midnight
    "America/St_Johns",  # half-hour offset with DST
    "Pacific/Chatham",  # 45-minute offset, changes at 02:45
    "Asia/Kolkata",  # half-hour offset, no DST
]
YEARS = range(2017, 2028)
MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
WEEKDAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
ALIASES = {
    "@hourly": ("0 * * * *", "hour"),
    "@daily": ("0 0 * * *", "day"),
    "@midnight": ("0 0 * * *", "day"),
    "@weekly": ("0 0 * * 0", "week"),
    "@monthly": ("0 0 1 * *", "month"),
    "@yearly": ("0 0 1 1 *", "year"),
    "@annually": ("0 0 1 1 *", "year"),
}
LAST = "L"  # the last day of the month: one value of day-of-month


# -- the cron grammar: each field is drawn with the set of values it names ------------------------------
def _spelled(draw, value: int, names: list[str] | None, offset: int) -> str:
    if names is None or not draw(st.booleans()):
        return str(value)
    name = names[value - offset]
    return draw(st.sampled_from([name, name.lower(), name.title()]))


@st.composite
def _term(draw, lo: int, hi: int, names: list[str] | None = None):
    kind = draw(st.sampled_from(["value", "value", "range", "range_step", "star_step", "start_step"]))
    if kind == "value":
        value = draw(st.integers(lo, hi))
        return _spelled(draw, value, names, lo), {value}
    step = draw(st.integers(1, max(1, (hi - lo) // 2 + 1)))
    if kind == "star_step":
        return f"*/{step}", set(range(lo, hi + 1, step))
    a = draw(st.integers(lo, hi - 1))
    if kind == "start_step":
        return f"{_spelled(draw, a, names, lo)}/{step}", set(range(a, hi + 1, step))
    b = draw(st.integers(a + 1, hi))  # a < b: a range that starts and ends on one value is rejected
    text = f"{_spelled(draw, a, names, lo)}-{_spelled(draw, b, names, lo)}"
    if kind == "range":
        return text, set(range(a, b + 1))
    return f"{text}/{step}", set(range(a, b + 1, step))


@st.composite
def _field(draw, lo: int, hi: int, names: list[str] | None = None, star_weight: int = 1):
    if draw(st.integers(0, 3)) < star_weight:
        return "*", set(range(lo, hi + 1))
    terms = draw(st.lists(_term(lo, hi, names), min_size=1, max_size=3))
    return ",".join(t for t, _ in terms), set().union(*(v for _, v in terms))


@st.composite
def _day_of_month(draw):
    kind = draw(st.sampled_from(["star", "star", "?", "plain", "plain", "last", "last_in_list", "weekday"]))
    if kind in ("star", "?"):
        return ("*" if kind == "star" else "?"), None
    if kind == "last":
        return draw(st.sampled_from(["L", "l"])), {LAST}
    if kind == "weekday":
        day = draw(st.integers(1, 28))
        return draw(st.sampled_from([f"{day}W", f"W{day}", f"{day}w"])), {f"{day}W"}
    text, values = draw(_field(1, 31, star_weight=0))
    assume(len(values) < 31)  # a full list stays a list for croniter, unlike "*"
    if kind == "last_in_list":
        return f"{text},L", values | {LAST}
    return text, values


@st.composite
def _day_of_week(draw):
    kind = draw(st.sampled_from(["star", "star", "star", "?", "plain", "plain", "nth", "last"]))
    if kind in ("star", "?"):
        return ("*" if kind == "star" else "?"), None
    if kind in ("nth", "last"):
        day = draw(st.integers(0, 6))
        spelled = _spelled(draw, day, WEEKDAYS, 0)
        if kind == "last":
            return f"L{day}", {day}
        nths = draw(st.lists(st.integers(1, 4), min_size=1, max_size=2, unique=True))
        return ",".join(f"{spelled}#{n}" for n in nths), {day}
    if draw(st.integers(0, 5)) == 0:
        return "7", {0}  # Sunday, spelled 7
    text, values = draw(_field(0, 6, WEEKDAYS, star_weight=0))
    assume(len(values) < 7)
    return text, values


def _fixed(values) -> bool:
    return values is not None and len(values) == 1


def _rule(minute, hour, dom, month, dow) -> str:
    """The fixed-field rule, from the finest unit up (docs/interval-dependencies.md#granularity)."""
    if not _fixed(minute):
        return "minute"
    if not _fixed(hour):
        return "hour"
    if dow is None and _fixed(dom):
        return "year" if _fixed(month) else "month"
    if dom is None and _fixed(dow):
        return "week"
    return "day"


@st.composite
def crons(draw):
    """(cron text, granularity by the fixed-field rule, fires every hour)."""
    if draw(st.integers(0, 9)) == 0:
        alias = draw(st.sampled_from(sorted(ALIASES)))
        text, granularity = ALIASES[alias]
        return draw(st.sampled_from([alias, alias.upper()])), granularity, granularity == "hour"
    minute = draw(_field(0, 59, star_weight=0))
    hour = draw(_field(0, 23))
    dom = draw(_day_of_month())
    month = draw(_field(1, 12, MONTHS, star_weight=2))
    dow = draw(_day_of_week())
    # croniter finds no slot of some mixes of L, W and # with the other day field (rejected at parse time,
    # see test_slots.py); draw those forms with the other day field unrestricted.
    special = any(mark in part.upper() for part in (dom[0], dow[0]) for mark in ("L", "W", "#"))
    assume(not special or dom[1] is None or dow[1] is None)
    text = " ".join(f[0] for f in (minute, hour, dom, month, dow))
    assume(croniter.is_valid(text, strict=True))  # e.g. "0 0 30 2 *" never happens
    granularity = _rule(minute[1], hour[1], dom[1], month[1], dow[1])
    return text, granularity, len(hour[1]) == 24


# -- instants near DST changes and month/year ends -----------------------------------------------------
@cache
def _anchors(zone: str) -> tuple[dt.datetime, ...]:
    """DST changes (to the minute) and local month starts of ``zone`` over :data:`YEARS`."""
    tz = ZoneInfo(zone)
    found = []
    for year in YEARS:
        for month in range(1, 13):
            found.append(dt.datetime(year, month, 1, tzinfo=tz).astimezone(UTC))
    t = dt.datetime(YEARS[0], 1, 1, tzinfo=UTC)
    end = dt.datetime(YEARS[-1] + 1, 1, 1, tzinfo=UTC)
    while t < end:
        nxt = t + dt.timedelta(hours=6)
        if t.astimezone(tz).utcoffset() != nxt.astimezone(tz).utcoffset():
            lo, hi = t, nxt
            while hi - lo > dt.timedelta(minutes=1):
                mid = lo + (hi - lo) / 2
                lo, hi = (mid, hi) if mid.astimezone(tz).utcoffset() == lo.astimezone(tz).utcoffset() else (lo, mid)
            found.append(hi)
        t = nxt
    return tuple(found)


@st.composite
def zones_and_instants(draw):
    zone = draw(st.sampled_from(ZONES))
    anchor = draw(st.sampled_from(_anchors(zone)))
    minutes = draw(st.integers(-36 * 60, 36 * 60))
    seconds = draw(st.sampled_from([0, 0, 0, 1, 59]))
    return zone, anchor + dt.timedelta(minutes=minutes, seconds=seconds)


# -- the oracle ---------------------------------------------------------------------------------------
def airflow_instants(wall: dt.datetime, tz, every_hour: bool) -> list[dt.datetime]:
    """Where Airflow runs a wall-clock slot: a skipped time when the clock reaches it; a repeated time at
    its second occurrence, or at both for crons that fire every hour (stepped in real time)."""
    early = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
    late = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)
    if early == late:
        return [early]
    repeated = all(i.astimezone(tz).replace(tzinfo=None, fold=0) == wall for i in (early, late))
    if not repeated:
        return [max(early, late)]
    return sorted({early, late}) if every_hour else [max(early, late)]


def parent_slots(cron: str, tz, every_hour: bool, start: dt.datetime, end: dt.datetime) -> list[dt.datetime]:
    """Every slot instant of the parent whose wall-clock time lies in [start, end)."""
    it = croniter(cron, start - dt.timedelta(seconds=1))
    found = set()  # two wall-clock slots can run at one instant (02:00 skipped to 03:00, and 03:00)
    while (wall := it.get_next(dt.datetime)) < end:
        found.update(airflow_instants(wall, tz, every_hour))
    return sorted(found)


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
    ends = [_spelled(draw, value, names, lo) for _ in range(2)]
    if name == "day-of-week" and value == 0:
        ends = [draw(st.sampled_from([e, "7"])) for e in ends]  # 7 is Sunday too
        assume(not (ends[0] != "7" and ends[1] == "7"))  # Sunday to 7 is the whole week, not one day
    ends = [draw(st.sampled_from([e, f"0{e}"])) if e.isdigit() and len(e) == 1 else e for e in ends]
    term = "-".join(ends) + draw(st.sampled_from(["", "", "/2", "/5"]))
    field = draw(st.sampled_from([term, f"{term},{_spelled(draw, lo, names, lo)}", f"{hi},{term}"]))
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
