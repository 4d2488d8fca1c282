"""Hypothesis strategies for cron schedules and instants, and where Airflow runs a cron's slots.

Random crons come from a grammar that knows which values each field names, so an oracle can decide which
fields are fixed without reading cron syntax the way the implementation does; instants cluster around
DST changes and month and year ends.
"""

from __future__ import annotations

import datetime as dt
from functools import cache
from zoneinfo import ZoneInfo

from croniter import croniter
from hypothesis import assume
from hypothesis import strategies as st

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
def spelled(draw, value: int, names: list[str] | None, offset: int) -> str:
    if names is None or not draw(st.booleans()):
        return str(value)
    name = names[value - offset]
    return draw(st.sampled_from([name, name.lower(), name.title()]))


@st.composite
def _term(draw, lo: int, hi: int, names: list[str] | None = None):
    kind = draw(st.sampled_from(["value", "value", "range", "range_step", "star_step", "start_step"]))
    if kind == "value":
        value = draw(st.integers(lo, hi))
        return spelled(draw, value, names, lo), {value}
    step = draw(st.integers(1, max(1, (hi - lo) // 2 + 1)))
    if kind == "star_step":
        return f"*/{step}", set(range(lo, hi + 1, step))
    a = draw(st.integers(lo, hi - 1))
    if kind == "start_step":
        return f"{spelled(draw, a, names, lo)}/{step}", set(range(a, hi + 1, step))
    b = draw(st.integers(a + 1, hi))  # a < b: a range that starts and ends on one value is rejected
    text = f"{spelled(draw, a, names, lo)}-{spelled(draw, b, names, lo)}"
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
        name = spelled(draw, day, WEEKDAYS, 0)
        if kind == "last":
            return f"L{day}", {day}
        nths = draw(st.lists(st.integers(1, 4), min_size=1, max_size=2, unique=True))
        return ",".join(f"{name}#{n}" for n in nths), {day}
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
def anchors(zone: str) -> tuple[dt.datetime, ...]:
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
    anchor = draw(st.sampled_from(anchors(zone)))
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
