"""The interval check: has a parent finished the interval that covers a child's?

Pure logic, no Airflow import. For a parent cron ``P`` (read in the parent's timezone) and a child
interval ``C``:

* the *expected* parent slot is the latest ``P`` slot at or before ``C`` (inclusive: a child interval
  that lands exactly on a parent slot expects that slot, not the one before);
* the *granularity* comes from the parent's cron, see :func:`cron_granularity`;
* both the parent's completion (its watermark) and the expected slot are truncated to that
  granularity in the parent's timezone, and the parent satisfies the child when
  ``completion >= expected``.

So a weekly parent satisfies a daily child: the question is "have you finished the interval that
covers mine", never "did you run today".
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from airflow_leastaction.exceptions import InvalidCronError, InvalidTimezoneError

GRANULARITIES = ("minute", "hour", "day", "week", "month", "year")

_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

UTC = dt.timezone.utc


@dataclass(frozen=True)
class IntervalCheck:
    """The full answer of :func:`check_parent_interval`."""

    satisfied: bool
    granularity: str
    expected_slot: dt.datetime
    completed_up_to: dt.datetime | None
    reason: str


@lru_cache(maxsize=4096)
def normalize_cron(cron: str) -> str:
    """Return the five-field form of ``cron`` (macros expanded), or raise :class:`InvalidCronError`."""
    if not isinstance(cron, str) or not cron.strip():
        raise InvalidCronError(cron, "a cron expression must be a non-empty string")
    text = " ".join(cron.split())
    text = _MACROS.get(text.lower(), text)
    fields = text.split(" ")
    if len(fields) != 5:
        raise InvalidCronError(cron, f"expected 5 fields (minute hour day month weekday), got {len(fields)}")
    if not croniter.is_valid(text):
        raise InvalidCronError(cron, "croniter cannot parse it")
    return text


def resolve_timezone(name: str | dt.tzinfo) -> dt.tzinfo:
    """Return a tzinfo for an IANA name (or pass a tzinfo through), or raise :class:`InvalidTimezoneError`."""
    if isinstance(name, dt.tzinfo):
        return name
    return _zone(name)


@lru_cache(maxsize=512)
def _zone(name: str) -> dt.tzinfo:
    if name in ("UTC", "utc", "Etc/UTC"):
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError) as exc:
        raise InvalidTimezoneError(name) from exc


def _is_fixed(field: str) -> bool:
    # A field is fixed only when it names exactly one value: "5" or "MON", never "*/15", "1-5" or "1,3".
    return not any(ch in field for ch in "*,-/?LW#")


@lru_cache(maxsize=4096)
def cron_granularity(cron: str) -> str:
    """The coarsest calendar unit a parent's slots are distinct in.

    ``year`` if month and day-of-month are fixed; ``month`` if day-of-month is fixed and day-of-week is
    ``*``; ``week`` if day-of-week is fixed; ``day`` if the hour is fixed; ``hour`` if the minute is
    fixed; otherwise ``minute``. A field counts as fixed only when it names exactly one value, so
    ``*/15 * * * *`` is minute-grained (a child is never admitted on data up to 45 minutes stale).
    """
    minute, hour, dom, month, dow = normalize_cron(cron).split(" ")
    if _is_fixed(month) and _is_fixed(dom):
        return "year"
    if _is_fixed(dom) and dow == "*":
        return "month"
    if _is_fixed(dow):
        return "week"
    if _is_fixed(hour):
        return "day"
    if _is_fixed(minute):
        return "hour"
    return "minute"


def _aware(value: dt.datetime, what: str) -> dt.datetime:
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        raise ValueError(f"{what} must be timezone-aware, got naive {value.isoformat()}")
    return value


@lru_cache(maxsize=65536)
def truncate(value: dt.datetime, granularity: str, tz: dt.tzinfo) -> dt.datetime:
    """Truncate ``value`` to the start of its ``granularity`` unit in ``tz``; the result is in UTC."""
    local = _aware(value, "value").astimezone(tz)
    if granularity == "minute":
        local = local.replace(second=0, microsecond=0)
    elif granularity == "hour":
        local = local.replace(minute=0, second=0, microsecond=0)
    elif granularity == "day":
        local = _midnight(local.date(), tz)
    elif granularity == "week":
        local = _midnight(local.date() - dt.timedelta(days=local.weekday()), tz)
    elif granularity == "month":
        local = _midnight(local.date().replace(day=1), tz)
    elif granularity == "year":
        local = _midnight(local.date().replace(month=1, day=1), tz)
    else:
        raise ValueError(f"unknown granularity {granularity!r}; expected one of {', '.join(GRANULARITIES)}")
    return local.astimezone(UTC)


def _midnight(day: dt.date, tz: dt.tzinfo) -> dt.datetime:
    # Round-trip through UTC so a midnight skipped by a DST jump lands on the first real instant.
    naive = dt.datetime(day.year, day.month, day.day)
    return naive.replace(tzinfo=tz).astimezone(UTC).astimezone(tz)


def expected_slot(parent_cron: str, child_logical_date: dt.datetime, *, timezone: str | dt.tzinfo = "UTC"):
    """The latest parent slot at or before the child's interval, as an aware instant in the parent's zone.

    Cron is read on the parent's wall clock. Crons that fire every hour step over the repeated hour of a
    DST fall-back in real time (01:00 EDT and 01:00 EST are two slots), as Airflow's cron timetables do.
    """
    child = _aware(child_logical_date, "child_logical_date")
    # Waiting gates ask the same question every poll tick: answer it once.
    return _expected_slot(normalize_cron(parent_cron), resolve_timezone(timezone), child.astimezone(UTC))


@lru_cache(maxsize=65536)
def _expected_slot(cron: str, tz: dt.tzinfo, child_utc: dt.datetime) -> dt.datetime:
    child = child_utc.astimezone(tz).replace(microsecond=0)
    naive = child.replace(tzinfo=None)
    # Seed one second past the anchor so a child exactly on a slot resolves to that slot.
    scheduled = croniter(cron, naive + dt.timedelta(seconds=1)).get_prev(dt.datetime)
    if _covers_every_hour(cron):
        return (child.astimezone(UTC) - (naive - scheduled)).astimezone(tz)
    return scheduled.replace(tzinfo=tz).astimezone(UTC).astimezone(tz)


@lru_cache(maxsize=4096)
def _covers_every_hour(cron: str) -> bool:
    hours = croniter(cron).expanded[1]
    return hours == ["*"] or len(hours) == 24


def check_parent_interval(
    parent_cron: str,
    parent_completed: dt.datetime | None,
    child_logical_date: dt.datetime,
    *,
    timezone: str | dt.tzinfo = "UTC",
    parent_name: str = "parent",
) -> IntervalCheck:
    """Judge one parent for one child interval and say why, in words a person can act on."""
    tz = resolve_timezone(timezone)
    granularity = cron_granularity(parent_cron)
    expected = expected_slot(parent_cron, child_logical_date, timezone=tz)
    expected_label = f"{format_slot(expected, granularity, tz)} ({granularity})"
    if parent_completed is None:
        return IntervalCheck(
            False, granularity, expected, None,
            f"{parent_name}: expected slot {expected_label}, never completed",
        )
    completed_label = format_slot(_aware(parent_completed, "parent_completed"), granularity, tz)
    satisfied = truncate(parent_completed, granularity, tz) >= truncate(expected, granularity, tz)
    if satisfied:
        reason = f"{parent_name}: slot {expected_label} is covered, completed up to {completed_label}"
    else:
        reason = f"{parent_name}: expected slot {expected_label}, completed up to {completed_label}"
    return IntervalCheck(satisfied, granularity, expected, parent_completed, reason)


def parent_interval_satisfied(
    parent_cron: str,
    parent_completed: dt.datetime | None,
    child_logical_date: dt.datetime,
    *,
    timezone: str | dt.tzinfo = "UTC",
) -> bool:
    """True when a parent that completed up to ``parent_completed`` covers the child's interval."""
    return check_parent_interval(parent_cron, parent_completed, child_logical_date, timezone=timezone).satisfied


@lru_cache(maxsize=65536)
def slot_window(slot: dt.datetime, granularity: str, tz: dt.tzinfo) -> tuple[dt.datetime, dt.datetime]:
    """The [start, end) instants, in UTC, of the granularity unit that holds ``slot``."""
    start_local = truncate(slot, granularity, tz).astimezone(tz)
    if granularity == "minute":
        end = start_local + dt.timedelta(minutes=1)
    elif granularity == "hour":
        end = start_local + dt.timedelta(hours=1)
    elif granularity in ("day", "week"):
        days = 1 if granularity == "day" else 7
        end = _midnight(start_local.date() + dt.timedelta(days=days), tz)
    elif granularity == "month":
        nxt = start_local.date().replace(day=28) + dt.timedelta(days=4)
        end = _midnight(nxt.replace(day=1), tz)
    else:
        end = _midnight(start_local.date().replace(year=start_local.year + 1, month=1, day=1), tz)
    return start_local.astimezone(UTC), end.astimezone(UTC)


@lru_cache(maxsize=65536)
def format_slot(value: dt.datetime, granularity: str, tz: dt.tzinfo) -> str:
    """A slot as a person reads it at the parent's granularity, in the parent's timezone."""
    local = value.astimezone(tz)
    if granularity == "year":
        text = f"{local:%Y}"
    elif granularity == "month":
        text = f"{local:%Y-%m}"
    elif granularity == "week":
        monday = local.date() - dt.timedelta(days=local.weekday())
        text = f"week of {monday:%Y-%m-%d}"
    elif granularity == "day":
        text = f"{local:%Y-%m-%d}"
    else:
        text = f"{local:%Y-%m-%d %H:%M}"
    zone = getattr(tz, "key", None)
    return text if tz is UTC or zone in (None, "UTC") else f"{text} {zone}"


def slots_in(
    parent_cron: str, start: dt.datetime, end: dt.datetime, *, timezone: str | dt.tzinfo = "UTC"
) -> tuple[dt.datetime, ...]:
    """Every parent slot in ``[start, end)``, oldest first, as aware UTC instants.

    The slots are the ones :func:`expected_slot` names (the same reading of the cron in the parent's
    timezone): across a clock change they are found by walking back from each slot to the latest one
    before it.
    """
    start, end = _plain_utc(_aware(start, "start")), _plain_utc(_aware(end, "end"))
    return _slots_in(normalize_cron(parent_cron), resolve_timezone(timezone), start, end)


@lru_cache(maxsize=4096)
def _slots_in(cron: str, tz: dt.tzinfo, start: dt.datetime, end: dt.datetime) -> tuple[dt.datetime, ...]:
    # Day by day: a day whose UTC offset holds is read forward with one croniter (fast); a day with a
    # clock change walks back slot by slot with expected_slot, so both agree on DST by construction.
    found: list[dt.datetime] = []
    day_start = start
    while day_start < end:
        day_end = min(day_start + dt.timedelta(days=1), end)
        if day_start.astimezone(tz).utcoffset() == day_end.astimezone(tz).utcoffset():
            found.extend(_slots_forward(cron, tz, day_start, day_end))
        else:
            found.extend(_slots_backward(cron, tz, day_start, day_end))
        day_start = day_end
    return tuple(found)


def _slots_forward(cron: str, tz: dt.tzinfo, start: dt.datetime, end: dt.datetime) -> list[dt.datetime]:
    # Only for a span without a clock change: wall-clock times and instants then map one to one.
    slots = croniter(cron, start.astimezone(tz).replace(tzinfo=None) - dt.timedelta(seconds=1))
    found = []
    while True:
        slot = slots.get_next(dt.datetime).replace(tzinfo=tz).astimezone(UTC)
        if slot >= end:
            return found
        if slot >= start:
            found.append(slot)


def _slots_backward(cron: str, tz: dt.tzinfo, start: dt.datetime, end: dt.datetime) -> list[dt.datetime]:
    found = []
    # A microsecond before a bound is the latest instant strictly before it: slots sit on whole minutes.
    cursor = end - dt.timedelta(microseconds=1)
    while cursor >= start:
        slot = expected_slot(cron, cursor, timezone=tz).astimezone(UTC)
        if slot < start:
            break
        found.append(slot)
        cursor = slot - dt.timedelta(microseconds=1)
    return found[::-1]


def _plain_utc(value: dt.datetime) -> dt.datetime:
    # Subclasses (pendulum's, from Airflow contexts) may drop the zone in arithmetic: use a plain datetime.
    utc = value.astimezone(UTC)
    return dt.datetime(utc.year, utc.month, utc.day, utc.hour, utc.minute, utc.second, utc.microsecond, tzinfo=UTC)
