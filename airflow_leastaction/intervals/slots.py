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
import re
from dataclasses import dataclass
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, croniter

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

UTC = dt.UTC
_HASHED = re.compile(r"^[hr](\(\d+-\d+\))?(/\d+)?$", re.IGNORECASE)
_RANGE = re.compile(r"^(\w+)-(\w+)(/\d+)?$")
#: Each field's name in errors, and the unit croniter repeats it in when it reads the field as a whole.
_FIELDS = (("minute", "minute"), ("hour", "hour"), ("day-of-month", "day"), ("month", "month"), ("day-of-week", "day"))
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_NAMES = ({}, {}, {}, {m: i for i, m in enumerate(_MONTHS, start=1)}, {d: i for i, d in enumerate(_WEEKDAYS)})
#: Larger than any DST change: a slot's wall-clock time and its instant disagree by at most this much
#: around a change, so the search for the latest slot looks this far on either side of the child.
_SHIFT = dt.timedelta(hours=3)
_PROBE = dt.datetime(2026, 1, 1)  # noqa: DTZ001 - croniter expands fields on a wall-clock (naive) probe


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
    if any(_HASHED.match(field) for field in fields):
        # croniter draws H/R fields from a hash id or at random: the slots would differ per reader.
        raise InvalidCronError(cron, "hashed (H) and random (R) fields have no fixed slots; name the values")
    if not croniter.is_valid(text):
        raise InvalidCronError(cron, "croniter cannot parse it")
    if not croniter.is_valid(text, strict=True):
        raise InvalidCronError(cron, "it names a day that never occurs in its months")
    _reject_equal_ranges(cron, fields)
    try:
        # Some combinations parse but croniter finds no slot of them, e.g. "0 0 L * 0#1".
        croniter(text, _PROBE).get_next(dt.datetime)
        croniter(text, _PROBE).get_prev(dt.datetime)
    except CroniterBadDateError as exc:
        raise InvalidCronError(
            cron, "croniter finds no slot of it; combine day-of-month and day-of-week forms differently"
        ) from exc
    return text


def _reject_equal_ranges(cron: str, fields: list[str]) -> None:
    """croniter reads a range that starts and ends on one value (``3-3``, ``JUL-JUL``) as the whole field:
    ``0 3-3 * * *`` would run every hour. Such a range names one value, so it must be written as one."""
    for index, field in enumerate(fields):
        for term in field.split(","):
            match = _RANGE.match(term)
            if not match:
                continue
            first, last = (_field_value(index, end) for end in match.group(1, 2))
            if first is None or last is None:
                continue
            if index == 4 and (first, last) != (0, 7):  # 7 is Sunday too; 0-7 runs through the whole week
                first, last = first % 7, last % 7
            if first == last:
                name, unit = _FIELDS[index]
                step = match.group(3)
                whole = f"* (every {unit})" if step is None else f"*{step} (a step through every {unit})"
                raise InvalidCronError(
                    cron,
                    f"the {name} field's range {term} starts and ends on one value, which croniter reads as "
                    f"{whole}; write the single value {match.group(1)}",
                )


def _field_value(index: int, text: str) -> int | None:
    return int(text) if text.isdigit() else _NAMES[index].get(text.lower())


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


def _one_value(values: list) -> bool:
    return len(values) == 1 and values[0] != "*"


@lru_cache(maxsize=4096)
def cron_granularity(cron: str) -> str:
    """The coarsest calendar unit a parent's slots are distinct in.

    Read from the fields as croniter expands them, so a field is *fixed* when it names exactly one
    value, whatever its spelling (``3``, ``WED``, ``wed``, ``*/31``, ``L``, ``15W``, ``FRI#3``), and
    ``*`` and ``?`` name every value. From the finest unit up: ``minute`` unless the minute is fixed;
    ``hour`` unless the hour is fixed; ``day`` unless exactly one of day-of-month and day-of-week is
    restricted; ``week`` when day-of-week is fixed and day-of-month is ``*``; ``year`` when
    day-of-month and month are fixed and day-of-week is ``*``; ``month`` when day-of-month is fixed
    and day-of-week is ``*``. So ``*/15 * * * *`` is minute-grained (a child is never admitted on data
    up to 45 minutes stale), and ``0 0 1 * MON``, which cron reads as "the 1st or any Monday", is
    day-grained: two of its slots can fall in one week.
    """
    minute, hour, dom, month, dow = croniter(normalize_cron(cron)).expanded
    if not _one_value(minute):
        return "minute"
    if not _one_value(hour):
        return "hour"
    if dow == ["*"] and _one_value(dom):
        return "year" if _one_value(month) else "month"
    if dom == ["*"] and _one_value(dow):
        return "week"
    return "day"


#: The instants a slot may be (``[FIRST_SLOT, END_OF_SLOTS)``): judging and planning look up to a few
#: years either side of a slot (the next yearly slot, a child's slots a year on), which must stay inside
#: the calendar Python can hold.
FIRST_SLOT = dt.datetime(1000, 1, 1, tzinfo=dt.UTC)
END_OF_SLOTS = dt.datetime(9000, 1, 1, tzinfo=dt.UTC)


def slot_in_range(slot: dt.datetime) -> dt.datetime:
    """``slot`` (aware) in UTC; ``ValueError`` saying the range when it is outside the slots' range."""
    try:
        utc = _aware(slot, "slot").astimezone(UTC)
    except OverflowError:  # year 1 or 9999 pushed past the calendar by its offset
        utc = None
    if utc is None or not FIRST_SLOT <= utc < END_OF_SLOTS:
        raise ValueError(
            f"{slot.isoformat()} is out of range: a slot is from {FIRST_SLOT.date()} to "
            f"{(END_OF_SLOTS - dt.timedelta(days=1)).date()} (UTC)"
        )
    return utc


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
    naive = dt.datetime(day.year, day.month, day.day)  # noqa: DTZ001 - a wall-clock time, zoned just below
    return naive.replace(tzinfo=tz).astimezone(UTC).astimezone(tz)


def expected_slot(parent_cron: str, child_logical_date: dt.datetime, *, timezone: str | dt.tzinfo = "UTC"):
    """The latest parent slot at or before the child's interval, as an instant in UTC.

    Cron is read on the parent's wall clock and each slot placed at the instant Airflow's cron
    timetables run it (see :func:`_slot_instants`); "at or before" compares instants, never wall-clock
    times. UTC, because an aware time in the repeated hour of a DST change compares by wall clock
    against others in its zone.
    """
    child = _aware(child_logical_date, "child_logical_date")
    # Waiting gates ask the same question every poll tick: answer it once.
    return _expected_slot(normalize_cron(parent_cron), resolve_timezone(timezone), child.astimezone(UTC))


@lru_cache(maxsize=65536)
def _expected_slot(cron: str, tz: dt.tzinfo, child: dt.datetime) -> dt.datetime:
    every_hour = _covers_every_hour(cron)
    naive = child.astimezone(tz).replace(tzinfo=None, fold=0)
    if _steady(tz, child):
        # Far from any offset change wall-clock order is instant order: the previous wall-clock slot is it.
        scheduled = croniter(cron, naive.replace(microsecond=0) + dt.timedelta(seconds=1)).get_prev(dt.datetime)
        latest = _slot_instants(scheduled, tz, every_hour)[-1]
        if latest <= child and _steady(tz, latest):
            return latest
    return _latest_slot_near_a_shift(cron, tz, child, naive, every_hour)


def _steady(tz: dt.tzinfo, instant: dt.datetime) -> bool:
    """No UTC-offset change within :data:`_SHIFT` of ``instant`` in ``tz``."""
    offset = instant.astimezone(tz).utcoffset()
    return all((instant + d).astimezone(tz).utcoffset() == offset for d in (-_SHIFT, _SHIFT))


def _latest_slot_near_a_shift(cron: str, tz, child: dt.datetime, naive: dt.datetime, every_hour: bool):
    """Compare instants, never wall-clock times: 01:30 EDT comes before 01:10 EST on a fall-back day,
    and 02:30 on a spring-forward day (which happens at 03:30 EDT) after 03:10 EDT."""
    slots = croniter(cron, naive.replace(microsecond=0) + _SHIFT + dt.timedelta(seconds=1))
    best = best_wall = None
    while True:
        wall = slots.get_prev(dt.datetime)
        if best_wall is not None and wall < best_wall - _SHIFT:
            return best  # an earlier wall-clock slot cannot be a later instant than this one
        for instant in _slot_instants(wall, tz, every_hour):
            if instant <= child and (best is None or instant > best):
                best, best_wall = instant, wall


def _slot_instants(wall: dt.datetime, tz: dt.tzinfo, every_hour: bool) -> tuple[dt.datetime, ...]:
    """The instants (UTC, ascending) a wall-clock slot happens at, as Airflow's cron timetables run it.

    A wall-clock time skipped by a DST jump happens when the clock reaches it (02:30 at 03:30 EDT). A
    repeated time happens once, at its second occurrence (01:30 EST, Airflow's ``make_aware``), except
    for crons that fire every hour: Airflow steps those in real time, so both occurrences are slots.
    """
    first = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
    second = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)
    if first == second or second.astimezone(tz).replace(tzinfo=None, fold=0) != wall:
        return (first,)  # an ordinary time, or a skipped one (fold=1 would move it back, not forward)
    return (first, second) if every_hour else (second,)


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
    child = _aware(child_logical_date, "child_logical_date").astimezone(UTC)
    completed = None if parent_completed is None else _aware(parent_completed, "parent_completed").astimezone(UTC)
    satisfied, granularity, expected, said = _checked(
        normalize_cron(parent_cron), resolve_timezone(timezone), completed, child
    )
    return IntervalCheck(satisfied, granularity, expected, parent_completed, f"{parent_name}: {said}")


@lru_cache(maxsize=65536)
def _checked(cron: str, tz: dt.tzinfo, completed: dt.datetime | None, child: dt.datetime) -> tuple:
    """What :func:`check_parent_interval` says of any parent on this schedule (every parent of one schedule,
    watermark and child interval gets the same answer; thousands of gates ask it on one tick). Instants in
    UTC: two aware times in the repeated hour of a DST change are equal and hash alike in their own zone."""
    granularity = cron_granularity(cron)
    expected = expected_slot(cron, child, timezone=tz)
    expected_label = f"{format_slot(expected, granularity, tz)} ({granularity})"
    if completed is None:
        return False, granularity, expected, f"expected slot {expected_label}, never completed"
    completed_label = format_slot(completed, granularity, tz)
    satisfied = truncate(completed, granularity, tz) >= truncate(expected, granularity, tz)
    if satisfied:
        return True, granularity, expected, f"slot {expected_label} is covered, completed up to {completed_label}"
    return False, granularity, expected, f"expected slot {expected_label}, completed up to {completed_label}"


def parent_interval_satisfied(
    parent_cron: str,
    parent_completed: dt.datetime | None,
    child_logical_date: dt.datetime,
    *,
    timezone: str | dt.tzinfo = "UTC",
) -> bool:
    """True when a parent that completed up to ``parent_completed`` covers the child's interval."""
    return check_parent_interval(parent_cron, parent_completed, child_logical_date, timezone=timezone).satisfied


def slot_window(slot: dt.datetime, granularity: str, tz: dt.tzinfo) -> tuple[dt.datetime, dt.datetime]:
    """The [start, end) instants, in UTC, of the granularity unit that holds ``slot``."""
    # Kept per instant, unit and zone: every parent on one schedule has the same window for one child
    # interval. Keyed in UTC: two instants of a repeated DST hour are equal in their own zone.
    return _slot_window(slot.astimezone(UTC), granularity, tz)


@lru_cache(maxsize=65536)
def _slot_window(slot: dt.datetime, granularity: str, tz: dt.tzinfo) -> tuple[dt.datetime, dt.datetime]:
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
